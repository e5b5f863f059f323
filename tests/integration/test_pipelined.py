"""Rows written without waiting for each statement's result (:func:`dealer.store.db.pipelined`:
psycopg's pipeline mode on Postgres, a plain block on SQLite), as a group's kept rows are
(:meth:`dealer.shell.unit_of_work.StagedRows.write`): they land in order, a refused statement
raises as SQLAlchemy raises any database error, and a connection lost inside the block is
a passing error on a connection that is never handed out again."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterator

import pytest
from sqlalchemy import Engine, bindparam, select, text, update
from sqlalchemy import exc as sa_exc

from dealer.shell.unit_of_work import StagedRows, StaleRows
from dealer.store import queries as Q
from dealer.store.db import make_engine, pipelined
from dealer.store.models import Post
from dealer.store.transient import is_transient

T = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
_outbox = Post.__table__
INSERT_AGAIN = _outbox.insert().inline()
"""A second insert statement (the kept rows are grouped by statement)."""
DROP_BY_KEY = update(_outbox).where(_outbox.c.key == bindparam("k")).values(status="dropped")


def post(key: str) -> dict[str, Any]:
    return dict(key=key, game_id=None, channel="pm", recipient="ann", kind="reply",
                subject="s", body="b", created_at=T, status="pending", attempts=0)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def outbox(engine: Any) -> list[tuple[str, str]]:
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(
            select(_outbox.c.key, _outbox.c.status).order_by(_outbox.c.id))]


def test_kept_rows_are_written_in_the_order_first_kept(engine: Engine) -> None:
    staged = StagedRows()
    staged.add(Q.INSERT_POSTS, [post("a"), post("b")])
    # An update of a row inserted by the statement before it, in the same round trip.
    staged.add(DROP_BY_KEY, [{"k": "a"}])
    staged.add(INSERT_AGAIN, [post("c")])
    with engine.begin() as connection:
        staged.write(connection)
    assert staged.rows == {}
    assert outbox(engine) == [("a", "dropped"), ("b", "pending"), ("c", "pending")]


def test_a_refused_row_raises_an_integrity_error_and_nothing_is_written(engine: Engine) -> None:
    staged = StagedRows()
    staged.add(Q.INSERT_POSTS, [post("a")])
    staged.add(INSERT_AGAIN, [post("a")])  # the same key: the outbox's unique key refuses it
    staged.add(DROP_BY_KEY, [{"k": "a"}])
    with pytest.raises(sa_exc.IntegrityError) as caught:
        with engine.begin() as connection:
            staged.write(connection)
    assert not is_transient(caught.value)  # the data's fault: the same every time
    assert outbox(engine) == []
    with engine.begin() as connection:  # the engine goes on as before
        StagedRows().write(connection)
        connection.execute(Q.INSERT_POSTS, post("b"))
    assert outbox(engine) == [("b", "pending")]


def test_a_counted_update_still_checks_its_rows_between_pipelined_ones(engine: Engine) -> None:
    staged = StagedRows()
    staged.add(Q.INSERT_POSTS, [post("a")])
    staged.counted.add(DROP_BY_KEY)  # must change one row for each kept
    staged.add(DROP_BY_KEY, [{"k": "a"}, {"k": "gone"}])
    staged.add(INSERT_AGAIN, [post("c")])
    with pytest.raises(StaleRows, match="1 of 2 rows kept for outbox"):
        with engine.begin() as connection:
            staged.write(connection)
    assert outbox(engine) == []


def test_a_connection_lost_in_the_block_is_passing_and_never_reused(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("pipeline mode is Postgres's: elsewhere the block runs each statement at once")
    admin = make_engine(engine.url.render_as_string(hide_password=False))
    try:
        connection = engine.connect()
        transaction = connection.begin()
        pid = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with pytest.raises(sa_exc.DBAPIError) as caught:
            with pipelined(connection):
                connection.execute(Q.INSERT_POSTS, post("a"))
                connection.execute(INSERT_AGAIN, post("b"))
                # Lost after the block's last statement: the loss is met at its end.
                with admin.begin() as other:  # waits (up to 5 s) for the backend to end
                    assert other.execute(text("SELECT pg_terminate_backend(:pid, 5000)"),
                                         {"pid": pid}).scalar_one()
        assert caught.value.connection_invalidated
        assert is_transient(caught.value)
        assert connection.invalidated
        transaction.rollback()
        connection.close()
        with engine.begin() as fresh:  # the pool hands out a live connection
            assert fresh.execute(text("SELECT pg_backend_pid()")).scalar_one() != pid
        assert outbox(engine) == []
    finally:
        admin.dispose()


def test_a_lock_timeout_in_the_block_is_passing(engine: Engine) -> None:
    """A passing error other than a lost connection (here a lock timeout, SQLSTATE 55P03)
    is raised at the block's end as SQLAlchemy's ``OperationalError``, seen as passing; the
    connection stays usable once its transaction is rolled back."""
    if engine.dialect.name != "postgresql":
        pytest.skip("pipeline mode is Postgres's: elsewhere the block runs each statement at once")
    with engine.begin() as connection:
        connection.execute(Q.INSERT_POSTS, post("a"))
    holder = engine.connect()
    try:
        with holder.begin():
            holder.execute(DROP_BY_KEY, {"k": "a"})  # holds the row's lock until rolled back
            with pytest.raises(sa_exc.OperationalError) as caught:
                with engine.begin() as connection:
                    connection.execute(text("SET LOCAL lock_timeout = '50ms'"))
                    with pipelined(connection):
                        connection.execute(INSERT_AGAIN, post("b"))
                        connection.execute(DROP_BY_KEY, {"k": "a"})  # waits, then times out
            assert getattr(caught.value.orig, "sqlstate", None) == "55P03"
            assert not caught.value.connection_invalidated
            assert is_transient(caught.value)
            holder.rollback()
    finally:
        holder.close()
    assert outbox(engine) == [("a", "pending")]
    with engine.begin() as connection:  # the pool's connections are all usable
        connection.execute(DROP_BY_KEY, {"k": "a"})
    assert outbox(engine) == [("a", "dropped")]


def test_outside_postgres_the_block_runs_each_statement_at_once(tmp_path: Any) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'plain.db'}")
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE t (n INTEGER)"))
            with pipelined(connection):
                # The row count is there at once: nothing waits for the block's end.
                assert connection.execute(text("INSERT INTO t VALUES (1), (2)")).rowcount == 2
    finally:
        engine.dispose()


def test_kept_rows_written_with_the_commit_are_committed_in_their_round_trip(engine: Engine) -> None:
    # On Postgres the COMMIT goes with the rows: another connection sees them as soon as
    # the write returns, before SQLAlchemy's own commit, which then sends nothing and
    # fails nothing; the connection goes on with a transaction of its own. On SQLite the
    # caller's commit does it.
    staged = StagedRows()
    staged.add(Q.INSERT_POSTS, [post("a")])
    staged.add(INSERT_AGAIN, [post("b")])
    postgres = engine.dialect.name == "postgresql"
    with engine.connect() as connection:
        with connection.begin():
            staged.write(connection, commit=True)
            seen = outbox(engine) if postgres else None
        assert not postgres or seen == [("a", "pending"), ("b", "pending")]
        with connection.begin():
            connection.execute(Q.INSERT_POSTS, post("c"))
        with connection.begin() as transaction:
            connection.execute(Q.INSERT_POSTS, post("d"))
            transaction.rollback()
    assert outbox(engine) == [("a", "pending"), ("b", "pending"), ("c", "pending")]


def test_a_refused_row_written_with_the_commit_leaves_nothing_committed(engine: Engine) -> None:
    staged = StagedRows()
    staged.add(Q.INSERT_POSTS, [post("a")])
    staged.add(INSERT_AGAIN, [post("a")])  # refused: the COMMIT after it is not run
    with pytest.raises(sa_exc.IntegrityError):
        with engine.begin() as connection:
            staged.write(connection, commit=True)
    assert outbox(engine) == []
    with engine.begin() as connection:
        connection.execute(Q.INSERT_POSTS, post("b"))
    assert outbox(engine) == [("b", "pending")]
