"""Off to the Races never waits without a reason (issue 34, item 7): in every state the
table has a pending deadline, or it says what it waits for (``Summary.waiting``) and its
last public post announced it. With OR-11 off (the rules' default) a race has no deadline:
it waits for its riders, and says so (docs/RACES.md, "Waiting")."""

from __future__ import annotations

from datetime import timedelta

from dealer.games.races.testing import T0, RaceShell, minutes

WAITS_FOR_RIDERS = "no idle action is set (OR-11 off)"
ANNOUNCED = {"seating": "the seating window of 1 hour starts with the first `sit`", "racing": WAITS_FOR_RIDERS}
"""What the table's last public post says when it waits without a deadline, by phase."""


def _check(shell: RaceShell) -> None:
    """A deadline, or a reason that the last public post announced."""
    if shell.state.phase == "finished":
        assert shell.summary().waiting is None
        return
    if shell.deadlines:
        assert shell.summary().waiting is None, shell.deadlines
        return
    waiting = shell.summary().waiting
    assert waiting, f"no deadline and no reason to wait in phase {shell.state.phase}"
    assert ANNOUNCED[shell.state.phase] in shell.posts()[-1].body


def _table(**settings) -> RaceShell:  # type: ignore[no-untyped-def]
    shell = RaceShell.create(chips={"alice": 100, "bob": 100}, cards={"alice": ["KS"], "bob": ["2H"]},
                             **settings)
    _check(shell)  # open, nobody seated: waits for the first sit
    assert shell.summary().waiting == "the first `sit` (OR-1): the seating window starts then (OR-3)"
    for at, (who, line) in enumerate([("alice", "sit"), ("bob", "sit"),
                                      ("alice", "horse Thunder Hooves card king of spades"),
                                      ("bob", "horse Lightning card 2h"), ("alice", "ready")], 1):
        shell.accept(who, line, T0 + minutes(at))
        _check(shell)
    shell.script("5C", "6H")
    shell.accept("bob", "ready", T0 + minutes(6))
    assert shell.state.phase == "betting"
    _check(shell)
    shell.accept("alice", "bet 10 on Thunder Hooves", T0 + minutes(7))
    shell.accept("bob", "pass", T0 + minutes(8))
    assert shell.state.phase == "racing"
    return shell


def test_a_race_without_an_idle_action_says_it_waits_for_its_riders() -> None:
    shell = _table()
    assert shell.deadlines == {}
    _check(shell)
    assert shell.summary().waiting == (
        "a rider's `race` or `lap` (OR-7, OR-8): no idle action is set (OR-11 off)"
    )
    assert WAITS_FOR_RIDERS in shell.posts("betting_closed")[-1].body
    # Every action keeps saying so, a Lap owed included, until the race ends.
    shell.script("9D", "9C", "9S", "9H", "AD")
    at = T0 + minutes(10)
    while shell.state.phase == "racing":
        rider = "alice" if shell.state.actions % 2 == 0 else "bob"
        shell.accept(rider, "lap" if shell.state.lap_owed else "race", at)
        _check(shell)
        at += timedelta(days=3)  # however long it takes
    assert shell.state.phase == "finished"


def test_with_an_idle_action_every_racing_state_has_its_deadline() -> None:
    shell = _table(idle_action_after="30m")
    assert set(shell.deadlines) == {"idle"}
    _check(shell)
    assert "If nobody acts by" in shell.posts("betting_closed")[-1].body
    assert WAITS_FOR_RIDERS not in shell.posts("betting_closed")[-1].body
