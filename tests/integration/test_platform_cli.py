"""The platform commands: `dealer routes`, `dealer player link/unlink`, `dealer discord
check` (against the fake Discord), and the embedded default needing no platform library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dealer.cli import main
from fake_discord import FakeDiscord


@pytest.fixture
def env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    values = {"DEALER_HOME": str(tmp_path), "DEALER_DATABASE_URL": database_url, "DEALER_ROUTES": ""}
    for key in ("DEALER_DISCORD_TOKEN", "DEALER_DISCORD_WEBHOOK_URL", "DEALER_DISCORD_API_URL",
                "DEALER_DISCORD_GATEWAY_URL"):
        monkeypatch.delenv(key, raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return values


def run(*args: str, **env: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), env=env or None, catch_exceptions=False)


def test_routes_prints_the_table_and_checks_it(env: dict[str, str]) -> None:
    result = run("routes")
    assert result.exit_code == 0
    assert result.output.splitlines()[0].startswith("*  ->  dir:")
    result = run("routes", DEALER_ROUTES="#the-raceway=discord:channel/123456789012345678;pm=discord:dm")
    assert result.exit_code == 1
    assert "#the-raceway  ->  discord:channel/123456789012345678" in result.output
    assert "needs DEALER_DISCORD_TOKEN" in result.output
    result = run("routes", DEALER_ROUTES="#a=email:x")
    assert result.exit_code == 1
    assert "DEALER_ROUTES: #a: 'email:x': an e-mail destination is email, or email:LIST_ADDRESS" in result.output
    result = run("routes", DEALER_ROUTES="pm=email")
    assert result.exit_code == 1 and "pm: email needs DEALER_SMTP_SERVER" in result.output
    result = run("routes", DEALER_ROUTES="pm=email", DEALER_SMTP_SERVER="mail.example.org:587",
                 DEALER_EMAIL_FROM="dealer@example.org")
    assert result.exit_code == 0 and "pm  ->  email" in result.output


def test_player_link_and_unlink(env: dict[str, str]) -> None:
    assert run("player", "add", "Alice").exit_code == 0
    assert run("player", "add", "Bob").exit_code == 0
    result = run("player", "link", "alice", "discord:80351110224678912")
    assert result.exit_code == 0 and result.output == "discord:80351110224678912 linked to player Alice\n"
    result = run("player", "link", "Bob", "discord:80351110224678912")
    assert result.exit_code == 1 and "already linked to Alice" in result.output
    result = run("player", "link", "Bob", "discord:12")
    assert result.exit_code == 1 and "is not a Discord user id" in result.output
    result = run("player", "link", "Bob", "matrix:12")
    assert result.exit_code == 1 and "is not an account" in result.output
    result = run("player", "link", "Nobody", "discord:80351110224678913")
    assert result.exit_code == 1
    assert run("player", "unlink", "discord:80351110224678912").output == \
        "discord:80351110224678912 unlinked from player Alice\n"
    assert run("player", "link", "Bob", "discord:80351110224678912").exit_code == 0
    # An e-mail address is an account too, kept in lower case (docs/EMAIL.md).
    result = run("player", "link", "alice", "email:Alice@Example.org")
    assert result.exit_code == 0 and result.output == "email:alice@example.org linked to player Alice\n"
    result = run("player", "link", "Bob", "email:not-an-address")
    assert result.exit_code == 1 and "is not an e-mail address" in result.output


def test_discord_check_says_what_is_missing(env: dict[str, str]) -> None:
    fake = FakeDiscord(message_content_intent=False).start()
    try:
        fake.add_channel(111111111111111111)
        routes = "#the-raceway=discord:channel/111111111111111111;#gone=discord:channel/222222222222222222;pm=discord:dm"
        result = run("discord", "check", DEALER_ROUTES=routes, DEALER_DISCORD_TOKEN=fake.token,
                     DEALER_DISCORD_API_URL=fake.api_url)
        assert result.exit_code == 1
        lines = result.output.splitlines()
        assert "ok       dealer-moderator[discord] is installed" in lines
        assert any(line.startswith("ok       the token is the bot dealer") for line in lines)
        assert any(line.startswith("MISSING  the Message Content intent is off") for line in lines)
        assert "ok       #the-raceway: the bot sees channel channel-111111111111111111 (111111111111111111)" in lines
        assert any(line.startswith("MISSING  #gone: Discord does not know channel/222222222222222222 (404)") for line in lines)
        result = run("discord", "check", DEALER_ROUTES=routes, DEALER_DISCORD_TOKEN="wrong",
                     DEALER_DISCORD_API_URL=fake.api_url)
        assert "MISSING  the token: Discord refused the bot token (401)" in result.output
        fake.message_content_intent = True
        result = run("discord", "check", DEALER_ROUTES="#the-raceway=discord:channel/111111111111111111",
                     DEALER_DISCORD_TOKEN=fake.token, DEALER_DISCORD_API_URL=fake.api_url,
                     DEALER_DISCORD_WEBHOOK_URL=fake.webhook_url(111111111111111111))
        assert result.exit_code == 0, result.output
        assert "ok       the webhook posts in channel 111111111111111111" in result.output
    finally:
        fake.stop()


def test_the_embedded_default_loads_no_platform_library(env: dict[str, str], tmp_path: Path) -> None:
    """A pass with the directory inbox and outbox imports neither httpx nor discord.py."""
    script = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from dealer.cli import main\n"
        "r = CliRunner().invoke(main, ['migrate'])\n"
        "assert r.exit_code == 0, r.output\n"
        "r = CliRunner().invoke(main, ['run', '--once'])\n"
        "assert r.exit_code == 0, r.output\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'discord', 'aiohttp'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_run_refuses_routes_that_cannot_work(env: dict[str, str]) -> None:
    assert run("migrate").exit_code == 0
    result = run("run", "--once", DEALER_ROUTES="#the-raceway=discord:channel/123456789012345678")
    assert result.exit_code == 1
    assert "DEALER_ROUTES cannot work: #the-raceway: discord:channel/123456789012345678 needs " \
           "DEALER_DISCORD_TOKEN (the bot's token)" in result.output
    result = run("run", "--once", DEALER_ROUTES="#the-raceway=nowhere:x")
    assert result.exit_code == 1 and "DEALER_ROUTES: #the-raceway: 'nowhere:x': unknown destination" in result.output


@pytest.mark.parametrize(
    ("account", "why"),
    [
        ("email:bob@\u2060example.net", "invisible character U+2060"),
        ("email:bob\u200b@example.net", "invisible character U+200B"),
        ("email:b\u043eb@example.net", "'\u043e' (U+043E), which looks like 'o'"),  # Cyrillic о
        ("email:bob@ex\uff41mple.net", "'\uff41' (U+FF41), which looks like 'a'"),  # full width a
        ("discourse:\u0430lice", "'\u0430' (U+0430), which looks like 'a'"),
    ],
)
def test_player_link_refuses_invisible_and_look_alike_characters(env: dict[str, str], account: str, why: str) -> None:
    """Issue 34: an address pasted with an invisible character was linked and never matched."""
    assert run("player", "add", "bob").exit_code == 0
    result = run("player", "link", "bob", account)
    assert result.exit_code == 1
    assert why in result.output
    assert "type it again" in result.output
    assert run("player", "show", "bob", "--json").exit_code == 0
    assert run("player", "unlink", account).exit_code == 1  # nothing was linked
