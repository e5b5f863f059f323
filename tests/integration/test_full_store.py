"""A SQLite store whose disk fills under a running daemon loses no message (issue 36,
item 2).

Before: each pass logged "could not be stored", set the inbox files aside as if the
messages were at fault, and nothing came back once space was freed. Now a store that
cannot write stops ingest: the pass ends, every file stays in the inbox, ``dealer health``
says why, and once there is room again every message is stored, applied and answered.

The store is made full two ways: SQLite's own ``PRAGMA max_page_count`` (no privilege
needed), and, where the test runs as root, a real file system of 8 MiB (tmpfs, unmounted
after) filled to the last byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from dealer.health import check_health
from dealer.settings import Settings
from dealer.shell.admin import add_player, create_game
from dealer.shell.passes import Dealer
from dealer.shell.timers import keep_trying
from dealer.store.transient import cannot_write, is_transient

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
MESSAGES = 40


class Full:
    """Caps the SQLite file of a daemon's engines at its current size, until lifted."""

    def __init__(self, dealer: Dealer) -> None:
        self.dealer = dealer
        self.pages: int | None = None
        for engine in (dealer.engine, dealer.reader):
            event.listen(engine, "connect", self._cap)

    def _cap(self, connection: Any, _record: Any) -> None:
        if self.pages is not None:
            connection.execute(f"PRAGMA max_page_count = {self.pages}")

    def fill(self) -> None:
        with self.dealer.engine.connect() as connection:
            self.pages = connection.exec_driver_sql("PRAGMA page_count").scalar()
        self.dealer.dispose()

    def free(self) -> None:
        self.pages = None
        self.dealer.dispose()


def drop(inbox: Path, count: int) -> None:
    inbox.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        message = {"id": f"m{number:03d}", "sender": "alice", "channel": "#tally", "game": "t1",
                   "body": f"add {number % 10 + 1}\n" + "note " * 400, "sent_at": "2026-12-01T11:30:00Z"}
        (inbox / f"{number:03d}.json").write_text(json.dumps(message), encoding="utf-8")


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.json")) if folder.exists() else []


def start(database_url: str, root: Path) -> Dealer:
    settings = Settings(home=str(root), database_url=database_url, _env_file=None,
                        inbox=f"dir:{root / 'inbox'}", publish=f"dir:{root / 'outbox'}")
    dealer = Dealer(settings)
    with dealer.sessions.begin() as session:
        add_player(session, "alice", T0 - timedelta(hours=2))
        add_player(session, "bob", T0 - timedelta(hours=2))
        create_game(session, "tally", "t1", T0 - timedelta(hours=1), players=["alice", "bob"],
                    settings={"length": "4h"})
    dealer.run_pass(T0 - timedelta(minutes=50))
    return dealer


def assert_nothing_lost(dealer: Dealer, root: Path) -> None:
    """Every message stored and applied, the tally the sum of all of them, none set aside."""
    report = dealer.run_pass(T0 + timedelta(minutes=2))
    assert (report.ingested, report.unreadable, report.messages) == (MESSAGES, 0, MESSAGES)
    assert files(root / "inbox") == [] and files(root / "inbox" / "rejected") == []
    assert len(files(root / "inbox" / "processed")) == MESSAGES
    from dealer.views import game_view

    with dealer.sessions() as session:
        shown = game_view(session, "t1")
    assert shown["scores"]["alice"] == sum(number % 10 + 1 for number in range(MESSAGES))
    assert check_health(dealer.engine, T0 + timedelta(minutes=2)).ok


def test_a_full_sqlite_store_stops_ingest_and_loses_nothing(_migrated_sqlite: Path, tmp_path: Path) -> None:
    shutil.copyfile(_migrated_sqlite, tmp_path / "dealer.db")
    dealer = start(f"sqlite:///{tmp_path / 'dealer.db'}", tmp_path)
    full = Full(dealer)
    try:
        full.fill()
        drop(tmp_path / "inbox", MESSAGES)
        for minute in (0, 1):  # the daemon's loop tries again and again meanwhile
            with pytest.raises(OperationalError) as raised:
                dealer.run_pass(T0 + timedelta(minutes=minute))
            assert is_transient(raised.value) and cannot_write(raised.value)
        assert len(files(tmp_path / "inbox")) == MESSAGES
        assert files(tmp_path / "inbox" / "processed") == files(tmp_path / "inbox" / "rejected") == []
        health = check_health(dealer.engine, T0 + timedelta(minutes=1))
        assert any("the store is full" in problem and "wait in the inbox" in problem
                   for problem in health.problems)
        full.free()
        assert_nothing_lost(dealer, tmp_path)
    finally:
        dealer.dispose()


def test_the_daemon_loop_waits_for_room_and_says_why(_migrated_sqlite: Path, tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    shutil.copyfile(_migrated_sqlite, tmp_path / "dealer.db")
    dealer = start(f"sqlite:///{tmp_path / 'dealer.db'}", tmp_path)
    full = Full(dealer)
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the loop's wait: space is freed after the third try
        waits.append(seconds)
        if len(waits) == 3:
            full.free()

    dealer.sleep = sleep  # type: ignore[method-assign]
    try:
        full.fill()
        drop(tmp_path / "inbox", MESSAGES)
        report = keep_trying(dealer, lambda: dealer.run_pass(T0 + timedelta(minutes=2)), any_error=True)
        assert waits == [1.0, 2.0, 4.0]
        assert (report.ingested, report.messages, report.unreadable) == (MESSAGES, MESSAGES, 0)
        assert caplog.text.count("the store cannot write") == 3
        assert files(tmp_path / "inbox" / "rejected") == []
    finally:
        dealer.dispose()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs, unmounted at the end (root only; skipped where it cannot be made)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small file system needs root")
    where = tmp_path / "small"
    where.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"tmpfs cannot be mounted here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_real_full_disk_loses_nothing(_migrated_sqlite: Path, tmp_path: Path, small_disk: Path) -> None:
    shutil.copyfile(_migrated_sqlite, small_disk / "dealer.db")
    dealer = start(f"sqlite:///{small_disk / 'dealer.db'}", tmp_path)
    filler = small_disk / "filler"
    try:
        descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:  # every byte the file system has left
            while os.write(descriptor, b"\0" * 512):
                pass
        except OSError:
            pass
        finally:
            os.close(descriptor)
        drop(tmp_path / "inbox", MESSAGES)
        with pytest.raises(OperationalError) as raised:
            dealer.run_pass(T0)
        assert is_transient(raised.value)
        assert len(files(tmp_path / "inbox")) == MESSAGES
        assert files(tmp_path / "inbox" / "rejected") == []
        health = check_health(dealer.engine, T0)
        assert any("bytes free" in problem for problem in health.problems)
        filler.unlink()
        dealer.dispose()
        assert_nothing_lost(dealer, tmp_path)
    finally:
        dealer.dispose()
