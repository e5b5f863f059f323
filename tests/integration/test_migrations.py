"""The migrations are the schema: migrating an empty database yields exactly the models."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from dealer.store.db import SchemaOutOfDate, check_schema, head_revision, make_engine, migrate
from dealer.store.models import Base

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def test_migrated_schema_matches_the_models(database_url: str) -> None:
    engine = make_engine(database_url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diff = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert diff == []


def test_an_empty_store_is_refused_with_a_hint_to_migrate(empty_database_url: str) -> None:
    engine = make_engine(empty_database_url)
    with pytest.raises(SchemaOutOfDate, match="dealer migrate"):
        check_schema(engine)
    migrate(engine)
    check_schema(engine)
    engine.dispose()


def test_migrating_twice_changes_nothing(database_url: str) -> None:
    engine = make_engine(database_url)
    assert migrate(engine) == migrate(engine)
    engine.dispose()


def test_players_of_an_older_store_get_their_look_alike_keys(empty_database_url: str) -> None:
    """Migration 0012 computes the look-alike keys of the players already there, so that a
    name looking like one of theirs is refused after the upgrade as before it."""
    from alembic import command
    from sqlalchemy import text

    from dealer.shell.admin import AdminError, add_player
    from dealer.store.db import alembic_config, session_factory
    from dealer.text import look_alike_keys

    engine = make_engine(empty_database_url)
    command.upgrade(alembic_config(engine), "0011")
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO players (key, name, created_at) VALUES "
                                "('alice', 'Alice', '2026-12-01 10:00:00+00:00'), "
                                "('bob 1', 'Bob 1', '2026-12-01 10:00:00+00:00')"))
    migrate(engine)
    with engine.connect() as connection:
        stored = set(connection.execute(text("SELECT key, player FROM player_look_alikes")).all())
    assert stored == {(k, "alice") for k in look_alike_keys("Alice")} | {(k, "bob 1") for k in look_alike_keys("Bob 1")}
    with session_factory(engine).begin() as session:
        with pytest.raises(AdminError, match="looks like the existing player 'Alice'"):
            add_player(session, "AIice", T0)  # a capital i
        with pytest.raises(AdminError, match="looks like the existing player 'Bob 1'"):
            add_player(session, "B0b l", T0)
        add_player(session, "Carol", T0)
    with engine.connect() as connection:
        assert {k for k, in connection.execute(text("SELECT key FROM player_look_alikes WHERE player = 'carol'"))} \
            == look_alike_keys("Carol")
    engine.dispose()


def test_the_schema_check_reads_the_revisions_as_alembic_does(empty_database_url: str) -> None:
    """The daemon's start checks the schema without loading Alembic (dealer.store.db
    reads the migration files and the version table itself): both answers agree with
    Alembic's own, at an empty store, an older revision and the newest."""
    from alembic import command
    from alembic.script import ScriptDirectory

    from dealer.store.db import alembic_config, current_revision, head_revision

    engine = make_engine(empty_database_url)
    config = alembic_config(engine)
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()

    def alembic_current() -> str | None:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

    assert current_revision(engine) is None and alembic_current() is None
    command.upgrade(config, "0011")
    assert current_revision(engine) == alembic_current() == "0011"
    with pytest.raises(SchemaOutOfDate, match="has schema revision 0011"):
        check_schema(engine)
    migrate(engine)
    assert current_revision(engine) == alembic_current() == head_revision()
    check_schema(engine)
    engine.dispose()


def test_migrate_tells_a_current_schema_without_loading_alembic(empty_database_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # `dealer migrate` runs before every start (deploy/): a restart of a current store is
    # not to pay for Alembic.
    probe = ("import sys\nfrom dealer.cli import main\nmain(['migrate'], standalone_mode=False)\n"
             "print('alembic loaded:', 'alembic' in sys.modules)\n")
    env = {**os.environ, "DEALER_DATABASE_URL": empty_database_url, "DEALER_HOME": str(tmp_path),
           "DEALER_DEADLINE_OVERRIDES": ""}

    def migrate_once() -> list[str]:
        done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    first = migrate_once()
    assert first[0].startswith("schema migrated from nothing to revision ") and first[1] == "alembic loaded: True"
    assert migrate_once() == [f"schema already at revision {head_revision()}", "alembic loaded: False"]
