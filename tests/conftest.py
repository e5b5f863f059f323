"""Shared fixtures: a migrated store on every configured backend.

Store and daemon tests take the ``database_url`` fixture; they run on SQLite always and,
when ``DEALER_TEST_DATABASE_URL`` names a Postgres database, on Postgres too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import text

from dealer.store.db import make_engine, migrate

POSTGRES_URL = os.environ.get("DEALER_TEST_DATABASE_URL", "").strip()
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])


def _reset_postgres(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(params=BACKENDS)
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'dealer.db'}"
    _reset_postgres(POSTGRES_URL)
    return POSTGRES_URL


@pytest.fixture
def database_url(empty_database_url: str) -> str:
    """A migrated database on each backend."""
    engine = make_engine(empty_database_url)
    migrate(engine)
    engine.dispose()
    return empty_database_url
