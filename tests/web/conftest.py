"""Fixtures of the status page's tests: a store holding a played game of each kind, on
every configured backend, built once per module (playing them takes a few seconds)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))

from played import Harness, play_all  # noqa: E402
from sqlalchemy import text  # noqa: E402

from dealer.store.db import make_engine, migrate  # noqa: E402

POSTGRES_URL = os.environ.get("DEALER_TEST_DATABASE_URL", "").strip()
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])


class Store:
    """The played store: its URL, a session factory and the harness that played it."""

    def __init__(self, url: str, root: Path) -> None:
        self.url = url
        self.harness = Harness(url, root)
        self.sessions = self.harness.dealer.sessions

    def read(self, fn: Any) -> Any:
        with self.sessions.begin() as session:
            return fn(session)


def _played(backend: str, root: Path) -> Iterator[Store]:
    if backend == "sqlite":
        url = f"sqlite:///{root / 'dealer.db'}"
    else:
        engine = make_engine(POSTGRES_URL)
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
        engine.dispose()
        url = POSTGRES_URL
    engine = make_engine(url)
    migrate(engine)
    engine.dispose()
    store = Store(url, root)
    play_all(store.harness)
    yield store
    store.harness.dealer.engine.dispose()


@pytest.fixture(scope="module", params=BACKENDS)
def played(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A played store on each backend."""
    yield from _played(request.param, tmp_path_factory.mktemp("played"))


@pytest.fixture(scope="module")
def played_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A played store on SQLite (the browser tests: the page, not the backend, is tested)."""
    yield from _played("sqlite", tmp_path_factory.mktemp("played"))
