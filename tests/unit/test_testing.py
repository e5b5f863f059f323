"""The generic in-memory shell of dealer.testing, driven with real rulesets."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from dealer.fairness import verify_draw
from dealer.games.base import Rejected
from dealer.games.hall import Hall
from dealer.ledger import CHIPS, MINT, VERTEBRAE, Scope
from dealer.testing import RulesShell, seed_chain

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
SEED = "5e" * 32
CYCLE = Scope("hall1")  # the Hall keeps its accounts in its own scope (GH-1)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def hall(**options) -> RulesShell:
    """A Hall of alice and bob; alice holds 60 vertebrae and a handy pack."""
    shell = RulesShell(Hall(), seed=SEED, game_id="hall1", **options)
    shell.grant("alice", VERTEBRAE, 60)
    shell.grant("alice", "pack:handy", 1)
    shell.open(["alice", "bob"], {"victory_chips": 5}, start=T0)
    return shell


def test_opening_commits_the_first_step():
    shell = hall()
    assert shell.summary().status == "running" and shell.summary().players == ["alice", "bob"]
    assert shell.deadlines == {"phase-2": at(24)}
    (opening,) = shell.posts()
    assert opening.at == T0 and opening.to is None and shell.rng.commitment in opening.body
    assert shell.channel == "#game-actions"  # the ruleset's default channel


def test_grants_come_from_the_mint_and_totals_stay_zero():
    shell = hall()
    assert shell.has("alice", VERTEBRAE) == 60 and shell.has("bob", VERTEBRAE) == 0
    assert shell.balances[(MINT, VERTEBRAE)] == -60
    shell.accept("alice", "buy chip", at(1))  # 60 - 25 = 35
    assert (shell.has("alice", VERTEBRAE), shell.has("alice"), shell.balances[(CYCLE.house, VERTEBRAE)]) \
        == (35, 1, 25)
    assert set(shell.totals().values()) == {0}


def test_an_accepted_step_returns_and_renders_its_posts():
    shell = hall()
    (reply,) = shell.accept("alice", "buy chip", at(1))
    assert (reply.to, reply.kind, reply.at) == ("alice", "confirmation", at(1))
    assert reply.body.startswith("The Croupier sold you 1 chip for 25 vertebrae")
    assert shell.replies("alice") == [reply] and shell.replies("alice", "other") == []
    assert shell.replies("bob") == [] and len(shell.posts()) == 1


def test_without_rendering_bodies_are_empty():
    shell = hall(render=False)
    shell.accept("alice", "buy chip", at(1))
    assert [sent.body for sent in shell.sent] == ["", ""]


def test_a_refused_step_changes_nothing_and_send_returns_the_rejection():
    shell = hall()
    shell.accept("alice", "open handy pack", at(1))  # draws from the fair source
    before = (shell.state, dict(shell.balances), shell.rng.counter, len(shell.sent))
    rejected = shell.refuse("alice", "open handy pack", at(2))
    assert rejected.what == "you hold no Handy Pack" and rejected.rule == "GH-4"
    assert (shell.state, shell.balances, shell.rng.counter, len(shell.sent)) == before
    assert shell.send("alice", "open deck pack", at(2)).rule == "GH-4"
    assert shell.send("alice", "inventory", at(2)) is None
    with pytest.raises(Rejected):
        shell.step("alice", "gift alice", at(2))
    assert isinstance(shell.send("alice", "no such command", at(2)), Rejected)  # parse too


def test_accept_and_refuse_fail_loudly_when_wrong():
    shell = hall()
    with pytest.raises(AssertionError, match="rejected: you hold no Deck Pack"):
        shell.accept("alice", "open deck pack", at(1))
    with pytest.raises(AssertionError, match="was accepted"):
        shell.refuse("alice", "inventory", at(1))


def test_due_deadlines_fire_in_time_order_before_a_later_message():
    shell = hall()
    shell.accept("alice", "buy chip", at(25))  # sent after phase 2 began
    assert [(sent.kind, sent.at) for sent in shell.sent[1:]] == [
        ("phase_summary", at(24)), ("confirmation", at(25))]
    assert shell.deadlines == {"phase-3": at(48)}
    refusal = shell.refuse("alice", "buy chip", at(23))  # sent in phase 1: too late
    assert "too late" in refusal.what and refusal.rule == "GH-6"


def test_without_fire_first_nothing_fires_before_the_message():
    shell = hall()
    shell.send("alice", "buy chip", at(25), fire_first=False)
    assert [sent.kind for sent in shell.sent[1:]] == ["confirmation"]
    assert shell.deadlines == {"phase-2": at(24)} and shell.has("alice") == 1


def test_the_fair_source_carries_on_across_steps_and_rotates_along_the_seed_chain():
    shell = hall()
    shell.grant("alice", "pack:handy", 1)
    shell.accept("alice", "open handy pack", at(1))
    first = shell.rng.counter
    shell.accept("alice", "open handy pack", at(2))
    assert 0 < first < shell.rng.counter  # the second pack's draws went on from the first's
    counters = [draw.counter for draw in shell.rng.draws]
    assert counters[0] == 0 and counters == sorted(set(counters))
    assert all(verify_draw(SEED, draw) for draw in shell.rng.draws)
    shell.fire_due(at(24))  # a new Hall phase is a new epoch
    assert shell.rng.epoch == 1 and shell.rng.server_seed == seed_chain(SEED)()


def test_events_are_kept_as_json_and_the_state_is_read_back_from_json():
    shell = hall()
    step_state = None

    def handle(ctx, state, actor, command):
        nonlocal step_state
        step_state = Hall.handle(shell.rules, ctx, state, actor, command)
        return step_state

    shell.rules.handle = handle  # type: ignore[method-assign]
    shell.accept("alice", "buy chip", at(1))
    assert shell.state == step_state and shell.state is not step_state
    assert shell.events and json.loads(json.dumps(shell.events))


def test_every_wallet_is_loaded_unless_only_the_players_are():
    everyone = hall()
    everyone.grant("zoe", CHIPS, 3)
    assert everyone.context(at(1)).ledger.balance(CYCLE.player("zoe")) == 3
    shell = hall(load_players_only=True)
    shell.grant("zoe", CHIPS, 3)
    shell.grant("yann", CHIPS, 4)
    accounts = {account for account, _ in shell.context(at(1), actor="zoe").ledger.balances}
    assert accounts == {CYCLE.player("alice"), CYCLE.player("zoe")}  # bob, house, void hold nothing yet
    accounts = {account for account, _ in shell.context(at(1)).ledger.balances}
    assert accounts == {CYCLE.player("alice")}
    shell.accept("alice", "buy chip", at(1))  # the books still get every transfer
    loaded = shell.context(at(2), members=["yann"]).ledger.balances
    assert set(loaded) == {(CYCLE.player("yann"), CHIPS), (CYCLE.house, VERTEBRAE)}
    assert shell.balances[(MINT, CHIPS)] == -1 - 3 - 4
    assert (CYCLE.void, CHIPS) not in shell.balances and (CYCLE.pool("hall1"), CHIPS) not in shell.balances
