"""Storing inbound messages: the directory inbox's ingest and the function a push adapter
(a webhook, a gateway connection) calls with messages it has already parsed."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from sqlcount import commit_settings
from dealer.inbox.base import InboxMessage
from dealer.shell import passes
from dealer.shell.admin import add_player, create_game
from dealer.shell.ingest import INGEST_BATCH, store_messages
from dealer.store.models import Inbound

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def message(ident: str, body: str, at: datetime, sender: str = "alice") -> InboxMessage:
    return InboxMessage(id=ident, sender=sender, channel="pm", body=body, sent_at=at)


def setup_tally(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    h.admin(setup)


def test_a_push_adapter_stores_messages_once_and_learns_which_were_new(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    engine = harness.dealer.engine
    first = store_messages(
        engine, "webhook",
        [message("w1", "add 3", T0 + timedelta(minutes=1)), message("w2", "add 4", T0 + timedelta(minutes=2), "bob")],
        T0 + timedelta(minutes=5),
    )
    assert [m.id for m in first.new] == ["w1", "w2"]
    assert first.duplicates == [] and first.refused == []
    # The webhook delivers w2 again (a retry after a timeout) along with a new message.
    again = store_messages(
        engine, "webhook",
        [message("w2", "add 4", T0 + timedelta(minutes=2), "bob"), message("w3", "add 5", T0 + timedelta(minutes=3))],
        T0 + timedelta(minutes=6),
    )
    assert [m.id for m in again.new] == ["w3"]
    assert [m.id for m in again.duplicates] == ["w2"]
    # The same id from another source is another message.
    other = store_messages(engine, "gateway", [message("w1", "add 1", T0 + timedelta(minutes=4))], T0 + timedelta(minutes=7))
    assert [m.id for m in other.new] == ["w1"]
    rows = harness.admin(lambda s: [
        (r.source, r.external_id, r.status, json.loads(r.raw)["body"])
        for r in s.scalars(select(Inbound).order_by(Inbound.id))
    ])
    assert rows == [
        ("webhook", "w1", "pending", "add 3"), ("webhook", "w2", "pending", "add 4"),
        ("webhook", "w3", "pending", "add 5"), ("gateway", "w1", "pending", "add 1"),
    ]
    # The pass applies what was pushed, like any stored message.
    report = harness.run(T0 + timedelta(minutes=10))
    assert report.messages == 4 and report.ok
    totals = harness.admin(lambda s: {r.external_id + "@" + r.source: r.status for r in s.scalars(select(Inbound))})
    assert set(totals.values()) == {"applied"}
    confirmations = [p["body"] for p in harness.pms("alice") if p["kind"] == "confirmation"]
    assert len(confirmations) == 3  # add 3, add 5, add 1: alice's total is 9
    assert "9" in confirmations[-1]


def test_a_message_from_the_future_counts_when_it_arrived(harness) -> None:  # type: ignore[no-untyped-def]
    now = T0 + timedelta(minutes=5)
    store_messages(harness.dealer.engine, "webhook", [message("f1", "add 2", now + timedelta(days=1))], now)
    assert harness.admin(lambda s: s.scalar(select(Inbound.sent_at))) == now


def test_pushed_messages_beyond_one_batch_are_all_stored(harness) -> None:  # type: ignore[no-untyped-def]
    count = INGEST_BATCH + 3
    batch = [message(f"b{n}", "add 1", T0) for n in range(count)]
    stored = store_messages(harness.dealer.engine, "webhook", batch + batch[:2], T0)
    assert len(stored.new) == count and [m.id for m in stored.duplicates] == ["b0", "b1"]


def _inserts(engine) -> list[bool]:  # type: ignore[no-untyped-def]
    """For each insert into ``inbound`` sent on ``engine`` from now on: whether it held
    several messages."""
    from sqlalchemy import event

    seen: list[bool] = []

    def sent(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO inbound"):
            # SQLAlchemy sends an insert of several rows as an executemany, or with RETURNING
            # as one statement of several VALUES.
            seen.append(executemany or "), (" in statement)

    event.listen(engine, "before_cursor_execute", sent)
    return seen


def test_a_batch_of_new_messages_is_stored_in_one_statement_in_its_order(harness) -> None:  # type: ignore[no-untyped-def]
    # Messages sent at the same instant count in the order dealer received them: their
    # ids, which follow the batch's order.
    inserts = _inserts(harness.dealer.engine)
    batch = [message(f"t{n}", "add 1", T0, sender) for n, sender in enumerate(["bob", "alice", "bob", "alice"])]
    stored = store_messages(harness.dealer.engine, "webhook", batch, T0)
    assert [m.id for m in stored.new] == ["t0", "t1", "t2", "t3"]
    assert inserts == [True]
    rows = harness.admin(lambda s: [r.external_id for r in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert rows == ["t0", "t1", "t2", "t3"]


def test_a_batch_holding_a_stored_message_is_stored_message_by_message(harness) -> None:  # type: ignore[no-untyped-def]
    engine = harness.dealer.engine
    store_messages(engine, "webhook", [message("d1", "add 1", T0)], T0)
    inserts = _inserts(engine)
    batch = [message("d0", "add 1", T0), message("d1", "add 1", T0), message("d1", "add 2", T0),
             message("d2", "add 1", T0), message("d2", "add 1", T0)]
    stored = store_messages(engine, "webhook", batch, T0)
    # Tried at once, then (d1 was stored) one by one, plus the conflicting d1 kept apart:
    # nothing of the first try is kept.
    assert inserts[0] is True and inserts[1:] == [False] * 6
    assert [m.id for m in stored.new] == ["d0", "d2"]
    assert [m.id for m in stored.duplicates] == ["d1", "d2"]
    assert [m.id for m in stored.conflicts] == ["d1"]
    rows = harness.admin(lambda s: [(r.external_id, r.status) for r in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert rows == [("d1", "pending"), ("d0", "pending"), ("d1#2", "rejected"), ("d2", "pending")]


def test_one_new_message_is_a_transaction_of_its_own_statement_on_postgres(harness, database_url) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import event

    engine = harness.dealer.engine
    autocommit: list[bool] = []

    def sent(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO inbound"):
            autocommit.append(bool(getattr(cursor.connection, "autocommit", False)))

    event.listen(engine, "before_cursor_execute", sent)
    stored = store_messages(engine, "webhook", [message("a1", "add 1", T0)], T0)
    assert [m.id for m in stored.new] == ["a1"]
    # On Postgres the insert commits as it returns: no BEGIN, no COMMIT round trip. SQLite
    # keeps its transaction (its BEGIN IMMEDIATE and COMMIT cost no round trip).
    postgres = database_url.startswith("postgresql")
    assert autocommit == [postgres]
    # Stored again: the insert writes nothing, and the message is sorted out in a
    # transaction as before (a duplicate; with another text, a conflict kept apart).
    again = store_messages(engine, "webhook", [message("a1", "add 1", T0)], T0)
    changed = store_messages(engine, "webhook", [message("a1", "add 2", T0)], T0)
    assert [m.id for m in again.duplicates] == ["a1"] and [m.id for m in changed.conflicts] == ["a1"]
    # Postgres: the second and third tries first (nothing written), then the transaction's
    # insert, the conflicting text's kept apart; SQLite: the transaction's inserts only.
    if postgres:
        assert autocommit == [True, True, False, True, False, False]
    else:
        assert autocommit == [False, False, False, False]
    rows = harness.admin(lambda s: [(r.external_id, r.status) for r in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert rows == [("a1", "pending"), ("a1#2", "rejected")]


def acknowledged_after(harness, monkeypatch) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """For each message the inbox is told is stored from now on, the commits
    (:func:`commit_settings`) made before it was told."""
    seen = commit_settings(harness.dealer.engine)
    told: list[list[str]] = []
    inbox = harness.dealer.inbox
    done = inbox.done

    def acknowledged(handle):  # type: ignore[no-untyped-def]
        told.append(list(seen))
        done(handle)

    monkeypatch.setattr(inbox, "done", acknowledged)
    return told


def test_on_postgres_a_message_is_acknowledged_once_a_commit_flushed_it(harness, database_url, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The pass stores a message without waiting for the flush to disk and tells its inbox
    only after a later commit waited for it: here the message's own step."""
    if not database_url.startswith("postgresql"):
        pytest.skip("synchronous_commit is Postgres's (SQLite's WAL commits are not flushed)")
    setup_tally(harness)
    told = acknowledged_after(harness, monkeypatch)
    harness.send("alice", "add 3", T0 + timedelta(minutes=1))
    assert harness.run(T0 + timedelta(minutes=2)).messages == 1
    assert told == [["on"]]  # after the step's commit, which waited for the flush
    assert list(harness.inbox_dir.glob("*.json")) == []


def test_on_postgres_a_message_left_pending_is_flushed_before_it_is_acknowledged(harness, database_url, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """No step ran in the pass (its game held, another daemon's, the daemon stopping): a
    commit is made for the message before its inbox is told it is stored."""
    if not database_url.startswith("postgresql"):
        pytest.skip("synchronous_commit is Postgres's")
    setup_tally(harness)
    told = acknowledged_after(harness, monkeypatch)
    monkeypatch.setattr(passes, "process_due", lambda *args: None)
    harness.send("alice", "add 3", T0 + timedelta(minutes=1))
    assert harness.run(T0 + timedelta(minutes=2)).messages == 0
    assert told == [["on"]]
    rows = harness.admin(lambda s: [(r.external_id, r.status) for r in s.scalars(select(Inbound))])
    assert [status for _, status in rows] == ["pending"]


def test_on_postgres_several_messages_are_acknowledged_before_the_steps(harness, database_url, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Several messages stored without waiting for the flush are told stored before the pass's
    steps, after a commit made to wait for it: a daemon killed during a long pass does not
    store them all again in its next life."""
    if not database_url.startswith("postgresql"):
        pytest.skip("synchronous_commit is Postgres's")
    setup_tally(harness)
    told = acknowledged_after(harness, monkeypatch)
    harness.send("alice", "add 3", T0 + timedelta(minutes=1))
    harness.send("alice", "add 4", T0 + timedelta(minutes=1, seconds=1))
    assert harness.run(T0 + timedelta(minutes=2)).messages == 2
    # The batch's one commit (no flush wait), the commit made to wait, then both told.
    assert told == [["off", "on"], ["off", "on"]]
