"""Opening the store, migrating it, and refusing to run on an out-of-date schema."""

from __future__ import annotations

import json
import re
import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, exc, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from dealer.store.models import JsonText

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"

IDLE_PING = 5.0
"""Seconds a pooled connection may sit unused before it is pinged when next taken."""


class SchemaOutOfDate(RuntimeError):
    """The database's schema is not the one this version of dealer needs."""


def normalise_url(url: str) -> str:
    """Use psycopg 3 for plain ``postgresql://`` URLs."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def json_dumps(value: Any) -> str:
    """:func:`json.dumps`, unless the value is JSON text already (:class:`JsonText`)."""
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
    """An engine for a database server (Postgres), its idle connections tested."""
    engine = create_engine(url, json_serializer=json_dumps, **options)
    ping_when_idle(engine)
    return engine


def ping_when_idle(engine: Engine) -> None:
    """``pool_pre_ping`` only for a connection idle :data:`IDLE_PING` seconds: a ping at every
    take cost a sixth of a message's latency; a server gone meanwhile fails the pass, retried."""

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


def read_connection(engine: Engine) -> Connection:
    """A connection of ``engine``'s pool for reads needing no transaction: autocommit on
    Postgres, as a rollback makes psycopg drop every prepared statement (2-4 ms a pass)."""
    connection = engine.connect()
    if engine.dialect.name == "postgresql":
        connection.execution_options(isolation_level="AUTOCOMMIT")
    return connection


def reading_engine(engine: Engine) -> Engine:
    """The daemon's engine for reads outside its transactions (what is due, the next timer, a
    publisher reading while delivery's claim is open); dispose it with ``engine``.

    On SQLite a plain engine on the file, which reads without ``engine``'s ``BEGIN IMMEDIATE``
    write lock; on Postgres a pool in autocommit from the start (no switch at every use)."""
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
    """The newest revision dealer knows, read from the migration files without Alembic (a tenth
    of a second of every start; ``test_migrations.py`` checks it agrees)."""
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
    """The database's revision (None when empty), read from ``alembic_version`` without Alembic."""
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
