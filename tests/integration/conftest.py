"""Fixtures for store and daemon tests: a daemon on a real store with directory adapters."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import tally  # noqa: E402,F401  (registers the test ruleset "tally")
import board  # noqa: E402,F401  (registers the test rulesets "board" and "duel")

from dealer.clock import iso_exact  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402
from dealer.settings import Settings  # noqa: E402


class Harness:
    """A daemon plus helpers to drop messages and read posts."""

    def __init__(self, database_url: str, root: Path, **overrides: Any):
        self.root = root
        self.inbox_dir = root / "inbox"
        self.outbox_dir = root / "outbox"
        self.settings = Settings(
            home=str(root),
            database_url=database_url,
            inbox=f"dir:{self.inbox_dir}",
            publish=f"dir:{self.outbox_dir}",
            _env_file=None,
            **overrides,
        )
        self.dealer = Dealer(self.settings)
        self._n = 0

    def session(self):  # type: ignore[no-untyped-def]
        return self.dealer.sessions.begin()

    def send(self, sender: str, body: str, at: datetime, **fields: Any) -> str:
        """Drop a message file into the inbox; return its id."""
        self._n += 1
        ident = fields.pop("id", f"m{self._n:05d}")
        message = {"id": ident, "sender": sender, "channel": "pm", "body": body, "sent_at": iso_exact(at), **fields}
        (self.inbox_dir / f"{self._n:05d}-{ident}.json").write_text(json.dumps(message), encoding="utf-8")
        return ident

    def run(self, now: datetime):  # type: ignore[no-untyped-def]
        """One pass at ``now``."""
        return self.dealer.run_pass(now)

    def posts(self) -> list[dict[str, Any]]:
        """Every published post, in publication order."""
        return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(self.outbox_dir.glob("*.json"))]

    def pms(self, recipient: str) -> list[dict[str, Any]]:
        return [p for p in self.posts() if p["recipient"] == recipient]

    def public(self) -> list[dict[str, Any]]:
        return [p for p in self.posts() if p["recipient"] is None]

    def admin(self, fn: Callable[..., Any]) -> Any:
        with self.dealer.sessions.begin() as session:
            return fn(session)


@pytest.fixture
def harness(database_url: str, tmp_path: Path) -> Harness:
    h = Harness(database_url, tmp_path)
    yield h
    h.dealer.engine.dispose()
    h.dealer.reader.dispose()


@pytest.fixture
def make_harness(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    made: list[Harness] = []

    def make(**overrides: Any) -> Harness:
        h = Harness(database_url, tmp_path, **overrides)
        made.append(h)
        return h

    yield make
    for h in made:
        h.dealer.engine.dispose()
        h.dealer.reader.dispose()


@pytest.fixture
def cli(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``cli(*args)`` runs the ``dealer`` command in-process on the test store and folders.

    It asserts success unless ``ok=False``; ``cli.inbox`` and ``cli.outbox`` are the folders.
    """
    from click.testing import CliRunner

    from dealer.cli import main

    runner = CliRunner()
    env = {
        "DEALER_HOME": str(tmp_path),
        "DEALER_DATABASE_URL": database_url,
        "DEALER_INBOX": f"dir:{tmp_path / 'inbox'}",
        "DEALER_PUBLISH": f"dir:{tmp_path / 'outbox'}",
        "DEALER_DEADLINE_OVERRIDES": "",
    }

    def invoke(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        result = runner.invoke(main, list(args), env=env, catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    invoke.inbox = tmp_path / "inbox"  # type: ignore[attr-defined]
    invoke.outbox = tmp_path / "outbox"  # type: ignore[attr-defined]
    invoke.env = env  # type: ignore[attr-defined]
    return invoke
