"""Shared fixtures: a migrated store on every configured backend.

Store and daemon tests take the ``database_url`` fixture; they run on SQLite always and,
when ``DEALER_TEST_DATABASE_URL`` names a Postgres database, on Postgres too.

The suite runs in parallel (pytest-xdist, ``-n`` in pyproject's ``addopts``): each worker
gets a Postgres database of its own, named after the configured one and the worker
(``test_gw0``, created when missing), and this module points ``DEALER_TEST_DATABASE_URL`` at
it before any test module reads it.

Migrating a store runs every Alembic revision (0.1-0.2 s), and hundreds of tests each want
a fresh one, so the migration runs once per test session and each test gets a copy: on
SQLite a copy of a migrated file; on Postgres the migrated schema with every table emptied
(``TRUNCATE ... RESTART IDENTITY``, so ids start at 1 as in a new store). A test that
changed the schema (dropped it, as the outage and status-page tests do) is noticed by the
schema's fingerprint, and the next test gets a freshly migrated schema instead.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sqlalchemy import Engine, make_url, text

from dealer.detail import BRIEF, FULL, PostDetail, post_detail, set_post_detail
from dealer.store.db import head_revision, make_engine, migrate

# The suite checks today's complete texts (the full detail) unless a test asks for brief
# posts (the ``brief`` fixture): the setting for every Settings() read in this process and
# in every `dealer` it starts, and the policy of the posts rendered here.
os.environ["DEALER_POST_DETAIL"] = FULL
set_post_detail(PostDetail(default=FULL))


@pytest.fixture(autouse=True)
def _post_detail():
    """Each test starts with the full detail and leaves it so (a daemon sets the policy
    from its settings)."""
    set_post_detail(PostDetail(default=FULL))
    yield
    set_post_detail(PostDetail(default=FULL))


@pytest.fixture
def brief(monkeypatch: pytest.MonkeyPatch):
    """Brief posts (the product's default): the setting and the policy in force; yields
    a function that also sets the status page's address (``DEALER_WEB_URL``)."""
    monkeypatch.setenv("DEALER_POST_DETAIL", BRIEF)

    def use(web_url: str = "") -> PostDetail:
        if web_url:
            monkeypatch.setenv("DEALER_WEB_URL", web_url)
        set_post_detail(PostDetail(default=BRIEF, web_url=web_url))
        return post_detail()

    use()
    return use


def _worker_database(url: str) -> str:
    """This xdist worker's own database beside ``url`` (``url`` itself outside xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not url or not worker:
        return url
    base = make_url(url)
    own = base.set(database=f"{base.database}_{worker}")
    engine = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        exists = connection.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": own.database}
        ).first()
        if not exists:
            connection.execute(text(f'CREATE DATABASE "{own.database}"'))
    engine.dispose()
    return own.render_as_string(hide_password=False)


POSTGRES_URL = _worker_database(os.environ.get("DEALER_TEST_DATABASE_URL", "").strip())
if POSTGRES_URL:
    os.environ["DEALER_TEST_DATABASE_URL"] = POSTGRES_URL
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])

_FINGERPRINT = text(
    "SELECT table_name, column_name, data_type, is_nullable, column_default"
    " FROM information_schema.columns WHERE table_schema = 'public'"
    " ORDER BY table_name, column_name"
)
_migrated_fingerprint: list[tuple[object, ...]] | None = None
"""The Postgres schema's fingerprint right after this session migrated it (None: unknown)."""


def _reset_postgres(url: str) -> None:
    global _migrated_fingerprint
    _migrated_fingerprint = None
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def _fingerprint(engine: Engine) -> list[tuple[object, ...]]:
    with engine.connect() as connection:
        version = connection.execute(text(
            "SELECT to_regclass('public.alembic_version') IS NOT NULL")).scalar_one()
        revisions = (
            [tuple(r) for r in connection.execute(text("SELECT version_num FROM alembic_version"))]
            if version else []
        )
        return revisions + [tuple(r) for r in connection.execute(_FINGERPRINT)]


def _fresh_postgres(url: str) -> None:
    """A migrated, empty schema: emptied if it is still the one this session migrated,
    else dropped and migrated again."""
    global _migrated_fingerprint
    engine = make_engine(url)
    try:
        if _migrated_fingerprint is not None and _fingerprint(engine) == _migrated_fingerprint:
            with engine.begin() as connection:
                tables = connection.execute(text(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                    " AND tablename <> 'alembic_version'")).scalars().all()
                connection.execute(text(
                    "TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " RESTART IDENTITY CASCADE"))
            return
        _reset_postgres(url)
        migrate(engine)
        _migrated_fingerprint = _fingerprint(engine)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite store, copied by each test that wants one."""
    path = tmp_path_factory.mktemp("template") / "dealer.db"
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    assert head_revision()
    engine.dispose()
    return path


@pytest.fixture(params=BACKENDS)
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'dealer.db'}"
    _reset_postgres(POSTGRES_URL)
    return POSTGRES_URL


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated database on each backend."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("_migrated_sqlite")
        path = tmp_path / "dealer.db"
        shutil.copyfile(template, path)
        return f"sqlite:///{path}"
    _fresh_postgres(POSTGRES_URL)
    return POSTGRES_URL
