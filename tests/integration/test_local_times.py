"""DEALER_TIMEZONE through the command and the daemon: posts show the game's zone beside UTC."""

from __future__ import annotations

import json

from freezegun import freeze_time

from dealer.render import set_timezone

NOW = "2026-12-04T06:00:00Z"


def test_posts_show_the_time_in_the_games_zone_beside_utc(cli) -> None:  # type: ignore[no-untyped-def]
    cli.env["DEALER_TIMEZONE"] = "Europe/Paris"
    try:
        cli("player", "add", "alice", "--chips", "50")
        cli("player", "add", "bob", "--chips", "50")
        with freeze_time(NOW):
            cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob")
            cli("run", "--once")
        bodies = [json.loads(p.read_text(encoding="utf-8"))["body"] for p in sorted(cli.outbox.glob("*.json"))]
        # The first round closes 24 h after the start: 06:00 UTC is 07:00 in Paris in winter.
        assert any("2026-12-05 06:00 UTC / 07:00 CET" in body for body in bodies), bodies
    finally:
        set_timezone("")


def test_an_unknown_zone_ends_the_command_with_one_line(cli) -> None:  # type: ignore[no-untyped-def]
    cli.env["DEALER_TIMEZONE"] = "Mars/Olympus"
    result = cli("game", "list", ok=False)
    assert result.exit_code == 1
    assert "DEALER_TIMEZONE" in result.output and "'Mars/Olympus' is not a known time zone" in result.output
