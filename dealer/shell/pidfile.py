"""The running daemon's pid file, so admin commands can wake it with SIGHUP; a pid file
nobody holds a lock on is stale, so a reused old pid is never signalled."""

from __future__ import annotations

import logging
import os
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - no advisory locks (and no SIGHUP) on Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)


@contextmanager
def pid_file(path: Path) -> Iterator[bool]:
    """Hold ``path`` with this process's id while the block runs; yield whether it did (another
    daemon holding it is left to be the one woken)."""
    if fcntl is None:
        yield False
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="ascii")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("another daemon holds %s; `dealer deadline` will wake that one", path)
            yield False
            return
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield True
        finally:
            path.unlink(missing_ok=True)
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


def running_daemon(path: Path) -> int | None:
    """The pid of the daemon holding ``path``, or None when no daemon runs."""
    if fcntl is None or not path.is_file():
        return None
    try:
        with open(path, encoding="ascii") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = handle.read().strip()
                return int(text) if text.isdigit() else None
            fcntl.flock(handle, fcntl.LOCK_UN)
            return None  # nobody holds it: a stale file
    except FileNotFoundError:  # the daemon stopped meanwhile
        return None


def wake_daemon(path: Path) -> str:
    """Send SIGHUP to the daemon holding ``path``; say what happened, in one line."""
    pid = running_daemon(path)
    if pid is None:
        return (
            f"no daemon is running (no live pid file at {path}); the change applies when "
            "`dealer run` or `dealer run --once` next runs"
        )
    try:
        os.kill(pid, signal.SIGHUP)
    except PermissionError:
        return (
            f"the daemon (pid {pid}) runs as another user and could not be signalled; it "
            "applies the change on its next pass, or at once after `systemctl reload dealer`"
        )
    except ProcessLookupError:
        return f"the daemon (pid {pid}) has just stopped; the change applies when it next runs"
    return f"signalled the daemon (pid {pid}, SIGHUP); it applies the change now"
