"""`dealer discord commands`, `sync` and `check`'s slash-command lines, against the fake Discord."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dealer.cli import main
from fake_discord import GUILD_ID, FakeDiscord
from dealer.games.slash import payload

CHANNEL = 111111111111111111
ROUTES = f"#the-raceway=discord:channel/{CHANNEL};pm=discord:dm"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEALER_HOME", str(tmp_path))
    monkeypatch.delenv("DEALER_DISCORD_WEBHOOK_URL", raising=False)
    found = FakeDiscord().start()
    found.add_channel(CHANNEL)
    monkeypatch.setenv("DEALER_ROUTES", ROUTES)
    monkeypatch.setenv("DEALER_DISCORD_TOKEN", found.token)
    monkeypatch.setenv("DEALER_DISCORD_API_URL", found.api_url)
    yield found
    found.stop()


def run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_commands_print_the_payload_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEALER_DISCORD_API_URL", "http://127.0.0.1:9/nothing-listens-here")
    result = run("discord", "commands", "--json")
    assert result.exit_code == 0
    printed = json.loads(result.stdout)
    assert printed == payload()
    shown = run("discord", "commands").stdout.splitlines()
    assert any(line.startswith("/roulette prepare winning: [layout:] [game:]  — ") for line in shown)
    assert sum(len(c["options"]) for c in printed) == len(shown)


def test_sync_installs_per_routed_server_once_and_says_what_changed(fake: FakeDiscord) -> None:
    result = run("discord", "sync")
    assert result.exit_code == 0, result.stdout
    assert result.stdout == f"server {GUILD_ID}: added /roulette, added /races, added /hall, added /exoptosis\n"
    assert [c["name"] for c in fake.commands[str(GUILD_ID)]] == ["roulette", "races", "hall", "exoptosis"]
    puts = [r for r in fake.requests if r.method == "PUT"]
    assert [r.path for r in puts] == [f"/applications/900000000000000002/guilds/{GUILD_ID}/commands"]
    assert puts[0].body == payload()

    # Again: nothing differs, nothing is sent.
    assert run("discord", "sync").stdout == f"server {GUILD_ID}: unchanged\n"
    assert len([r for r in fake.requests if r.method == "PUT"]) == 1

    # A command changed on Discord's side (or by an older dealer) is put back.
    fake.commands[str(GUILD_ID)][0]["description"] = "old"
    assert run("discord", "sync").stdout == f"server {GUILD_ID}: changed /roulette\n"
    assert fake.commands[str(GUILD_ID)][0]["description"] == payload()[0]["description"]

    assert run("discord", "sync", "--global").stdout == \
        "everywhere: added /roulette, added /races, added /hall, added /exoptosis\n"
    assert len(fake.commands[None]) == 4
    assert run("discord", "sync", "--global", "--clear").stdout == \
        "everywhere: removed /roulette, removed /races, removed /hall, removed /exoptosis\n"
    assert fake.commands[None] == []


def test_check_says_whether_the_commands_are_installed_and_current(fake: FakeDiscord) -> None:
    lines = run("discord", "check").stdout.splitlines()
    assert any(line.startswith(f"NOTE     the slash commands in server {GUILD_ID} are not current (added /roulette")
               and line.endswith("`dealer discord sync`") for line in lines)
    run("discord", "sync")
    result = run("discord", "check")
    assert f"ok       the slash commands in server {GUILD_ID} are current" in result.stdout.splitlines()
    assert result.exit_code == 0, result.stdout


def test_sync_refuses_without_a_token(fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEALER_DISCORD_TOKEN", "wrong")
    result = run("discord", "sync")
    assert result.exit_code == 1
    assert "the slash commands were not installed: Discord refused the bot token (401)" in result.output
