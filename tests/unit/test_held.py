"""A game waits behind a deadline whose step crashed (steps.check_not_held)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from dealer.store.queries import PendingDeadline
from dealer.shell.steps import GameHeld, check_not_held

DUE = datetime(2026, 12, 1, 11, 0, tzinfo=timezone.utc)
LATER = DUE + timedelta(seconds=1)


def test_a_failed_deadline_due_before_the_step_holds_the_game() -> None:
    pending = {"close": PendingDeadline(7, "close", DUE, error="KeyError: 'round'")}
    with pytest.raises(GameHeld, match="game g1 waits behind its deadline close .* KeyError: 'round'"):
        check_not_held("g1", pending, LATER)


@pytest.mark.parametrize(
    ("row", "now", "firing"),
    [
        (PendingDeadline(7, "close", DUE), LATER, None),  # due, but it never failed: fires in turn
        (PendingDeadline(7, "close", DUE, error="boom"), DUE, None),  # a message at its very time counts before it
        (PendingDeadline(7, "close", DUE, error="boom"), DUE - timedelta(minutes=1), None),
        (PendingDeadline(7, "close", DUE, paused=True, error="boom"), LATER, None),  # paused: the game goes on
        (PendingDeadline(7, "close", DUE, error="boom"), LATER, 7),  # firing it again is its retry
    ],
)
def test_what_does_not_hold_a_game(row: PendingDeadline, now: datetime, firing: int | None) -> None:
    check_not_held("g1", {"close": row}, now, firing)


def test_a_deadline_waits_behind_an_earlier_one_of_its_game() -> None:
    # Another daemon holds the earlier one (locked, not yet fired): the later one must not
    # fire first, as after a downtime with two replicas both are overdue.
    with pytest.raises(GameHeld, match="game g1 waits behind its earlier deadline close"):
        check_not_held("g1", {"close": PendingDeadline(7, "close", DUE)}, LATER, firing=8)
    with pytest.raises(GameHeld, match="earlier deadline close"):  # the same time: by id
        check_not_held("g1", {"close": PendingDeadline(7, "close", DUE)}, DUE, firing=8)


@pytest.mark.parametrize(
    ("row", "now", "firing"),
    [
        (PendingDeadline(9, "close", DUE), DUE, 8),  # the same time, created after it
        (PendingDeadline(7, "close", LATER), DUE, 8),  # due after it
        (PendingDeadline(7, "close", DUE, paused=True), LATER, 8),  # paused: the game goes on
    ],
)
def test_what_does_not_hold_a_deadline(row: PendingDeadline, now: datetime, firing: int) -> None:
    check_not_held("g1", {"close": row}, now, firing)


def test_a_message_waits_behind_an_earlier_deadline_still_pending() -> None:
    with pytest.raises(GameHeld, match="earlier deadline close"):
        check_not_held("g1", {"close": PendingDeadline(7, "close", DUE)}, LATER, inbound=True)
    check_not_held("g1", {"close": PendingDeadline(7, "close", DUE)}, DUE, inbound=True)  # at its very time: before it
    check_not_held("g1", {"close": PendingDeadline(7, "close", DUE, paused=True)}, LATER, inbound=True)
