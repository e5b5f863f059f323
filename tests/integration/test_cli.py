"""The ``dealer`` command: admin commands, their JSON and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dealer.cli import main


@pytest.fixture
def dealer(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    runner = CliRunner()
    env = {
        "DEALER_DATABASE_URL": database_url,
        "DEALER_INBOX": f"dir:{tmp_path / 'inbox'}",
        "DEALER_PUBLISH": f"dir:{tmp_path / 'outbox'}",
        "DEALER_DEADLINE_OVERRIDES": "",
    }

    def invoke(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        result = runner.invoke(main, list(args), env=env, catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    invoke.inbox = tmp_path / "inbox"  # type: ignore[attr-defined]
    return invoke


def test_players_and_grants(dealer) -> None:  # type: ignore[no-untyped-def]
    dealer("player", "add", "Alice", "--chips", "30", "--vertebrae", "7")
    dealer("grant", "alice", "king of spades", "2")
    dealer("grant", "alice", "holo 7H", "1")
    dealer("grant", "alice", "handy pack", "1")
    dealer("grant", "alice", "chips", "5")
    shown = json.loads(dealer("player", "show", "ALICE", "--json").output)
    assert shown == {
        "name": "Alice", "chips": 35, "vertebrae": 7,
        "cards": ["7 of Hearts (holo)", "King of Spades", "King of Spades"],
        "packs": {"handy": 1}, "games": [],
    }
    assert "Alice: 35 chips, 7 vertebrae" in dealer("player", "show", "alice").output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("player", "add", "alice"), "already exists"),
        (("player", "add", "bad name!"), "not a valid player name"),
        (("player", "show", "nobody"), "there is no player 'nobody'"),
        (("grant", "alice", "dragon egg", "1"), "is no item"),
        (("grant", "alice", "chips", "0"), "positive whole number"),
        (("game", "new", "poker", "--id", "p1"), "unknown game kind 'poker'"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice"), "exactly 2 different players"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice,ghost"), "no player 'ghost'"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--set", "rounds=many"), "bad --set for roulette"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--set", "colour"), "KEY=VALUE"),
        (("game", "new", "roulette", "--id", "r 1", "--players", "alice,bob"), "not a valid game id"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start", "soon"), "not an ISO time"),
        (("game", "show", "zz"), "there is no game 'zz'"),
    ],
)
def test_admin_errors_are_clear(dealer, args, message) -> None:  # type: ignore[no-untyped-def]
    dealer("player", "add", "alice")
    dealer("player", "add", "bob")
    result = dealer(*args, ok=False)
    assert result.exit_code != 0
    assert message in result.output


def test_games_new_list_show(dealer) -> None:  # type: ignore[no-untyped-def]
    dealer("player", "add", "alice", "--chips", "50")
    dealer("player", "add", "bob", "--chips", "50")
    out = dealer("game", "new", "roulette", "--id", "r1", "--players", "alice,bob",
                 "--start", "2026-12-01T10:00:00Z", "--set", "rounds=3").output
    assert "game r1 (Stationary Roulette) created" in out
    assert "r1  roulette" in dealer("game", "list").output
    shown = json.loads(dealer("game", "show", "r1", "--json").output)
    assert shown["id"] == "r1" and shown["kind"] == "roulette"
    assert shown["players"] == ["alice", "bob"] and shown["winner"] is None
    assert shown["scores"] == {"alice": 0, "bob": 0}
    assert shown["settings"]["rounds"] == 3
    assert {d["name"] for d in shown["deadlines"]} >= {"start"} or shown["status"] == "running"
    assert "deadline" in dealer("game", "show", "r1").output
    dealer("game", "new", "hall", "--id", "h1")
    listed = json.loads(dealer("game", "list", "--json").output)
    assert {g["id"] for g in listed} == {"r1", "h1"}


def test_submit_writes_a_message_file(dealer) -> None:  # type: ignore[no-untyped-def]
    dealer("submit", "--from", "alice", "--game", "r1", "--at", "2026-12-01T10:00:00Z", "--id", "x1",
           "bet gold 20\\nprepare gold gold 30 silver 10")
    files = list(dealer.inbox.glob("*.json"))
    assert len(files) == 1
    message = json.loads(files[0].read_text())
    assert message == {"id": "x1", "sender": "alice", "channel": "pm", "game": "r1",
                       "body": "bet gold 20\nprepare gold gold 30 silver 10",
                       "sent_at": "2026-12-01T10:00:00Z"}


def test_run_once_with_a_controlled_clock(dealer) -> None:  # type: ignore[no-untyped-def]
    out = dealer("run", "--once", "--now", "2026-12-01T10:00:00Z").output
    assert "ingested 0" in out
    assert dealer("run", "--now", "2026-12-01T10:00:00Z", ok=False).exit_code == 2


def test_demo_plays_a_whole_game(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--database", str(tmp_path / "demo.db")], catch_exceptions=False)
    assert result.exit_code == 0
    assert "final result" in result.output
    assert "Final: finished, scores {'alice': 380, 'bob': 335}, winner alice." in result.output
