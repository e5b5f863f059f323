"""The ``dealer`` command: admin commands, their JSON and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dealer.cli import main


def test_players_and_grants(cli) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "Alice", "--chips", "30", "--vertebrae", "7")
    cli("grant", "alice", "king of spades", "2")
    cli("grant", "alice", "holo 7H", "1")
    cli("grant", "alice", "handy pack", "1")
    cli("grant", "alice", "chips", "5")
    shown = json.loads(cli("player", "show", "ALICE", "--json").output)
    assert shown == {
        "name": "Alice", "chips": 35, "vertebrae": 7,
        "cards": ["7 of Hearts (holo)", "King of Spades", "King of Spades"],
        "packs": {"handy": 1}, "games": [],
    }
    assert "Alice: 35 chips, 7 vertebrae" in cli("player", "show", "alice").output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("player", "add", "alice"), "already exists"),
        (("player", "add", "bad\tname"), "not a valid player name"),
        (("player", "add", "ALICE"), "a player called 'alice' already exists"),
        (("player", "show", "nobody"), "there is no player 'nobody'"),
        (("grant", "alice", "dragon egg", "1"), "is no item"),
        (("grant", "alice", "chips", "0"), "positive whole number"),
        (("game", "new", "poker", "--id", "p1"), "unknown game kind 'poker'"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice"), "exactly 2 different players"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice,ghost"), "no player 'ghost'"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--set", "rounds=many"), "bad --set for roulette"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--set", "colour"), "KEY=VALUE"),
        (("game", "new", "roulette", "--id", "r 1", "--players", "alice,bob"), "not a valid game id"),
        (("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start-in-past", "--start", "soon"), "not an ISO time"),
        (("game", "show", "zz"), "there is no game 'zz'"),
    ],
)
def test_admin_errors_are_clear(cli, args, message) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "alice")
    cli("player", "add", "bob")
    result = cli(*args, ok=False)
    assert result.exit_code != 0
    assert message in result.output


def test_games_new_list_show(cli) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "alice", "--chips", "50")
    cli("player", "add", "bob", "--chips", "50")
    out = cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob",
                 "--start-in-past", "--start", "2026-12-01T10:00:00Z", "--set", "rounds=3").output
    assert "game r1 (Stationary Roulette) created" in out
    assert "r1  roulette" in cli("game", "list").output
    shown = json.loads(cli("game", "show", "r1", "--json").output)
    assert shown["id"] == "r1" and shown["kind"] == "roulette"
    assert shown["players"] == ["alice", "bob"] and shown["winner"] is None
    assert shown["scores"] == {"alice": 0, "bob": 0}
    assert shown["settings"]["rounds"] == 3
    assert {d["name"] for d in shown["deadlines"]} >= {"start"} or shown["status"] == "running"
    assert "deadline" in cli("game", "show", "r1").output
    cli("game", "new", "hall", "--id", "h1")
    listed = json.loads(cli("game", "list", "--json").output)
    assert {g["id"] for g in listed} == {"r1", "h1"}


def test_submit_writes_a_message_file(cli) -> None:  # type: ignore[no-untyped-def]
    cli("submit", "--from", "alice", "--game", "r1", "--at", "2026-12-01T10:00:00Z", "--id", "x1",
           "bet gold 20\\nprepare gold gold 30 silver 10")
    files = list(cli.inbox.glob("*.json"))
    assert len(files) == 1
    message = json.loads(files[0].read_text())
    assert message == {"id": "x1", "sender": "alice", "channel": "pm", "game": "r1",
                       "body": "bet gold 20\nprepare gold gold 30 silver 10",
                       "sent_at": "2026-12-01T10:00:00Z"}


def test_submit_writes_reactions_edits_and_deletions(cli) -> None:  # type: ignore[no-untyped-def]
    at = "2026-12-01T10:00:00Z"
    cli("submit", "--from", "bob", "--channel", "#proposals", "--at", at, "--id", "r1",
        "--react", "p1", "👍")
    cli("submit", "--from", "bob", "--at", at, "--id", "r2", "--react", "17", "--removed", "👎")
    cli("submit", "--from", "carol", "--at", at, "--id", "e1", "--edit", "p1", "new text")
    cli("submit", "--from", "carol", "--at", at, "--id", "d1", "--delete", "p1")
    found = {m["id"]: m for m in (json.loads(f.read_text()) for f in cli.inbox.glob("*.json"))}
    assert found["r1"] == {"id": "r1", "sender": "bob", "channel": "#proposals", "body": "",
                           "sent_at": at, "kind": "reaction", "target": "p1", "emoji": "👍"}
    assert (found["r2"]["target"], found["r2"]["emoji"], found["r2"]["removed"]) == ("17", "👎", True)
    assert (found["e1"]["kind"], found["e1"]["target"], found["e1"]["body"]) == ("edit", "p1", "new text")
    assert (found["d1"]["kind"], found["d1"]["target"], found["d1"]["body"]) == ("delete", "p1", "")
    assert "--removed goes with --react" in cli("submit", "--from", "bob", "--removed", "x", ok=False).output
    assert "one of --react, --edit" in cli("submit", "--from", "bob", "--react", "a", "--delete", "b",
                                           "x", ok=False).output
    assert "Missing argument" in cli("submit", "--from", "bob", ok=False).output
    assert len(found) == 4


def test_run_once_with_a_controlled_clock(cli) -> None:  # type: ignore[no-untyped-def]
    out = cli("run", "--once", "--now", "2026-12-01T10:00:00Z").output
    assert "ingested 0" in out
    assert cli("run", "--now", "2026-12-01T10:00:00Z", ok=False).exit_code == 2


def test_demo_plays_a_whole_game(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--database", str(tmp_path / "demo.db")], catch_exceptions=False)
    assert result.exit_code == 0
    assert "final result" in result.output
    assert "Final: finished, scores {'alice': 380, 'bob': 335}, winner alice." in result.output


def test_submit_refuses_an_id_that_cannot_name_a_file_and_leaves_nothing(cli) -> None:  # type: ignore[no-untyped-def]
    for bad in ("a/b", "../x", "a\\b", "x" * 201):
        result = cli("submit", "--from", "alice", "--id", bad, "bet gold 20", ok=False)
        assert result.exit_code == 2 and "cannot be part of a file name" in result.output
    assert not cli.inbox.exists() or list(cli.inbox.rglob("*")) == []


def test_submit_refuses_what_the_daemon_would_refuse(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("submit", "--from", " ", "bet gold 20", ok=False)
    assert result.exit_code == 1 and "the message would not be read: invalid message: sender" in result.output
    assert not cli.inbox.exists() or list(cli.inbox.rglob("*")) == []


def test_submit_leaves_no_temporary_file_when_the_rename_fails(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def refuse(self, target):  # type: ignore[no-untyped-def]
        raise PermissionError(13, "Permission denied", str(target))

    monkeypatch.setattr(Path, "replace", refuse)
    result = cli("submit", "--from", "alice", "--id", "x1", "bet gold 20", ok=False)
    assert result.exit_code == 1 and "DEALER_INBOX: cannot write into" in result.output
    assert list(cli.inbox.glob(".*")) == [] and list(cli.inbox.glob("*.json")) == []
