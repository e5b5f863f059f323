"""Read views: ``dealer game list`` asks the store a fixed number of queries, however many
games there are, and shows each game's players and next deadline."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Iterator

from sqlalchemy import event

from dealer.shell.admin import add_player, create_game
from dealer.views import list_games

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


@contextmanager
def counted(engine) -> Iterator[list[str]]:  # type: ignore[no-untyped-def]
    """Every SQL statement the engine sends inside the block."""
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


def add_games(h, first: int, count: int) -> None:  # type: ignore[no-untyped-def]
    def add(session):  # type: ignore[no-untyped-def]
        for n in range(first, first + count):
            create_game(session, "tally", f"t{n:03d}", T0 + timedelta(minutes=n),
                        players=["alice", "bob"] if n % 2 else ["bob", "carol"])
    h.admin(add)


def statements_for_list(h) -> tuple[int, list[dict]]:  # type: ignore[no-untyped-def]
    with counted(h.dealer.engine) as statements:
        rows = h.admin(list_games)
    queries = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    return len(queries), rows


def test_game_list_issues_the_same_queries_for_2_games_as_for_20(harness) -> None:  # type: ignore[no-untyped-def]
    harness.admin(lambda s: [add_player(s, n, T0, chips=10) for n in ("alice", "bob", "carol")])
    add_games(harness, 0, 2)
    few, rows = statements_for_list(harness)
    assert len(rows) == 2
    add_games(harness, 2, 18)
    many, rows = statements_for_list(harness)
    assert len(rows) == 20
    assert many == few <= 3
    # What it shows: newest first, players sorted, the next pending deadline (the tally's close).
    assert [r["id"] for r in rows[:3]] == ["t019", "t018", "t017"]
    assert rows[0] == {
        "id": "t019", "kind": "tally", "status": "running", "players": ["alice", "bob"],
        "next_deadline": "2026-12-01T11:19:00Z",
    }
    assert rows[-1]["players"] == ["bob", "carol"]


def test_game_list_of_no_game_is_empty(harness) -> None:  # type: ignore[no-untyped-def]
    assert harness.admin(list_games) == []


def test_the_roulette_chart_ends_at_the_standings(harness) -> None:  # type: ignore[no-untyped-def]
    """Issue 34, item 5: a missed preparation (SR-10: the opponent earns 60 points) counted
    in the standings at once but on the chart only from the next resolved round. The chart's
    last point is the standings, whatever moved them since."""
    from dealer.views import game_page, game_view

    harness.admin(lambda s: [add_player(s, n, T0, chips=100) for n in ("alice", "bob")])
    harness.admin(lambda s: create_game(s, "roulette", "r1", T0, players=["alice", "bob"], start=T0))
    harness.send("alice", "prepare gold gold 30 silver 10", T0 + timedelta(minutes=5), game="r1")
    # bob prepares nothing: at the preparation deadline alice earns 60 (SR-10).
    harness.run(T0 + timedelta(days=1, minutes=1))
    scores = harness.admin(lambda s: game_view(s, "r1"))["scores"]
    assert scores == {"alice": 60, "bob": 0}
    page = harness.admin(lambda s: game_page(s, "r1"))["roulette"]
    assert page["series"][-1]["points"] == scores
    assert {line["player"]: line["last"] for line in page["chart"]["lines"] if line["figure"] == "points"} == scores
