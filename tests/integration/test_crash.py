"""The daemon killed with SIGKILL at awkward moments loses nothing and posts nothing twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from dealer.shell.admin import add_player, create_game
from dealer.store.db import make_engine, session_factory

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Daemon:
    """Runs ``dealer`` as a real subprocess against a real store."""

    def __init__(self, database_url: str, root: Path):
        self.outbox = root / "outbox"
        self.inbox = root / "inbox"
        self.env = {
            **os.environ,
            "DEALER_DATABASE_URL": database_url,
            "DEALER_INBOX": f"dir:{self.inbox}",
            "DEALER_PUBLISH": f"dir:{self.outbox}",
            "DEALER_DEADLINE_OVERRIDES": "",
        }
        self.env.pop("DEALER_FAULT", None)
        self.cwd = root

    def __call__(self, *args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        if fault:
            env["DEALER_FAULT"] = fault
        return subprocess.run(
            [sys.executable, "-m", "dealer.cli", *args], env=env, cwd=self.cwd,
            capture_output=True, text=True, timeout=120,
        )

    def ok(self, *args: str) -> str:
        result = self(*args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def posts(self) -> list[dict]:  # type: ignore[type-arg]
        return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(self.outbox.glob("*.json"))]


@pytest.fixture
def daemon(database_url: str, tmp_path: Path) -> Daemon:
    # Set up in-process (quicker); only the daemon runs that get killed need a process.
    engine = make_engine(database_url)
    with session_factory(engine).begin() as session:
        add_player(session, "alice", T0, chips=100)
        add_player(session, "bob", T0, chips=100)
        create_game(session, "roulette", "r1", T0, players=["alice", "bob"], start=T0,
                    settings={"remind_before": ""})
    engine.dispose()
    return Daemon(database_url, tmp_path)


@pytest.mark.parametrize("fault", ["after-deadline-commit", "after-send"])
def test_sigkill_after_commit_publishes_each_post_exactly_once(daemon: Daemon, fault: str) -> None:
    daemon.ok("run", "--once", "--now", iso(T0))  # opening posts delivered
    before = len(daemon.posts())
    killed = daemon("run", "--once", "--now", iso(T0 + timedelta(days=1, minutes=1)), fault=fault)
    assert killed.returncode == -signal.SIGKILL
    # Killed after the deadline's transaction committed: its posts are queued, and either
    # none (after-deadline-commit) or exactly one (after-send) reached the outbox.
    assert len(daemon.posts()) == before + (1 if fault == "after-send" else 0)
    daemon.ok("run", "--once", "--now", iso(T0 + timedelta(days=1, minutes=2)))
    daemon.ok("run", "--once", "--now", iso(T0 + timedelta(days=1, minutes=3)))
    posts = daemon.posts()
    keys = [p["key"] for p in posts]
    assert len(keys) == len(set(keys)), "a post was published twice"
    new = [p["kind"] for p in posts[before:]]
    # The preparation deadline: both players missed it (SR-10), then round 1 starts.
    assert new.count("phase_start") == 1 and new.count("inactivity") >= 1
    game = json.loads(daemon.ok("game", "show", "r1", "--json"))
    assert [d["name"] for d in game["deadlines"]] == ["round-1"]


def test_the_daemon_refuses_an_out_of_date_schema(tmp_path: Path) -> None:
    d = Daemon(f"sqlite:///{tmp_path / 'empty.db'}", tmp_path)
    result = d("run", "--once")
    assert result.returncode == 1
    assert "Run `dealer migrate`" in result.stderr
    assert d("migrate").returncode == 0
    assert d("run", "--once").returncode == 0
