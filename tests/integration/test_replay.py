"""``dealer replay``: a whole game of each kind, played through the daemon on a real store,
is rebuilt from its history exactly; a tampered store is reported at its first difference."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import delete, select, update

from dealer.shell.overrides import apply_overrides, parse_overrides
from dealer.history import STEP_INPUTS
from dealer.replay import replay_game
from dealer.store.models import Event, Game
from dealer.shell.admin import add_player, create_game
from scripts import HOUR, MINUTE, SCRIPTS


T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)

TAMPERED = {"roulette": "phase", "races": "pool", "hall": "next_offer"}
"""A number in each game's state that the tests change behind the rules' back."""


def _replay(harness: Any, game_id: str):  # type: ignore[no-untyped-def]
    return harness.admin(lambda session: replay_game(session, game_id))


@pytest.mark.parametrize("kind", sorted(SCRIPTS))
def test_a_whole_game_replays_to_the_stored_state(harness, kind: str) -> None:  # type: ignore[no-untyped-def]
    script = SCRIPTS[kind]()
    script.on_daemon(harness)
    report = _replay(harness, script.game_id)
    assert report.ok, report.difference
    inputs = harness.admin(lambda s: s.scalars(select(Event.type).where(
        Event.type.in_([step.type for step in STEP_INPUTS]))).all())
    assert report.steps == len(inputs) > 10 and inputs[0] == "game.create"

    # Someone edits the stored state: the replay names the first value that differs.
    key = TAMPERED[kind]

    def tamper(session: Any) -> Any:
        game = session.get(Game, script.game_id)
        state = dict(game.state)
        before, state[key] = state[key], state[key] + 1
        game.state = state
        return before

    before = harness.admin(tamper)
    report = _replay(harness, script.game_id)
    assert not report.ok
    assert report.difference == (
        f"after {report.steps} steps: state.{key}: the store has {before + 1}, the replay {before}"
    )


def test_a_tampered_step_is_found_at_its_step(harness) -> None:  # type: ignore[no-untyped-def]
    script = SCRIPTS["roulette"]()
    script.on_daemon(harness)

    def first_bet(session: Any) -> Event:
        return session.scalars(select(Event).where(Event.type == "command").order_by(Event.seq)
                               .where(Event.data["line"].as_string() == "bet gold 30 black 10")).first()

    bet = harness.admin(lambda s: (first_bet(s).seq, dict(first_bet(s).data)))
    # The stored command line no longer matches what the rules recorded for it.
    harness.admin(lambda s: s.execute(
        update(Event).where(Event.game_id == "r1", Event.seq == bet[0])
        .values(data={**bet[1], "line": "bet gold 40"})))
    report = _replay(harness, "r1")
    assert not report.ok and f"event {bet[0]}: command" in report.difference
    assert "submission.accepted.canonical" in report.difference

    # An event of a type no game declares, or of the wrong shape, is reported as such.
    harness.admin(lambda s: s.execute(
        update(Event).where(Event.game_id == "r1", Event.seq == bet[0])
        .values(type="command", data={"actor": "bob"})))
    assert "is not a valid command: line: Field required" in _replay(harness, "r1").difference


def test_admin_overrides_are_replayed_with_the_deadlines_they_moved(harness) -> None:  # type: ignore[no-untyped-def]
    script = SCRIPTS["roulette"]()
    script.end = script.start + timedelta(hours=2)
    script.messages = [m for m in script.messages if m.at <= script.end]
    script.on_daemon(harness)
    # The preparation deadline moves 12 h later, outside any step: the replay moves it too,
    # and finds it fired at its new time.
    harness.admin(lambda s: apply_overrides(s, parse_overrides("r1:preparation=+12h"),
                                            script.start + timedelta(hours=3)))
    harness.run(script.start + timedelta(hours=37))
    report = _replay(harness, "r1")
    assert report.ok, report.difference
    assert report.steps == 6  # creation, 2 messages, 2 reminders, the moved preparation

    harness.admin(lambda s: s.execute(delete(Event).where(Event.type == "admin.override")))
    assert _replay(harness, "r1").difference == (
        "step 6 at 2026-12-03T00:00:00Z (event 14: deadline.fired deadline=\"preparation\"): "
        "deadline 'preparation' fired, but the history has it due at 2026-12-02T12:00:00Z"
    )


def test_the_replay_command(cli) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "alice", "--chips", "100")
    cli("player", "add", "bob", "--chips", "100")
    cli("game", "new", "roulette", "--id", "r9", "--players", "alice,bob",
        "--start-in-past", "--start", "2026-12-01T12:00:00Z")
    cli("submit", "--from", "alice", "--at", "2026-12-01T13:00:00Z", "prepare gold gold 30 silver 10")
    cli("run", "--once", "--now", "2026-12-02T13:00:00Z")
    result = cli("replay", "r9")
    assert "steps replayed; the state, deadlines and fair source match the store" in result.output
    assert cli("replay", "nothing", ok=False).output.strip() == "Error: there is no game 'nothing'"


def test_whole_messages_edits_reactions_and_child_games_replay(harness) -> None:  # type: ignore[no-untyped-def]
    # The test rulesets of board.py: a motion is a whole message, edits and reactions
    # reach it by its id, and `duel NAME` opens a child game whose end the board hears.
    def setup(session: Any) -> None:
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
    harness.admin(setup)
    harness.send("alice", "Let the dice be fair", T0 + MINUTE, channel="#motions", id="mo1")
    harness.send("alice", "Let the dice be loaded", T0 + 2 * MINUTE, channel="#motions",
                 kind="edit", target="mo1", id="e1")
    harness.send("bob", "", T0 + 3 * MINUTE, channel="#motions", kind="reaction", target="mo1",
                 emoji="👍", id="r1")
    harness.send("alice", "duel bob", T0 + 4 * MINUTE, channel="#board", id="d1")
    harness.run(T0 + 2 * HOUR)
    types = harness.admin(lambda s: [e.type for e in s.scalars(
        select(Event).where(Event.game_id == "b1").order_by(Event.seq))])
    assert {"message", "edit", "reaction", "command", "child.opened", "child.finished"} <= set(types)
    for game_id in ("b1", "b1-duel-1"):
        report = _replay(harness, game_id)
        assert report.ok, report.difference
    # The parent's record of the child it opened is checked like any other event.
    harness.admin(lambda s: s.execute(update(Event).where(
        Event.game_id == "b1", Event.type == "child.opened").values(
        data={"kind": "duel", "game_id": "b1-duel-9", "players": ["alice", "bob"],
              "settings": {}, "start": "2026-12-01T12:04:00Z", "channel": None})))
    assert "child.opened.game_id" in _replay(harness, "b1").difference
