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
    dealer("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start-in-past", "--start", "2026-12-01T10:00:00Z")
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


# -- the unit's sandbox, its user, the image and the compose file ----------------------------

SANDBOX = {
    "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
    "PrivateDevices": "yes", "PrivateUsers": "yes", "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes", "ProtectControlGroups": "yes", "RestrictNamespaces": "yes",
    "RestrictSUIDSGID": "yes", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
    "CapabilityBoundingSet": "", "SystemCallArchitectures": "native",
}


def test_the_unit_is_sandboxed_and_may_write_only_its_data_folder() -> None:
    service = unit()
    assert {key: service.get(key) for key in SANDBOX} == SANDBOX
    # ProtectSystem=strict makes everything read-only but the data folder the daemon owns.
    assert service["ReadWritePaths"] == f"{OPT}/var"
    assert service["UMask"] == "0027"


def test_systemd_rates_the_unit_under_3() -> None:
    import shutil
    import subprocess

    if shutil.which("systemd-analyze") is None:
        if os.environ.get("DEALER_TEST_REQUIRE_TOOLS"):  # .ci/run: never pass without it
            pytest.fail("systemd-analyze is not installed: .ci/run installs the systemd package")
        pytest.skip("systemd-analyze is not installed here (apt-get install systemd)")
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(DEPLOY / "dealer.service")],
        capture_output=True, text=True, timeout=60,
    )
    match = re.search(r"Overall exposure level for dealer\.service: ([0-9.]+)", result.stdout)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) < 3


def test_sysusers_and_tmpfiles_create_the_units_user_and_data_folder() -> None:
    service = unit()
    users = [line.split() for line in (DEPLOY / "dealer.sysusers").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    assert [(u[0], u[1]) for u in users] == [("u", service["User"])]
    assert service["Group"] == service["User"]  # sysusers' "u" makes the group of the same name
    folders = [line.split() for line in (DEPLOY / "dealer.tmpfiles").read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")]
    assert folders == [["d", service["ReadWritePaths"], "0750", service["User"], service["Group"], "-"]]
    text = (DEPLOY / "dealer.service").read_text(encoding="utf-8")
    assert "systemd-sysusers" in text and "systemd-tmpfiles --create" in text


def test_the_image_checks_its_health_and_owns_its_volume() -> None:
    lines = [line.strip() for line in (DEPLOY / "Containerfile").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    healthcheck = next(line for line in lines if line.startswith("HEALTHCHECK"))
    assert healthcheck.endswith('CMD ["dealer", "health"]')
    user = next(line for line in lines if line.startswith("USER "))
    assert user == "USER dealer"
    build = " ".join(lines)
    assert "--uid 10001" in build and "chown dealer:dealer /app/var" in build
    assert 'VOLUME ["/app/var"]' in lines and "ENV DEALER_HOME=/app/var" in lines
    # The compose file mounts a named volume there: it starts as the image's /app/var,
    # owned by the container's user, so the daemon can write it (a bind mount of a host
    # folder would be owned by a host user).
    compose = (DEPLOY / "compose.yaml").read_text(encoding="utf-8")
    mounts = re.findall(r"(?m)^\s+- (\S+):/app/var$", compose)
    assert mounts == ["dealer-data"]
    assert re.search(r"(?m)^volumes:\n(?:  \S+:\n)*  dealer-data:$", compose)


def test_dealer_health_under_the_shipped_unit(systemd: Settings) -> None:
    dealer("player", "add", "alice", "--chips", "100")
    dealer("player", "add", "bob", "--chips", "100")
    dealer("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start-in-past", "--start", "2026-12-01T10:00:00Z")
    dealer("run", "--once", "--now", "2026-12-01T10:00:00Z")
    assert dealer("health", "--now", "2026-12-01T10:00:30Z").strip() == "healthy"
    # The daemon stopped for a day: the preparation is overdue.
    late = CliRunner().invoke(main, ["health", "--now", "2026-12-02T10:05:00Z"])
    assert late.exit_code == 1 and "r1:preparation" in late.output


def _compose_service(compose: str, name: str) -> str:
    """The text of one service of the compose file (its indented block)."""
    match = re.search(rf"(?ms)^  {name}:\n(.*?)(?=^  \S|^\S|\Z)", compose)
    assert match, name
    return match.group(1)


def test_the_image_carries_every_platform_and_the_compose_file_publishes_its_ports() -> None:
    """Issue 34: the image had the metrics extra only, and nothing reached the webhook
    endpoint or the status page of the compose file's daemon."""
    import tomllib

    lines = [line.strip() for line in (DEPLOY / "Containerfile").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    build = " ".join(lines)
    extras = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    installed = re.search(r"pip install --no-cache-dir '\.\[([a-z,]+)\]'", build)
    assert installed, build
    assert set(installed.group(1).split(",")) == set(extras) - {"test"}
    env = dict(re.findall(r"ENV (DEALER_\w+)=(\S*)", build))
    # Inside a container the servers listen on every address, or nothing reaches them.
    assert env["DEALER_WEB_HOST"] == "0.0.0.0" and env["DEALER_WEB_PORT"] == "8080"
    assert env["DEALER_WEBHOOK_LISTEN"] == "0.0.0.0:8081"
    assert "EXPOSE 8080 8081" in lines
    service = _compose_service((DEPLOY / "compose.yaml").read_text(encoding="utf-8"), "dealer")
    assert re.findall(r'(?m)^\s+- "(\d+:\d+)"$', service) == ["8080:8080", "8081:8081"]
    assert re.search(r'(?m)^\s+DEALER_WEB: "true"$', service)
