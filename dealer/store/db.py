"""Opening the store, migrating it, and refusing to run on an out-of-date schema."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from sqlalchemy import Connection, Engine, create_engine, event, exc, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from dealer.store.direct import Direct, translated
from dealer.store.models import JsonText

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"

IDLE_PING = 5.0
"""Seconds a pooled server connection may sit unused before it is tested (a round trip)
when next taken from the pool (:func:`ping_when_idle`)."""


class SchemaOutOfDate(RuntimeError):
    """The database's schema is not the one this version of dealer needs."""


def normalise_url(url: str) -> str:
    """Use psycopg 3 for plain ``postgresql://`` URLs."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def json_dumps(value: Any) -> str:
    """How the store writes a JSON column's value: :func:`json.dumps`, unless the value
    is JSON text already (:class:`~dealer.store.models.JsonText`: a step's new state, its
    history events)."""
    return value.text if type(value) is JsonText else json.dumps(value)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created, WAL and foreign keys on."""
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30}, json_serializer=json_dumps)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            # Let SQLAlchemy, not pysqlite, decide when transactions begin (so SAVEPOINTs
            # work), and make every transaction take the write lock up front: two
            # processes never deadlock upgrading a read lock.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(connection):  # type: ignore[no-untyped-def]
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return _server_engine(url)


def _server_engine(url: Any, **options: Any) -> Engine:
    """An engine for a database server (Postgres): UTC sessions, idle connections tested."""
    engine = create_engine(url, json_serializer=json_dumps, **options)
    utc_sessions(engine)
    ping_when_idle(engine)
    return engine


def utc_sessions(engine: Engine) -> None:
    """Set each new Postgres connection's time zone to UTC (one statement a connection,
    when the pool opens it).

    The store's times are all UTC (:class:`~dealer.store.models.UtcDateTime`), and a
    session's zone is only how the server writes a time out, never which instant it is.
    psycopg returns a ``timestamptz`` in the session's zone: in any zone but ``UTC``
    itself (a server set to ``Etc/UTC`` too) it converts every time it reads to that zone,
    and the store converts it back (:func:`dealer.clock.as_utc`): two ``astimezone``
    calls a value, about 0.6 µs, for nothing. In ``UTC`` psycopg returns Python's
    ``timezone.utc`` and neither converts; the times a statement writes as JSON text (a
    locked game's pending deadlines) read ``+00:00`` whatever the server's zone.
    """

    @event.listens_for(engine, "connect")
    def _utc(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        dbapi_connection.execute("SET TIME ZONE 'UTC'")
        dbapi_connection.commit()


def ping_when_idle(engine: Engine) -> None:
    """Test a pooled connection before use if it sat unused for :data:`IDLE_PING` seconds;
    replace it, unused, if the server no longer answers on it.

    This is SQLAlchemy's ``pool_pre_ping`` for connections that have been idle: a busy
    daemon takes a connection from the pool several times per pass, and a ping each time
    was a round trip to the server each time (a sixth of a message's latency). A server
    that went away while a connection was idle (a restart, a failover, a proxy timing the
    connection out) is caught here; one that fails within the seconds a connection is in
    use fails the statement instead, which the daemon treats as any passing database
    error: the pass is rolled back and retried on a fresh connection
    (:func:`dealer.store.transient.is_transient`).
    """

    @event.listens_for(engine, "checkin")
    def _idle_from(_dbapi_connection, record):  # type: ignore[no-untyped-def]
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_connection, record, _proxy):  # type: ignore[no-untyped-def]
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < IDLE_PING:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            # The pool discards this connection and opens another (or fails, if the
            # server is down: the caller waits for it).
            raise exc.DisconnectionError(f"connection lost while idle: {error}") from error


@contextmanager
def pipelined(connection: Connection, *, commit: bool = False) -> Iterator[None]:
    """On Postgres, send the statements executed in the block without waiting for each
    one's result (psycopg's pipeline mode): the server runs them in order, and the block's
    end waits once for them all. Elsewhere the block runs as it is.

    Only for statements whose results nobody reads (a row count, a ``RETURNING``, an
    ``INSERT``'s implicit return of its new ids: build such an insert ``inline()``): in the
    block a statement's result is not there yet when ``execute`` returns. A statement the
    server refuses is raised at the block's end, or at a later statement of it, as
    SQLAlchemy raises any database error (an ``IntegrityError``, an ``OperationalError``),
    and a connection lost is invalidated as SQLAlchemy does (so that the error is seen as
    passing, :func:`dealer.store.transient.is_transient`, and the pool never hands that
    connection out again); the statements after a refused one are not run.

    With ``commit``, the transaction's ``COMMIT`` is sent after the block's statements,
    in their round trip: the block's end returns once the server committed (and, unless
    the transaction turned ``synchronous_commit`` off, flushed the commit to disk). The
    server's answer tells psycopg the transaction is over, so the commit SQLAlchemy is
    then asked for sends nothing (psycopg's ``commit`` does nothing outside a
    transaction). Only for a block that ends its transaction: a statement run after it
    would begin another. A commit refused is raised as a statement refused is (the
    transaction is then over, rolled back). Elsewhere (SQLite) the caller's commit does it.
    """
    if connection.dialect.name != "postgresql" or not psycopg.Pipeline.is_supported():
        yield
        return
    raw = connection.connection.dbapi_connection
    assert isinstance(raw, psycopg.Connection)
    try:
        with raw.pipeline():
            yield
            if commit:
                _COMMIT.execute(connection, {})
    except psycopg.Error as error:
        # Raised by the pipeline's end, outside any execute: translated as SQLAlchemy
        # translates an execute's errors.
        raise translated(connection, error) from error


_COMMIT = Direct(text("COMMIT"))
""":func:`pipelined`'s ``COMMIT``, sent as one of the block's statements."""


def read_connection(engine: Engine) -> Connection:
    """A connection of ``engine``'s own pool for a few reads that need no transaction of
    their own (a replay check, a post's target): in autocommit on Postgres, so that
    closing it rolls nothing back; on SQLite the plain connection.

    The pool rolls back a transaction left open on a connection returned to it, and
    psycopg, at every ``ROLLBACK``, drops every statement it prepared on that connection
    (it sends ``DEALLOCATE ALL``: it cannot tell what the rolled-back transaction changed).
    A read closed without a commit therefore cost the next passes on that connection
    their prepared statements: each parsed and planned again for its next five
    executions, 2-4 ms a pass (a webhook's replay check did it at every delivery). Use it
    for reads in the daemon's threads; :func:`reading_engine` is the daemon's reader (a
    second engine on SQLite, made once)."""
    connection = engine.connect()
    if engine.dialect.name == "postgresql":
        connection.execution_options(isolation_level="AUTOCOMMIT")
    return connection


def reading_engine(engine: Engine) -> Engine:
    """The daemon's engine for reads outside any transaction of its own: finding what is
    due, the next timer, the parked posts, a publisher reading the store while delivery's
    claim is open in the same thread. Made once for a daemon (a pool of its own: dispose
    it with ``engine``).

    On SQLite every transaction of ``engine`` takes the one write lock up front (``BEGIN
    IMMEDIATE``): a read through it would wait for (and hold back) every writer, and a
    second transaction in the same thread would wait for the first forever. A plain engine
    on the same file reads without taking it (each read sees what was committed; WAL lets
    readers past a writer).

    On Postgres its connections are in autocommit from the start: each statement sees
    what was committed, and no transaction is begun and rolled back around it (a round
    trip less). ``engine``'s own pool in autocommit did the same, but switched each
    connection into autocommit and back at every use: one connection more to the server,
    kept in this pool, saves that (0.02-0.09 ms a pass: the thirteenth round in
    bench/README.md's history).
    """
    if engine.dialect.name != "sqlite":
        return _server_engine(engine.url, isolation_level="AUTOCOMMIT")
    return create_engine(engine.url, connect_args={"timeout": 30}, json_serializer=json_dumps)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit."""
    return sessionmaker(engine, expire_on_commit=False)


def alembic_config(engine: Engine) -> Config:
    """An Alembic configuration bound to ``engine`` (no alembic.ini needed)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def migrate(engine: Engine) -> str:
    """Create or upgrade the schema to the newest revision; return that revision."""
    from alembic import command

    config = alembic_config(engine)
    command.upgrade(config, "head")
    return head_revision()


_REVISION = re.compile(r"""^(down_)?revision\s*(?::[^=]*)?=\s*(?:["']([^"']+)["']|None)\s*$""", re.M)
"""A migration file's ``revision = "0015"`` or ``down_revision = "0014"`` (or ``None``)."""


@cache
def head_revision() -> str:
    """The newest revision this version of dealer knows: the one no other migration revises.

    Read from the migration files' ``revision`` and ``down_revision`` lines rather than
    through Alembic, whose machinery (about a tenth of a second to import on a small
    machine, the migrations' modules loaded too) a daemon's start would otherwise pay
    before its first pass: a daemon restarted again and again gets further in each life
    (``tests/integration/test_migrations.py`` checks this agrees with Alembic).
    """
    revisions: dict[str, str | None] = {}
    for path in (MIGRATIONS / "versions").glob("*.py"):
        found = {bool(down): value for down, value in _REVISION.findall(path.read_text(encoding="utf-8"))}
        if False in found:
            revisions[found[False]] = found.get(True) or None
    heads = set(revisions) - set(revisions.values())
    if len(heads) != 1:
        raise RuntimeError(f"the migrations have {len(heads)} heads, not one: {sorted(heads)}")
    return heads.pop()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database): the row of Alembic's
    ``alembic_version`` table, read without loading Alembic (see :func:`head_revision`)."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return ",".join(sorted(versions)) or None


def check_schema(engine: Engine) -> None:
    """Raise :class:`SchemaOutOfDate` unless the database is at the newest revision."""
    current = current_revision(engine)
    head = head_revision()
    if current != head:
        found = "an empty database" if current is None else f"schema revision {current}"
        raise SchemaOutOfDate(
            f"The store has {found}, but this dealer needs revision {head}. "
            "Run `dealer migrate` to create or upgrade it."
        )
