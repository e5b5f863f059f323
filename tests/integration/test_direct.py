"""``store.direct.Direct``: a prebuilt statement run on the driver's cursor gives what
SQLAlchemy's own execution gives (rows, values, row counts, errors, events, the
transaction), on both stores."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, bindparam, event, exc, select, text

from dealer.store import queries as Q
from dealer.store.queries import claims
from dealer.store.db import make_engine
from dealer.store.direct import Direct
from dealer.store.models import Post
from dealer.store.transient import is_transient

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def engine(database_url: str):  # type: ignore[no-untyped-def]
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def post(n: int, **values: object) -> dict[str, object]:
    """An outbox row as a step stages it (``attempts`` left to its default)."""
    return {"key": f"k{n}", "game_id": None, "channel": "pm", "recipient": f"p{n}", "kind": "note",
            "subject": "s", "body": f"body {n}", "created_at": T0 + timedelta(seconds=n),
            "status": "pending", "stale_after": None, "ref": None, "mentions": [f"p{n}"], **values}


def test_rows_are_what_sqlalchemy_reads(engine) -> None:  # type: ignore[no-untyped-def]
    """Times (a ``UtcDateTime`` parsed back on SQLite), JSON values, literals' values."""
    with engine.begin() as connection:
        Direct(Q.INSERT_POSTS).execute(connection, [post(1), post(2), post(3, status="delivered")])
    statement = select(Post.__table__).where(Post.__table__.c.status == "pending").order_by(Post.__table__.c.id)
    with engine.connect() as connection:
        direct = Direct(statement).rows(connection)
        through = [tuple(row) for row in connection.execute(statement)]
    assert direct == through and len(direct) == 2
    assert direct[0][8] == T0 + timedelta(seconds=1) and direct[0][8].tzinfo is not None
    assert direct[1][-1] == ["p2"]


def test_a_pending_message_and_a_due_deadline_are_read_as_before(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO games (id, kind, status, channel, settings, state, created_at, updated_at, "
            "next_event_seq) VALUES ('g', 'tally', 'running', '#t', '{}', '{}', :at, :at, 1)"), {"at": T0})
        connection.execute(text(
            "INSERT INTO deadlines (game_id, name, due_at, set_due_at, status, paused) "
            "VALUES ('g', 'round', :at, :at, 'pending', false)"), {"at": T0 + timedelta(minutes=5)})
        connection.execute(Q.INSERT_MESSAGE, {
            "source": "dir", "external_id": "m1", "raw": "{}", "sender": "alice", "channel": "pm",
            "kind": "message", "body": "add 1", "sent_at": T0 + timedelta(minutes=1),
            "received_at": T0 + timedelta(minutes=1), "status": "pending"})
    parameters = {"now": T0 + timedelta(hours=1), "messages": 50, "deadlines": 50}
    with engine.connect() as connection:
        direct = Direct(claims._DUE).rows(connection, parameters)
        through = [tuple(row) for row in connection.execute(claims._DUE, parameters)]
    assert direct == through
    assert [(what, due) for what, _, due, _ in direct] == [
        ("deadline", T0 + timedelta(minutes=5)), ("message", T0 + timedelta(minutes=1))]


def test_an_update_counts_its_rows_and_the_events_see_each_statement(engine) -> None:  # type: ignore[no-untyped-def]
    sent: list[tuple[str, bool]] = []
    event.listen(engine, "before_cursor_execute",
                 lambda _c, _cursor, statement, _p, _x, many: sent.append((statement.split()[0], many)))
    update = Post.__table__.update().where(Post.__table__.c.key == bindparam("k")).values(status="delivered")
    with engine.begin() as connection:
        Direct(Q.INSERT_POSTS).execute(connection, [post(1), post(2)])
        assert Direct(update).execute(connection, {"k": "k1"}) == 1
        assert Direct(update).execute(connection, {"k": "nobody"}) == 0
        assert Direct(update).execute(connection, [{"k": "k1"}, {"k": "k2"}]) == 2
    assert [each for each in sent if each[0] != "BEGIN"] == [  # BEGIN: SQLite's BEGIN IMMEDIATE
        ("INSERT", True), ("UPDATE", False), ("UPDATE", False), ("UPDATE", True)]
    with engine.connect() as connection:
        assert connection.execute(text("SELECT status, attempts FROM outbox ORDER BY id")).all() == [
            ("delivered", 0), ("delivered", 0)]


def test_a_statement_runs_in_the_connections_transaction(engine) -> None:  # type: ignore[no-untyped-def]
    """Begun as SQLAlchemy begins one (SQLite's BEGIN IMMEDIATE: the write lock), rolled
    back with it."""
    begun: list[object] = []
    event.listen(engine, "begin", begun.append)
    with engine.connect() as connection:
        Direct(Q.INSERT_POSTS).execute(connection, [post(1)])
        assert connection.in_transaction() and len(begun) == 1
        connection.rollback()
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM outbox")).scalar_one() == 0


def test_a_refused_row_is_sqlalchemys_integrity_error(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.connect() as connection:
        Direct(Q.INSERT_POSTS).execute(connection, [post(1)])
        with pytest.raises(exc.IntegrityError) as raised:
            Direct(Q.INSERT_POSTS).execute(connection, [post(1)])
        assert "INSERT INTO outbox" in str(raised.value.statement)
        assert not is_transient(raised.value)
        connection.rollback()


def test_a_missing_parameter_is_named(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.connect() as connection:
        with pytest.raises(exc.ArgumentError, match="deadlines, now"):
            Direct(claims._DUE).rows(connection, {"messages": 1})


def test_what_sqlalchemy_renders_at_each_execution_is_refused(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.connect() as connection:
        with pytest.raises(ValueError, match="rendered at each execution"):
            Direct(select(Post.__table__.c.id).where(
                Post.__table__.c.id.in_(bindparam("ids", expanding=True)))).rows(connection, {"ids": [1]})


def test_a_connection_lost_is_invalidated_and_the_error_passes(engine, database_url: str) -> None:  # type: ignore[no-untyped-def]
    if not database_url.startswith("postgresql"):
        pytest.skip("a connection the server ends is Postgres's (SQLite has none)")
    with engine.connect() as connection:
        pid = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        connection.commit()
        with make_engine(database_url).connect() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(exc.DBAPIError) as raised:
            Direct(claims._DUE).rows(connection, {"now": T0, "messages": 1, "deadlines": 1})
        assert raised.value.connection_invalidated and is_transient(raised.value)
        assert connection.invalidated


def test_a_default_computed_at_each_execution_is_refused_and_no_rows_send_nothing(engine) -> None:  # type: ignore[no-untyped-def]
    table = Table("stamped", MetaData(), Column("id", Integer, primary_key=True),
                  Column("at", Integer, default=lambda: 1))
    with pytest.raises(ValueError, match="computed at each execution"):
        Direct(table.insert()).compiled(engine.dialect, {"id": 1})
    sent: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda _c, _cursor, statement, *_: sent.append(statement))
    with engine.begin() as connection:
        assert Direct(Q.INSERT_POSTS).execute(connection, []) == 0
    assert not [statement for statement in sent if statement.startswith("INSERT")]
