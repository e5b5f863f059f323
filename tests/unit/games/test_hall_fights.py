"""The Hall's Exoptosis fights (GH-18, GH-19): engaging, challenging, answering, and the
matches opened as child games; each refusal names its rule and changes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from dealer.games.hall import Hall
from dealer.games.hall.state import HallSettings
from dealer.history import ChildActed
from dealer.records import perform
from dealer.testing import RulesShell

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
DAY = timedelta(hours=24)
GAME = "hall1"


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)

FOUR = {"card:7C": 1, "card:8C": 1, "card:9C": 1, "card:10C": 1}


def hall(*names: str, cards: dict[str, dict[str, int]] | None = None) -> RulesShell:
    shell = RulesShell(Hall(), game_id=GAME, load_players_only=True)
    for name, held in (cards or {}).items():
        for item, amount in held.items():
            shell.grant(name, item, amount)
    shell.open(list(names), HallSettings(), T0)
    return shell


DEFAULT_TIMINGS = {"setup_window": "24h", "betting_window": "1h", "turn_length": "24h"}
"""A match's timings when its Hall sets none of its own: the rules' (GH-10, GH-11, GH-17)."""


def opened(shell: RulesShell) -> list[dict]:
    return [data for kind, data in shell.events if kind == "child.opened"]


def test_battle_needs_four_cards_and_is_once_per_phase() -> None:
    shell = hall("alice", "bob", "carol", cards={"alice": FOUR, "bob": FOUR, "carol": {"card:KS": 3}})
    refused = shell.refuse("carol", "battle", at(1))
    assert refused.rule == "GH-18" and "at least 4 cards and you hold 3" in refused.what
    shell.accept("alice", "battle", at(1))
    refused = shell.refuse("alice", "battle", at(2))
    assert refused.rule == "GH-18" and "once per phase" in refused.what
    shell.accept("bob", "battle", at(2))
    assert shell.state.battlers == ["alice", "bob"] and shell.state.member("alice").acted
    assert not opened(shell)
    shell.fire_due(T0 + DAY)  # phase 2 begins: the battle of phase 1 opens
    (child,) = opened(shell)
    assert (child["kind"], child["game_id"], child["players"], child["settings"]) == (
        "exoptosis", "hall1-battle-1", ["alice", "bob"], {"fight": "battle", **DEFAULT_TIMINGS})
    assert shell.state.battlers == []
    assert "An Exoptosis battle opens: match hall1-battle-1" in shell.posts("fight_opened")[0].body
    shell.accept("alice", "battle", T0 + DAY + timedelta(hours=1))  # a new phase: again


def test_one_engaged_is_no_battle() -> None:
    shell = hall("alice", "bob", cards={"alice": FOUR})
    shell.accept("alice", "battle", at(1))
    shell.fire_due(T0 + DAY)
    assert not opened(shell)
    assert "No battle this phase" in shell.posts("no_battle")[0].body


def test_a_duel_opens_when_all_accept() -> None:
    shell = hall("alice", "bob", "carol")
    for line, what in (("duel zoe", "zoe is not in the Hall"), ("duel alice", "yourself"),
                       ("duel bob bob", "bob is named twice")):
        refused = shell.refuse("alice", line, at(1))
        assert refused.rule == "GH-19" and what in refused.what
    shell.accept("alice", "duel bob and carol", at(1))
    refused = shell.refuse("alice", "accept duel 1", at(2))  # not challenged
    assert refused.rule == "GH-19" and "you were not challenged to duel 1" in refused.what
    assert shell.refuse("bob", "accept duel 2", at(2)).rule == "GH-19"
    shell.accept("bob", "accept duel 1", at(2))
    assert shell.refuse("bob", "accept duel 1", at(3)).what == "you accepted duel 1 already"
    assert not opened(shell)
    shell.accept("carol", "accept duel #1", at(3))
    (child,) = opened(shell)
    assert (child["game_id"], child["players"], child["settings"]) == (
        "hall1-duel-1", ["alice", "bob", "carol"], {"fight": "duel", **DEFAULT_TIMINGS})
    assert shell.state.challenges == []


def test_one_decline_cancels_and_unanswered_challenges_lapse() -> None:
    shell = hall("alice", "bob", "carol")
    shell.accept("alice", "duel bob carol", at(1))
    shell.accept("bob", "accept duel 1", at(2))
    shell.accept("carol", "decline duel 1", at(3))
    assert shell.state.challenges == [] and not opened(shell)
    assert "carol declined" in shell.posts("duel_declined")[0].body
    shell.accept("bob", "duel alice", at(4))
    shell.fire_due(T0 + DAY)
    assert shell.state.challenges == [] and not opened(shell)
    assert "- duel 2: bob challenged alice" in shell.posts("duels_lapsed")[0].body


def test_help_offers_fights_as_they_stand(help_is_valid_now) -> None:  # type: ignore[no-untyped-def]
    shell = hall("alice", "bob", cards={"alice": FOUR})
    words = [line.split(" — ")[0] for line in help_is_valid_now(shell, "alice", at(1), tried=False)]
    assert "battle" in words and "duel bob" in words
    shell.accept("bob", "duel alice", at(1))
    lines = help_is_valid_now(shell, "alice", at(2), tried=False)
    assert "accept duel 1 — bob's duel with bob, alice (GH-19)" in lines
    assert "decline duel 1 — refuse it: the duel is cancelled (GH-19)" in lines
    assert "(battle needs at least 4 cards outside any match)" in help_is_valid_now(shell, "bob", at(2), tried=False)


def test_a_command_in_a_match_is_a_hall_action() -> None:
    shell = hall("alice", "bob")
    shell.fire_due(T0 + DAY)  # phase 2: alice and bob are inactive (no action in phase 1)
    assert shell.state.member("alice").inactive and not shell.state.member("alice").acted
    step = ChildActed(game="hall1-duel-1", player="alice")
    ctx = shell.context(T0 + DAY + timedelta(hours=1), "alice")
    shell.commit(ctx, perform(shell.rules, ctx, shell._fresh_state(), step), step)
    assert shell.state.member("alice").acted and not shell.state.member("bob").acted


def test_a_cycles_matches_take_its_timings() -> None:
    """A Hall's settings for its matches (match_setup_window, match_betting_window,
    match_turn_length) are each match's own: a fast cycle has fast matches."""
    shell = RulesShell(Hall(), game_id=GAME, load_players_only=True)
    shell.open(["alice", "bob"], HallSettings(match_setup_window=timedelta(minutes=10),
                                              match_betting_window=timedelta(minutes=2),
                                              match_turn_length=timedelta(seconds=90)), T0)
    shell.accept("alice", "duel bob", at(1))
    shell.accept("bob", "accept duel 1", at(2))
    (child,) = opened(shell)
    assert child["settings"] == {"fight": "duel", "setup_window": "10m", "betting_window": "2m",
                                 "turn_length": "90s"}
