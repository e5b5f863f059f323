"""A game's overdue deadlines fire in their order, also when two daemons share them.

After a downtime, two replicas both find a game's deadlines overdue. One locks the earlier
(``SKIP LOCKED``) and has not fired it yet; the other passes over it and, before the fix,
fired the later one first: the game's history then had its deadlines out of order. A
deadline now waits (held, pending) while an earlier one of its game is pending, and the
daemon that fires the earlier one fires the later one next. Uses the test ruleset
``tally`` (``tally.py``); on a real store.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

from sqlalchemy import select
from sqlalchemy.engine import make_url

from dealer.shell.admin import add_player, create_game
from dealer.shell.deadline_groups import fire_deadlines
from dealer.shell.report import PassReport
from dealer.store import queries as Q
from dealer.store.models import Deadline, Event

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
CLOSE = T0 + timedelta(hours=1)
EXTRA = CLOSE + timedelta(minutes=1)
AFTER_DOWNTIME = T0 + timedelta(days=1)


def two_overdue(h) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Tally ``t0`` (three rounds) with two pending deadlines: ``close`` at CLOSE and
    ``extra`` at EXTRA; return their ids."""
    def make(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=10)
        add_player(session, "bob", T0, chips=10)
        create_game(session, "tally", "t0", T0, players=["alice", "bob"], settings={"rounds": "3"})
        session.flush()
        extra = Deadline(game_id="t0", name="extra", due_at=EXTRA, set_due_at=EXTRA, status="pending")
        session.add(extra)
        session.flush()
        close = session.scalars(select(Deadline.id).where(Deadline.name == "close")).one()
        return close, extra.id
    return h.admin(make)


def fired_in_history(h) -> list[tuple[str, datetime]]:  # type: ignore[no-untyped-def]
    def read(session):  # type: ignore[no-untyped-def]
        rows = session.execute(select(Event.data, Event.at).where(
            Event.game_id == "t0", Event.type == "deadline.fired").order_by(Event.seq))
        return [(data["deadline"], at.replace(tzinfo=timezone.utc)) for data, at in rows]
    return h.admin(read)


def test_a_deadline_does_not_fire_before_an_earlier_one_of_its_game(harness) -> None:  # type: ignore[no-untyped-def]
    close, extra = two_overdue(harness)
    report = PassReport()
    missed = fire_deadlines(harness.dealer, [(extra, EXTRA, "t0")], report)
    assert missed == {extra} and report.held == 1 and report.deadlines == 0
    harness.dealer.process_due(AFTER_DOWNTIME)
    assert [name for name, _ in fired_in_history(harness)][:2] == ["close", "extra"]


def test_two_daemons_fire_a_games_overdue_deadlines_in_order(harness, database_url) -> None:  # type: ignore[no-untyped-def]
    if make_url(database_url).get_backend_name() != "postgresql":
        # SQLite has one writer and no row locks: no daemon passes over another's deadline.
        return
    close, extra = two_overdue(harness)
    other = harness.dealer.engine.connect()
    try:
        transaction = other.begin()  # the other daemon: "close" locked, its step not run yet
        assert [row.id for row in other.execute(Q.LOCK_DEADLINE, {"ids": [close]})] == [close]
        report = PassReport(now=AFTER_DOWNTIME)
        # In a thread: a daemon that fired "extra" first would then wait for the row of
        # "close" (its step sets the next round's), which only this one can release.
        daemon = threading.Thread(target=harness.dealer.process_due, args=(AFTER_DOWNTIME, report))
        daemon.start()
        daemon.join(timeout=10)
        waited = daemon.is_alive()
        transaction.rollback()
        daemon.join()
        assert not waited, "the pass fired the later deadline and waited for the earlier one's row"
        assert report.deadlines == 0 and report.held == 1  # "extra" waits behind "close"
    finally:
        other.close()
    harness.dealer.process_due(AFTER_DOWNTIME)
    history = fired_in_history(harness)
    assert [name for name, _ in history][:2] == ["close", "extra"]
    assert [at for _, at in history] == sorted(at for _, at in history)


def test_a_message_does_not_overtake_an_earlier_deadline_another_daemon_holds(harness, database_url) -> None:  # type: ignore[no-untyped-def]
    if make_url(database_url).get_backend_name() != "postgresql":
        return  # as above: one writer
    close, _ = two_overdue(harness)
    harness.send("alice", "add 3", CLOSE + timedelta(seconds=1), channel="#tally")  # after "close"
    harness.dealer.ingest(AFTER_DOWNTIME)
    other = harness.dealer.engine.connect()
    try:
        transaction = other.begin()
        assert [row.id for row in other.execute(Q.LOCK_DEADLINE, {"ids": [close]})] == [close]
        report = PassReport(now=AFTER_DOWNTIME)
        daemon = threading.Thread(target=harness.dealer.process_due, args=(AFTER_DOWNTIME, report))
        daemon.start()
        daemon.join(timeout=3)  # it may wait for the step lock the other daemon holds
        transaction.rollback()  # "close" not fired: the other daemon died
        daemon.join()
    finally:
        other.close()
    assert report.messages == 0 and report.deadlines == 0  # the message and "extra" wait
    harness.dealer.process_due(AFTER_DOWNTIME)
    types = harness.admin(lambda s: s.scalars(
        select(Event.type).where(Event.game_id == "t0").order_by(Event.seq)).all())
    assert types.index("deadline.fired") < types.index("command"), types
