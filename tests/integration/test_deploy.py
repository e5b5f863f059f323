"""The shipped systemd layout: deploy/dealer.service's EnvironmentFile= with
deploy/production.env in the process environment, as systemd starts the daemon.

Under that unit the variables sit in the process environment for good, so an override
must come from the overrides file: `dealer deadline` writes it and the daemon applies it
on its next pass, or at once when woken by the SIGHUP the command (or `systemctl
reload`) sends.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from dealer.cli import main
from dealer.clock import parse_time
from dealer.shell import timers
from dealer.shell.passes import Dealer
from dealer.shell.pidfile import pid_file
from dealer.settings import Settings

DEPLOY = Path(__file__).parents[2] / "deploy"
OPT = "/opt/dealer"


def unit() -> dict[str, str]:
    """The [Service] keys of the shipped unit."""
    keys, section = {}, None
    for line in (DEPLOY / "dealer.service").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            keys[key] = value
    return keys


def environment_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines as systemd's EnvironmentFile= reads them (comments and blanks skipped)."""
    pairs = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip().strip('"')
    return pairs


@pytest.fixture
def systemd(tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """/opt/dealer as the unit lays it out, under tmp_path, with the unit's environment."""
    service = unit()
    root = tmp_path / "opt-dealer"
    root.mkdir()

    def here(value: str) -> str:
        return value.replace(OPT, str(root))

    env_file = Path(here(service["EnvironmentFile"].lstrip("-")))
    text = here((DEPLOY / "production.env").read_text(encoding="utf-8"))
    text = re.sub(r"(?m)^DEALER_DATABASE_URL=.*$", f"DEALER_DATABASE_URL={database_url}", text)
    env_file.write_text(text, encoding="utf-8")  # "copy to /opt/dealer/.env"
    for name in list(os.environ):
        if name.upper().startswith("DEALER_"):
            monkeypatch.delenv(name)
    for key, value in environment_file(text).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(here(service["WorkingDirectory"]))
    settings = Settings()
    assert settings.env_file == env_file
    # The data folder is where the unit lets the daemon write.
    assert Path(settings.home).is_relative_to(here(service["ReadWritePaths"]))
    assert service["ExecReload"] == "/bin/kill -HUP $MAINPID"
    return settings


def dealer(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def preparation() -> str:
    view = json.loads(dealer("game", "show", "r1", "--json"))
    return {d["name"]: d["due_at"] for d in view["deadlines"]}["preparation"]


def test_dealer_deadline_reaches_the_daemon_under_the_shipped_unit(systemd: Settings) -> None:
    dealer("player", "add", "alice", "--chips", "100")
    dealer("player", "add", "bob", "--chips", "100")
    dealer("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start", "2026-12-01T10:00:00Z")
    dealer("run", "--once", "--now", "2026-12-01T10:00:00Z")
    assert preparation() == "2026-12-02T10:00:00Z"  # SR-1: 24 h

    # No daemon running: the change waits in the file for the next pass.
    out = dealer("deadline", "extend", "r1:preparation", "+12h")
    assert f"{systemd.home}/overrides.env: r1:preparation@" in out
    assert "no daemon is running" in out
    dealer("run", "--once", "--now", "2026-12-01T10:05:00Z")
    assert preparation() == "2026-12-02T22:00:00Z"

    # A running daemon (as `dealer run` under the unit: pid file, signal handlers) is woken.
    daemon = Dealer(Settings(), clock=lambda: parse_time("2026-12-01T10:10:00Z"))
    saved = {s: signal.getsignal(s) for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)}
    try:
        timers.install_signals(daemon)
        with pid_file(daemon.settings.pid_file):
            daemon.reload_requested = False
            out = dealer("deadline", "extend", "r1:preparation", "+1h")
            assert f"signalled the daemon (pid {os.getpid()}, SIGHUP)" in out
            assert daemon.reload_requested
            timers.reload_settings(daemon)  # what its loop does when woken: re-read, then a pass
            report = daemon.run_pass()
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
        daemon.engine.dispose()
    assert len(report.overrides) == 1
    assert report.overrides[0].endswith(": preparation 2026-12-02T22:00:00Z -> 2026-12-02T23:00:00Z")
    assert preparation() == "2026-12-02T23:00:00Z"
    assert not systemd.pid_file.exists()
