"""On Postgres the daemon's connections keep the statements psycopg prepared on them.

psycopg prepares a statement on a connection after its fifth execution there, and at
every ``ROLLBACK`` on that connection drops all it prepared (``DEALLOCATE ALL``); the pool
rolls back a transaction left open on a connection returned to it. So a read that ends
without a commit made the next passes on that connection parse and plan each of their
statements again, five executions long (a pass 2-4 ms slower). The daemon's own work
(a webhook delivery and its pass, what Discord and Discourse push) leaves no such
transaction: its lone reads run in autocommit (``store.db.read_connection``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool

from dealer.inbox.base import InboxMessage
from dealer.shell.platforms import store_heard
from dealer.store.db import make_engine, read_connection

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def postgres(database_url: str) -> str:
    if not database_url.startswith("postgresql"):
        pytest.skip("psycopg's prepared statements are Postgres's (SQLite's module caches its own)")
    return database_url


@contextmanager
def rolled_back() -> Iterator[list[str]]:
    """Each ``ROLLBACK`` psycopg sends while the block runs (a connection closed with its
    transaction open, or returned so to its pool): the list of them, each as the last
    statement run in the transaction it rolled back."""
    seen: list[str] = []
    last: dict[int, str] = {}

    def executed(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        last[id(conn.connection.dbapi_connection)] = statement

    def open_on(dbapi_connection: Any) -> None:
        if dbapi_connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            seen.append(last.get(id(dbapi_connection), "?")[:120])

    listeners = [
        (Engine, "before_cursor_execute", executed),
        (Engine, "rollback", lambda conn: open_on(conn.connection.dbapi_connection)),
        (Pool, "reset", lambda dbapi_connection, _record, _state: open_on(dbapi_connection)),
    ]
    for target, name, listener in listeners:
        event.listen(target, name, listener)
    try:
        yield seen
    finally:
        for target, name, listener in listeners:
            event.remove(target, name, listener)


def test_a_read_closed_without_a_commit_costs_the_connection_its_prepared_statements(postgres: str) -> None:
    """Why it matters: psycopg's behaviour, seen on one connection (the pool holds one)."""
    engine = make_engine(postgres)
    try:
        def prepared() -> int:
            with read_connection(engine) as connection:
                return connection.execute(text("SELECT count(*) FROM pg_prepared_statements")).scalar_one()

        with engine.begin() as connection:
            for n in range(6):
                connection.execute(text("SELECT 1 + :n"), {"n": n})
        assert prepared() == 1
        with read_connection(engine) as connection:
            connection.execute(text("SELECT 2")).all()
        assert prepared() == 1  # a read in autocommit: nothing rolled back
        with rolled_back() as rollbacks:
            with engine.connect() as connection:
                connection.execute(text("SELECT 2")).all()
        assert prepared() == 0  # the same read in a transaction, closed: rolled back
        assert rollbacks == ["SELECT 2"]
    finally:
        engine.dispose()


def test_webhook_deliveries_and_their_passes_leave_no_transaction_open(harness, postgres: str) -> None:  # type: ignore[no-untyped-def]
    from test_webhook_inbox import Door, setup_tally

    setup_tally(harness)
    door = Door(harness)
    with rolled_back() as rollbacks:
        for n in range(8):
            answer = door.post({"id": f"bridge-{n}", "sender": "alice", "channel": "pm", "body": "add 1",
                                "sent_at": (T0 + timedelta(seconds=n)).isoformat()}, f"d-{n}")
            assert answer.status_code == 202, answer.text
            door.now = T0 + timedelta(seconds=n + 1)
            report = harness.run(door.now)
            assert report.messages == 1 and report.ok
        replay = door.post({"id": "bridge-0", "sender": "alice", "channel": "pm", "body": "add 1",
                            "sent_at": T0.isoformat()}, "d-0")
        assert replay.status_code == 409
    assert rollbacks == []


def test_what_a_platform_pushes_leaves_no_transaction_open(harness, postgres: str) -> None:  # type: ignore[no-untyped-def]
    """A deletion heard from Discord (its sender read from the message it deletes) and an
    edit of a Discourse post (its target looked up among dealer's own posts)."""
    from dealer.shell.discourse import own_post_target

    engine = harness.dealer.engine
    said = InboxMessage(id="m1", sender="discord:1", channel="pm", body="hello", sent_at=T0)
    gone = InboxMessage(id="m2", sender="discord:1", channel="pm", kind="delete", target="m1",
                        sent_at=T0 + timedelta(seconds=1))
    edit = InboxMessage(id="post/9", sender="alice", channel="pm", body="hi", kind="edit", target="post/8",
                        sent_at=T0 + timedelta(seconds=2))
    with rolled_back() as rollbacks:
        assert len(store_heard(engine, harness.settings, [said], {}, T0).new) == 1
        assert len(store_heard(engine, harness.settings, [gone], {}, T0 + timedelta(seconds=1)).new) == 1
        assert own_post_target(engine, edit).target == "post/8"
    assert rollbacks == []
