"""A group's rows written with its ``COMMIT`` (:func:`dealer.store.direct.committed_at_once`:
psycopg's pipeline mode on Postgres, one round trip; a plain block on SQLite, the caller
commits), as a group of messages writes them (``unit_of_work.group(commit=True)``): they land
in order and committed, a refused statement raises as SQLAlchemy raises any database error
and commits nothing, and a connection lost in the block is a passing error on a connection
that is never handed out again."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterator

import pytest
from sqlalchemy import Engine, bindparam, select, text, update
from sqlalchemy import exc as sa_exc

from dealer.shell import unit_of_work
from dealer.shell.unit_of_work import StagedRows, StaleRows
from dealer.store import queries as Q
from dealer.store.db import make_engine, session_factory
from dealer.store.direct import committed_at_once
from dealer.store.models import Post
from dealer.store.transient import is_transient

T = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
_outbox = Post.__table__
INSERT_AGAIN = _outbox.insert().inline()
"""A second insert statement (the staged rows are grouped by statement)."""
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


def test_rows_written_with_the_commit_land_in_order_committed_in_their_round_trip(engine: Engine) -> None:
    # On Postgres another connection sees them as soon as the write returns, before
    # SQLAlchemy's own commit, which then sends nothing and fails nothing; the connection
    # goes on with transactions of its own. On SQLite the caller's commit does it.
    staged = StagedRows()
    staged.add(Q.INSERT_POSTS, [post("a"), post("b")])
    staged.add(DROP_BY_KEY, [{"k": "a"}])  # a row the statement before it inserted
    staged.add(INSERT_AGAIN, [post("c")])
    postgres = engine.dialect.name == "postgresql"
    with engine.connect() as connection:
        with connection.begin():
            with committed_at_once(connection):
                staged.write(connection)
            seen = outbox(engine) if postgres else None
        assert staged.rows == {}
        assert not postgres or seen == [("a", "dropped"), ("b", "pending"), ("c", "pending")]
        with connection.begin():
            connection.execute(Q.INSERT_POSTS, post("d"))
        with connection.begin() as transaction:
            connection.execute(Q.INSERT_POSTS, post("e"))
            transaction.rollback()
    assert outbox(engine) == [("a", "dropped"), ("b", "pending"), ("c", "pending"), ("d", "pending")]


def test_a_refused_row_written_with_the_commit_raises_and_commits_nothing(engine: Engine) -> None:
    staged = StagedRows()
    staged.add(Q.INSERT_POSTS, [post("a")])
    staged.add(INSERT_AGAIN, [post("a")])  # the same key: refused, the COMMIT after it is not run
    staged.add(DROP_BY_KEY, [{"k": "a"}])
    with pytest.raises(sa_exc.IntegrityError) as caught:
        with engine.begin() as connection:
            with committed_at_once(connection):
                staged.write(connection)
    assert not is_transient(caught.value)  # the data's fault: the same every time
    assert outbox(engine) == []
    with engine.begin() as connection:  # the engine goes on as before
        connection.execute(Q.INSERT_POSTS, post("b"))
    assert outbox(engine) == [("b", "pending")]


def test_a_group_with_a_counted_update_checks_it_before_anything_is_committed(engine: Engine) -> None:
    with pytest.raises(StaleRows, match="1 of 2 rows kept for outbox"):
        with session_factory(engine).begin() as session:
            with unit_of_work.group(session, commit=True) as unit:
                unit.add(Q.INSERT_POSTS, [post("a")])
                unit.staged.counted.add(DROP_BY_KEY)  # must change one row for each staged
                unit.staged.add(DROP_BY_KEY, [{"k": "a"}, {"k": "gone"}])
    assert outbox(engine) == []


def test_what_the_session_holds_is_committed_with_the_groups_rows(engine: Engine) -> None:
    both = [("orm", "pending"), ("staged", "pending")]
    with session_factory(engine).begin() as session:
        with unit_of_work.group(session, commit=True) as unit:
            session.add(Post(**post("orm")))  # flushed before the group's COMMIT
            unit.add(Q.INSERT_POSTS, [post("staged")])
        # On Postgres committed together by then (SQLite's reader would wait for the lock).
        assert engine.dialect.name != "postgresql" or sorted(outbox(engine)) == both
    assert sorted(outbox(engine)) == both


def test_a_connection_lost_in_the_block_is_passing_and_never_reused(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("pipeline mode is Postgres's: elsewhere the block runs each statement at once")
    admin = make_engine(engine.url.render_as_string(hide_password=False))
    try:
        connection = engine.connect()
        transaction = connection.begin()
        pid = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with pytest.raises(sa_exc.DBAPIError) as caught:
            with committed_at_once(connection):
                connection.execute(Q.INSERT_POSTS, post("a"))
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
    """A passing error other than a lost connection (a lock timeout, SQLSTATE 55P03) is
    raised at the block's end as SQLAlchemy's ``OperationalError``, seen as passing; the
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
                    with committed_at_once(connection):
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


def test_a_connection_left_in_pipeline_mode_is_dropped_not_reset(engine: Engine, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    """A cut met while the pipeline's results were pending leaves psycopg's connection in
    pipeline mode ("cannot exit pipeline mode while busy", the connection not yet seen lost):
    no rollback can run on it, and the pool logged a traceback at each such cut trying to.
    It is invalidated instead. (The state is made here as psycopg leaves it: the pipeline's
    exit raises with pipeline mode still on.)"""
    if engine.dialect.name != "postgresql":
        pytest.skip("pipeline mode is Postgres's")
    import contextlib
    import logging

    import psycopg

    @contextlib.contextmanager
    def stuck(self):  # type: ignore[no-untyped-def]
        yield
        self.pgconn.enter_pipeline_mode()
        raise psycopg.OperationalError("cannot exit pipeline mode while busy")

    connection = engine.connect()
    transaction = connection.begin()
    monkeypatch.setattr(psycopg.Connection, "pipeline", stuck)
    with pytest.raises(sa_exc.OperationalError):
        with committed_at_once(connection):
            pass
    monkeypatch.undo()
    assert connection.invalidated
    with caplog.at_level(logging.ERROR, logger="sqlalchemy.pool"):
        transaction.rollback()
        connection.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    with engine.begin() as fresh:  # the pool hands out a live connection
        assert fresh.execute(text("SELECT 1")).scalar_one() == 1
