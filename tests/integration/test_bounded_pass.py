"""The daemon's pass is bounded, and every group commits as it goes (issue 36, item 6).

A daemon restarted again and again soon after each start (killed 0.1 to 1.5 s in) once
completed one pass in 150 lives on Postgres: a pass ran every due message and deadline of
the backlog before it delivered anything, so no life reached its end and no post went out
until the attack stopped. ``dealer run``'s pass now does at most ``PASS_GROUPS`` groups of
messages or deadlines, then as many delivery batches, and the loop runs the next pass at
once while work is left. A daemon's first groups (and delivery batches) are small and
grow (5, 10, 20, 40, then 50), and its scheduler's thread is started only once a pass
leaves no work behind, so that its first commit comes early. Here each "life" is a fresh
daemon on the same store that runs one bounded pass and is then abandoned, as a killed
process would be.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select

from dealer.shell.admin import add_player, create_game
from dealer.shell.passes import FIRST_GROUP, Dealer
from dealer.shell.timers import FULL_PASS_GROUPS, PASS_GROUPS, Timers, one_turn
from dealer.store.models import Inbound, Post

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
BACKLOG = 300


@pytest.fixture
def queue(harness):  # type: ignore[no-untyped-def]
    """alice and bob in the tally t1 (4 h) opened at T0; ``queue(n)`` stores ``n`` messages
    ``add 1`` sent at T0 + 1 s, from bob and alice in turn (``alternate=False``: alice's)."""
    with harness.session() as session:
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"], settings={"length": "4h"})

    def send(count: int = BACKLOG, alternate: bool = True) -> None:
        for number in range(count):
            sender = "bob" if alternate and number % 2 == 0 else "alice"
            harness.send(sender, "add 1", T0 + timedelta(seconds=1), game="t1")

    return send


def counts(dealer: Dealer) -> tuple[int, int]:
    """(messages still pending, posts delivered)."""
    with dealer.sessions() as session:
        pending = session.scalar(select(func.count()).select_from(Inbound).where(Inbound.status == "pending"))
        delivered = session.scalar(select(func.count()).select_from(Post).where(Post.status == "delivered"))
    return pending or 0, delivered or 0


def test_each_life_of_a_crash_loop_completes_a_bounded_pass_and_advances(harness, queue) -> None:  # type: ignore[no-untyped-def]
    queue()
    lives = 0
    delivered_before = 0
    while True:
        life = Dealer(harness.settings)  # a new process: nothing kept from the last life
        lives += 1
        report = life.run_pass(T0 + timedelta(minutes=1), groups=PASS_GROUPS)
        pending, delivered = counts(life)
        life.dispose()
        # Each life's pass ends, after its first two groups (5 and 10 messages); what it did
        # is committed, and posts go out in every life.
        assert report.messages <= FIRST_GROUP + 2 * FIRST_GROUP
        assert delivered > delivered_before or not report.more
        delivered_before = delivered
        if not report.more:
            break
        assert lives < 30, "the backlog does not drain"
    assert pending == 0 and lives >= BACKLOG // (FIRST_GROUP + 2 * FIRST_GROUP)
    # Every message applied once: the tally is the backlog.
    from dealer.views import game_view

    with harness.dealer.sessions() as session:
        assert sum(game_view(session, "t1")["scores"].values()) == BACKLOG


def test_an_unbounded_pass_still_does_everything_due(harness, queue) -> None:  # type: ignore[no-untyped-def]
    queue(alternate=False)
    report = harness.run(T0 + timedelta(minutes=1))  # `dealer run --once`, the tests
    assert (report.messages, report.more) == (BACKLOG, False)
    assert counts(harness.dealer)[0] == 0


class Scheduler:
    """What one_turn asks of APScheduler's scheduler."""

    def get_job(self, _ident: str) -> None:
        return None

    def add_job(self, *args: object, **kwargs: object) -> None:
        pass


def test_the_loop_runs_the_next_pass_at_once_while_work_is_left(harness, queue) -> None:  # type: ignore[no-untyped-def]
    queue(600, alternate=False)
    dealer = harness.dealer
    dealer.clock = lambda: T0 + timedelta(minutes=1)
    dealer.wake = threading.Event()
    bounds, pending = [], []
    run_pass = dealer.run_pass

    def bounded(now=None, *, groups=None):  # type: ignore[no-untyped-def]
        bounds.append(groups)
        return run_pass(now, groups=groups)

    dealer.run_pass = bounded  # type: ignore[method-assign]
    while True:
        dealer.wake.clear()
        one_turn(dealer, Scheduler())
        pending.append(counts(dealer)[0])
        if not dealer.wake.is_set():
            break
        assert len(bounds) < 20
    # The passes grow with the groups: 2 groups (5 and 10 messages), then 8 (20, 40, then
    # 50s: 360), then FULL_PASS_GROUPS, so that a burst is not interleaved with delivery
    # once the daemon has run a few passes.
    assert bounds == [PASS_GROUPS, 4 * PASS_GROUPS, FULL_PASS_GROUPS]
    assert pending == [585, 225, 0]


def test_a_daemons_first_groups_are_small_and_grow(harness, queue) -> None:  # type: ignore[no-untyped-def]
    queue()
    life = Dealer(harness.settings)
    applied, delivered = [], []
    while True:
        report = life.run_pass(T0 + timedelta(minutes=1), groups=PASS_GROUPS)
        applied.append(report.messages)
        delivered.append(report.delivered)
        if not report.more:
            break
    life.dispose()
    # Groups of 5 and 10, then 20 and 40, then full groups of 50; the delivery batches of
    # each pass as large as its groups (each message queues one reply; the opening post
    # of the game goes first).
    assert applied == [15, 60, 100, 100, 25]
    assert delivered == [15, 60, 100, 100, 26]
    assert sum(delivered) == counts(harness.dealer)[1]
    assert counts(harness.dealer)[0] == 0


def test_a_daemons_first_deadline_groups_are_small_too(harness) -> None:  # type: ignore[no-untyped-def]
    with harness.session() as session:
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        for number in range(40):
            create_game(session, "tally", f"t{number}", T0, players=["alice", "bob"],
                        settings={"length": "1h"})
    life = Dealer(harness.settings)
    fired = []
    while True:
        report = life.run_pass(T0 + timedelta(hours=2), groups=PASS_GROUPS)
        fired.append(report.deadlines)
        if not report.more:
            break
    life.dispose()
    assert fired[:2] == [5 + 10, 20 + 5] and sum(fired) == 40
    # A pass without a bound (`dealer run --once`) fires in full groups from the start.
    harness.send("alice", "add 1", T0 + timedelta(hours=2), game="t0")
    assert harness.run(T0 + timedelta(hours=3)).more is False


def test_the_timers_thread_is_started_only_once_a_pass_leaves_no_work(harness, queue) -> None:  # type: ignore[no-untyped-def]
    queue(40, alternate=False)
    dealer = harness.dealer
    dealer.clock = lambda: T0 + timedelta(minutes=1)
    timers = Timers()
    try:
        one_turn(dealer, timers)  # 5 + 10 messages: work is left, no timer is read or set
        assert timers.scheduler is None and dealer.wake.is_set()
        dealer.wake.clear()
        one_turn(dealer, timers)  # the other 25: the close of t1 gets its timer
        assert not dealer.wake.is_set() and counts(dealer)[0] == 0
        # (The close is due in the past of the real clock: the timer wakes the loop at once.)
        assert timers.scheduler is not None and timers.scheduler.running
    finally:
        timers.shutdown()
