"""A Hall cycle's own inventories through the ``dealer`` command (GH-1, GH-8)."""

from __future__ import annotations

import json

import pytest


def show(cli, *args: str) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(cli(*args, "--json").output)


def test_player_show_and_grant_into_a_cycle(cli) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "alice", "--chips", "30", "--vertebrae", "60")  # won at roulette
    cli("player", "add", "bob")
    cli("game", "new", "hall", "--id", "h1", "--players", "alice", "--set", "starting_vertebrae=12")
    cycle = show(cli, "player", "show", "alice", "--game", "h1")
    assert cycle == {"name": "alice", "chips": 0, "vertebrae": 12, "cards": [], "packs": {},
                     "games": ["h1"], "game": "h1", "member": True}
    wallet = show(cli, "player", "show", "alice")
    assert set(wallet) < set(cycle)  # the same keys, plus game and member
    assert (wallet["chips"], wallet["vertebrae"]) == (30, 60)
    assert show(cli, "game", "show", "h1")["status"] == "running"  # 30 wallet chips won nothing

    out = cli("grant", "alice", "chips", "24", "--game", "h1").output
    assert "to alice in cycle h1; now holds 24 there" in out
    cli("grant", "alice", "king of spades", "2", "--game", "h1")
    game = show(cli, "game", "show", "h1")
    assert (game["status"], game["scores"]) == ("running", {"alice": 24})  # 24 < 25
    assert {"type": "admin.grant", "player": "alice", "item": "chips", "amount": 24}.items() \
        <= game["history"][-2].items()
    cli("grant", "alice", "chip", "1", "--game", "h1")  # 24 + 1 = 25: alice wins (GH-8)
    game = show(cli, "game", "show", "h1")
    assert (game["status"], game["winner"], game["scores"]) == ("finished", "alice", {"alice": 25})
    cycle = show(cli, "player", "show", "alice", "--game", "h1")
    assert (cycle["chips"], cycle["vertebrae"], cycle["cards"]) == (
        25, 12, ["King of Spades", "King of Spades"])
    wallet = show(cli, "player", "show", "alice")
    assert (wallet["chips"], wallet["vertebrae"], wallet["cards"]) == (30, 60, [])

    text = cli("player", "show", "bob", "--game", "h1").output
    assert text.startswith("bob in cycle h1 (has not joined it):\nbob: 0 chips, 0 vertebrae")
    assert show(cli, "player", "show", "bob", "--game", "h1")["member"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("player", "show", "alice", "--game", "nope"), "there is no game 'nope'"),
        (("grant", "alice", "chips", "1", "--game", "nope"), "there is no game 'nope'"),
        (("player", "show", "alice", "--game", "r1"),
         "game r1 is Stationary Roulette (roulette), which keeps no inventories of its own; "
         "--game names a Hall cycle (GH-1). Without --game, `player show` uses the player's wallet"),
        (("grant", "alice", "chips", "1", "--game", "r1"),
         "keeps no inventories of its own; --game names a Hall cycle (GH-1). Without --game, "
         "`grant` uses the player's wallet"),
        (("grant", "carol", "chips", "1", "--game", "h1"),
         "carol has not joined cycle h1: a player's inventory in a cycle starts when it joins (GH-1)"),
        (("grant", "alice", "chips", "0", "--game", "h1"), "positive whole number"),
    ],
)
def test_game_option_errors_are_clear(cli, args, message) -> None:  # type: ignore[no-untyped-def]
    for name in ("alice", "bob", "carol"):
        cli("player", "add", name, "--chips", "5")
    cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob")
    cli("game", "new", "hall", "--id", "h1", "--players", "alice,bob")
    result = cli(*args, ok=False)
    assert result.exit_code == 1 and message in result.output
    assert show(cli, "player", "show", "alice")["chips"] == 5  # nothing was granted
    assert show(cli, "player", "show", "carol")["chips"] == 5
