"""The step lock is taken by the statement that claims the steps' work (issue 13): on
Postgres a claim of messages or deadlines waits for the advisory step lock before it locks
any row, and returns its rows as the transaction it waited for left them. On a real store."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import select, text, update

from dealer.shell.admin import add_player, create_game
from dealer.store import queries as Q
from dealer.store.models import Deadline, Inbound

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def _waiting_for_advisory_lock(harness, pid: int) -> bool:  # type: ignore[no-untyped-def]
    with harness.dealer.engine.connect() as connection:
        return bool(connection.execute(text(
            "SELECT count(*) FROM pg_locks WHERE pid = :pid AND locktype = 'advisory' AND NOT granted"
        ), {"pid": pid}).scalar())


def _locked_elsewhere(harness, table: str, ids: list[int]) -> list[int]:  # type: ignore[no-untyped-def]
    """Which of ``ids`` another transaction holds a row lock on (probed without waiting)."""
    held = []
    with harness.dealer.engine.connect() as connection:
        for row_id in ids:
            free = connection.execute(text(
                f"SELECT id FROM {table} WHERE id = :id FOR UPDATE SKIP LOCKED"), {"id": row_id}).first()
            if free is None:
                held.append(row_id)
        connection.rollback()
    return held


def _three_messages(harness) -> tuple[str, list[int], dict[str, Any]]:  # type: ignore[no-untyped-def]
    for n in range(3):
        harness.send("alice", "add 1", T0 + timedelta(minutes=n), game="t1")
    harness.dealer.ingest(T0 + timedelta(minutes=5))
    ids = harness.admin(lambda s: list(s.scalars(select(Inbound.id).order_by(Inbound.id))))
    return "inbound", ids, {"ids": ids}


def _three_deadlines(harness) -> tuple[str, list[int], dict[str, Any]]:  # type: ignore[no-untyped-def]
    ids = harness.admin(lambda s: list(s.scalars(select(Deadline.id).order_by(Deadline.id))))
    assert len(ids) == 3
    return "deadlines", ids, {"ids": ids}


@pytest.mark.parametrize(
    "claim, others, rows",
    [
        # A group (several games in one transaction) takes the lock alone: it waits for a
        # single step, which shares it.
        ("claim_messages", "pg_advisory_xact_lock_shared", _three_messages),
        ("LOCK_DEADLINES", "pg_advisory_xact_lock_shared", _three_deadlines),
        # A single step shares it: it waits for a group.
        ("CLAIM_MESSAGE", "pg_advisory_xact_lock", _three_messages),
        ("LOCK_DEADLINE", "pg_advisory_xact_lock", _three_deadlines),
    ],
)
def test_a_claim_takes_the_step_lock_before_any_row_and_reads_the_rows_as_left(  # type: ignore[no-untyped-def]
    harness, database_url, claim, others, rows,
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("the step lock is Postgres's (SQLite has one writer at a time)")

    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        for game in ("t1", "t2", "t3"):
            create_game(session, "tally", game, T0, players=["alice", "bob"])
    harness.admin(setup)
    table, ids, params = rows(harness)
    if claim == "CLAIM_MESSAGE":
        params = {"id": ids[0]}
    if claim == "claim_messages":  # run on the driver's cursor, as the daemon runs it
        direct = Q.claim_messages(len(ids))
        statement, params = direct.statement, {f"m{n}": each for n, each in enumerate(ids)}
    else:
        statement = getattr(Q, claim)
    # Another daemon's transaction holds the step lock and will take the first row.
    other = harness.dealer.engine.connect()
    other.begin()
    other.execute(text(f"SELECT {others}(:key)"), {"key": Q.STEP_LOCK_KEY})
    pid: list[int] = []
    claimed: list[list[int]] = []
    errors: list[BaseException] = []
    started, release = threading.Event(), threading.Event()

    def claim_rows() -> None:
        try:
            with harness.dealer.engine.connect() as connection, connection.begin() as transaction:
                pid.append(connection.execute(text("SELECT pg_backend_pid()")).scalar())
                started.set()
                rows = (direct.rows(connection, params) if claim == "claim_messages"
                        else connection.execute(statement, params))
                claimed.append([row[0] for row in rows])
                release.wait(timeout=30)  # holds its row locks until the main thread looked
                transaction.rollback()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    thread = threading.Thread(target=claim_rows)
    thread.start()
    try:
        assert started.wait(timeout=30)
        for _ in range(3000):
            if _waiting_for_advisory_lock(harness, pid[0]):
                break
            threading.Event().wait(0.01)
        else:
            pytest.fail("the claim never waited for the step lock")
        # Waiting for the step lock, the claim holds no row yet.
        assert _locked_elsewhere(harness, table, ids) == []
        # The other transaction takes the first row (a message applied, a deadline fired)
        # and commits, which frees the step lock.
        if table == "inbound":
            other.execute(update(Inbound).where(Inbound.id == ids[0]).values(status="applied"))
        else:
            other.execute(update(Deadline).where(Deadline.id == ids[0]).values(status="fired"))
        other.commit()
        for _ in range(3000):
            if claimed or errors:
                break
            threading.Event().wait(0.01)
        assert not errors
        # The claim read the first row as the other transaction left it: taken, so not
        # claimed again; it holds the rows it returned (and the first one's new version,
        # which Postgres locked before finding it no longer pending).
        expected = [] if claim == "CLAIM_MESSAGE" else ids[1:]
        assert claimed == [expected]
        assert set(expected) <= set(_locked_elsewhere(harness, table, ids))
    finally:
        release.set()
        thread.join(timeout=30)
        other.close()
    assert not thread.is_alive() and not errors
