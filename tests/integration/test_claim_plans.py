"""A claim of deadlines or messages by id reads them by id on SQLite, however many are
pending (issue 13): SQLite keeps no statistics, and its planner had taken the index on
``(status, ...)``, reading the entries of every pending row to find a group's 50.

SQLite only: the plan is SQLite's planner's choice (``queries.unindexed``); Postgres keeps
statistics and is given the plain condition."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine

from dealer.store import queries as Q
from dealer.store.db import make_engine


@pytest.fixture
def sqlite_engine(_migrated_sqlite: Path, tmp_path: Path) -> Engine:
    path = tmp_path / "dealer.db"
    shutil.copyfile(_migrated_sqlite, path)
    engine = make_engine(f"sqlite:///{path}")
    yield engine
    engine.dispose()


def plan_of(engine: Engine, statement: Any, parameters: dict[str, Any]) -> list[str]:
    """SQLite's plan (``EXPLAIN QUERY PLAN``) for ``statement`` as dealer sends it."""
    sent: list[tuple[str, Any]] = []

    def grab(_conn, _cursor, text, params, _context, _many):  # type: ignore[no-untyped-def]
        sent.append((text, params))

    with engine.connect() as connection:
        event.listen(connection, "before_cursor_execute", grab)
        connection.execute(statement, parameters).all()
        event.remove(connection, "before_cursor_execute", grab)
        text, params = sent[-1]
        return [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + text, params)]


@pytest.mark.parametrize("count", [1, 50])
def test_a_group_of_deadlines_is_locked_by_id(sqlite_engine: Engine, count: int) -> None:
    plan = plan_of(sqlite_engine, Q.LOCK_DEADLINES, {"ids": list(range(1, count + 1))})
    assert plan[0] == "SEARCH deadlines USING INTEGER PRIMARY KEY (rowid=?)", plan
    assert not any("ix_deadlines_due" in step for step in plan), plan


def test_a_single_deadline_is_locked_by_id(sqlite_engine: Engine) -> None:
    plan = plan_of(sqlite_engine, Q.LOCK_DEADLINE, {"ids": [7]})
    assert plan[0] == "SEARCH deadlines USING INTEGER PRIMARY KEY (rowid=?)", plan


@pytest.mark.parametrize("count", [1, 50])
def test_a_group_of_messages_is_claimed_by_id(sqlite_engine: Engine, count: int) -> None:
    plan = plan_of(sqlite_engine, Q.CLAIM_MESSAGES, {"ids": list(range(1, count + 1))})
    assert plan == ["SEARCH inbound USING INTEGER PRIMARY KEY (rowid=?)"], plan


def test_the_condition_on_status_still_holds(sqlite_engine: Engine) -> None:
    """``+status`` changes the plan, not the result: a deadline no longer pending is not
    locked, a pending one is."""
    with sqlite_engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO games (id, kind, status, channel, settings, state, created_at, "
            "updated_at, next_event_seq) VALUES ('g', 'tally', 'running', '#t', '{}', '{}', "
            "'2026-12-01 10:00:00', '2026-12-01 10:00:00', 1)"))
        for deadline_id, status in ((1, "pending"), (2, "fired"), (3, "cancelled"), (4, "pending")):
            connection.execute(text(
                "INSERT INTO deadlines (id, game_id, name, due_at, set_due_at, status, paused) "
                "VALUES (:id, 'g', :name, '2026-12-01 11:00:00', '2026-12-01 11:00:00', :status, 0)"),
                {"id": deadline_id, "name": f"d{deadline_id}", "status": status})
        locked = connection.execute(Q.LOCK_DEADLINES, {"ids": [1, 2, 3, 4]}).all()
    assert sorted(row.id for row in locked) == [1, 4]


def test_a_games_pause_is_looked_up_by_its_game(sqlite_engine: Engine) -> None:
    """A step's lock of its game asks whether an override pauses it: by the overrides of
    that game (index ``ix_overrides_game_id``), not by reading every override ever kept."""
    plan = plan_of(sqlite_engine, Q.LOCK_GAME, {"id": "g"})
    overrides = [step for step in plan if "overrides" in step]
    assert overrides == ["SEARCH overrides USING INDEX ix_overrides_game_id (game_id=?)"], plan
