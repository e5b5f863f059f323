"""Player names as forums and Discord have them: spaces, any script, matched without case,
width or spacing; look-alikes of an existing player refused."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def test_a_name_with_spaces_plays_a_whole_message_round_trip(cli) -> None:  # type: ignore[no-untyped-def]
    assert "player Thunder Bob added" in cli("player", "add", "  Thunder   Bob ", "--chips", "20").output
    cli("player", "add", "Zoë")
    shown = json.loads(cli("player", "show", "thunder\u00a0bob", "--json").output)
    assert (shown["name"], shown["chips"]) == ("Thunder Bob", 20)
    cli("grant", "THUNDER BOB", "chips", "5")
    cli("game", "new", "roulette", "--id", "r1", "--players", "Thunder Bob, zoë",
        "--start-in-past", "--start", "2026-12-01T12:00:00Z")
    game = json.loads(cli("game", "show", "r1", "--json").output)
    assert game["players"] == ["Thunder Bob", "Zoë"]
    # The forwarder writes the sender as the forum shows it: case and width do not matter.
    cli("submit", "--from", "ＴＨＵＮＤＥＲ bob", "--at", "2026-12-01T13:00:00Z",
        "prepare gold gold 30 silver 10")
    cli("run", "--once", "--now", "2026-12-01T13:05:00Z")
    posts = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(cli.outbox.glob("*.json"))]
    reply = [p for p in posts if p["recipient"] == "Thunder Bob"]
    assert len(reply) == 1 and "your preparation no. 1" in reply[0]["body"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ALICE", "a player called 'alice' already exists"),
        ("ａｌｉｃｅ", "a player called 'alice' already exists"),
        ("\u0430lice", "looks like the existing player 'alice'"),  # Cyrillic а
        ("AIice", "looks like the existing player 'alice'"),  # capital i for l
        ("Alicé", "looks like the existing player 'alice'"),
        ("Thunder\u2003Bob", "a player called 'Thunder Bob' already exists"),  # an em space
        ("Thunder B0b", "looks like the existing player 'Thunder Bob'"),
        ("ali\u200bce", "U+200B"),
        ("@everyone", "'@'"),
        ("Smith, John", "','"),
        ("", "cannot be empty"),
        ("n" * 65, "at most 64"),
    ],
)
def test_names_refused_and_why(cli, name: str, message: str) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "alice")
    cli("player", "add", "Thunder Bob")
    result = cli("player", "add", name, ok=False)
    assert result.exit_code != 0
    assert message in result.output


def test_a_look_alike_sender_is_not_the_player(harness) -> None:  # type: ignore[no-untyped-def]
    from dealer.shell.admin import add_player, create_game

    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    harness.send("\u0430lice", "add 3", T0 + timedelta(minutes=1))  # Cyrillic а
    harness.send("ALICE", "add 2", T0 + timedelta(minutes=1))
    harness.run(T0 + timedelta(minutes=2))
    from dealer.views import game_view

    assert harness.admin(lambda s: game_view(s, "t1"))["scores"]["alice"] == 2
    refused = harness.pms("\u0430lice")
    assert len(refused) == 1 and "not a registered player" in refused[0]["body"]


def test_markup_in_a_name_is_shown_never_applied(harness) -> None:  # type: ignore[no-untyped-def]
    from dealer.shell.admin import add_player, create_game

    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "**Star** <b>", T0)
        add_player(session, "bob", T0)
        create_game(session, "tally", "t1", T0, players=["**Star** <b>", "bob"])
    harness.admin(setup)
    harness.run(T0)
    opening = harness.public()[0]["body"]
    assert "\\*\\*Star\\*\\* \\<b\\>" in opening and "**Star**" not in opening
