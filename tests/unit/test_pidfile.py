"""The daemon's pid file: held while it runs, never trusted when stale."""

from __future__ import annotations

import os
from pathlib import Path

from dealer.shell.pidfile import pid_file, running_daemon, wake_daemon


def test_the_pid_file_names_the_running_daemon_and_goes_away(tmp_path: Path) -> None:
    path = tmp_path / "var" / "dealer.pid"
    assert running_daemon(path) is None
    with pid_file(path) as held:
        assert held
        assert path.read_text() == f"{os.getpid()}\n"
        assert running_daemon(path) == os.getpid()
        with pid_file(path) as second:  # a second daemon on the same folder leaves it alone
            assert not second
        assert running_daemon(path) == os.getpid()
    assert not path.exists()
    assert running_daemon(path) is None


def test_a_stale_pid_file_is_not_trusted(tmp_path: Path) -> None:
    # A daemon killed hard leaves its file behind; nobody holds its lock, so no process
    # that happens to reuse the pid is ever signalled.
    path = tmp_path / "dealer.pid"
    path.write_text(f"{os.getpid()}\n")
    assert running_daemon(path) is None
    message = wake_daemon(path)
    assert message.startswith("no daemon is running")
    assert "`dealer run`" in message
