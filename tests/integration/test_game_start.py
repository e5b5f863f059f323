"""`dealer game new --start`: a start in the past spends chips at once, so it is refused
unless the host says so (issue 34, item 1)."""

from __future__ import annotations

import json
from datetime import timedelta

from freezegun import freeze_time

from dealer.clock import iso

NOW = "2026-12-04T06:00:00Z"


def _players(cli) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "alice", "--chips", "50")
    cli("player", "add", "bob", "--chips", "50")


def test_a_start_in_the_past_is_refused_and_creates_nothing(cli) -> None:  # type: ignore[no-untyped-def]
    _players(cli)
    with freeze_time(NOW):
        result = cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob",
                     "--start", "2020-01-01T00:00:00Z", ok=False)
    assert result.exit_code != 0
    assert "--start 2020-01-01 00:00 UTC is in the past" in result.output
    assert "--start-in-past" in result.output
    assert json.loads(cli("game", "list", "--json").output) == []
    assert json.loads(cli("player", "show", "alice", "--json").output)["chips"] == 50


def test_a_start_a_little_in_the_past_is_within_the_grace(cli) -> None:  # type: ignore[no-untyped-def]
    """A start typed a minute or two ago (the host's own "now") is taken: 5 minutes' grace."""
    _players(cli)
    with freeze_time(NOW):
        cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob",
            "--start", "2026-12-04T05:55:00Z")
    with freeze_time(NOW):
        result = cli("game", "new", "roulette", "--id", "r2", "--players", "alice,bob",
                     "--start", "2026-12-04T05:54:59Z", ok=False)
    assert "is in the past" in result.output


def test_the_host_may_start_a_game_in_the_past_explicitly(cli) -> None:  # type: ignore[no-untyped-def]
    _players(cli)
    with freeze_time(NOW):
        out = cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob",
                  "--start", "2026-12-01T10:00:00Z", "--start-in-past").output
    assert "game r1" in out
    view = json.loads(cli("game", "show", "r1", "--json").output)
    assert view["status"] == "running"


def test_a_start_in_the_future_needs_no_flag(cli) -> None:  # type: ignore[no-untyped-def]
    from dealer.clock import parse_time

    _players(cli)
    later = iso(parse_time(NOW) + timedelta(days=1))
    with freeze_time(NOW):
        cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start", later)
    assert json.loads(cli("game", "show", "r1", "--json").output)["status"] == "pending"


def test_game_show_says_what_a_game_without_a_deadline_waits_for(cli) -> None:  # type: ignore[no-untyped-def]
    """Issue 34, item 7: a table with no deadline says why (docs/RACES.md, "Waiting")."""
    with freeze_time(NOW):
        cli("game", "new", "races", "--id", "derby")
    view = json.loads(cli("game", "show", "derby", "--json").output)
    assert view["deadlines"] == []
    assert view["waiting"] == "the first `sit` (OR-1): the seating window starts then (OR-3)"
    out = cli("game", "show", "derby").output
    assert "waiting for: the first `sit` (OR-1): the seating window starts then (OR-3)" in out
