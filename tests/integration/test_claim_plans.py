"""A claim of deadlines or messages by id reads them by id on SQLite, however many are
pending (issue 13): SQLite keeps no statistics, and its planner had taken the index on
``(status, ...)``, reading the entries of every pending row to find a group's 50.

SQLite only: the plan is SQLite's planner's choice (``queries.unindexed``); Postgres keeps
statistics and is given the plain condition. The last test runs on both stores: a step's
read of its members' balances is an index lookup on each, statistics or none
(``queries.equals_any``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from datetime import datetime, timezone
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from dealer.store import queries as Q
from dealer.store.queries import delivery, routing
from dealer.store.db import make_engine


@pytest.fixture
def sqlite_engine(_migrated_sqlite: Path, tmp_path: Path) -> Engine:
    path = tmp_path / "dealer.db"
    shutil.copyfile(_migrated_sqlite, path)
    engine = make_engine(f"sqlite:///{path}")
    yield engine
    engine.dispose()


def plan_of(engine: Engine, statement: Any, parameters: dict[str, Any]) -> list[str]:
    """The store's plan for ``statement`` as dealer sends it: SQLite's ``EXPLAIN QUERY
    PLAN`` lines, or Postgres's ``EXPLAIN`` lines."""
    sent: list[tuple[str, Any]] = []

    def grab(_conn, _cursor, text, params, _context, _many):  # type: ignore[no-untyped-def]
        sent.append((text, params))

    explain = "EXPLAIN " if engine.dialect.name == "postgresql" else "EXPLAIN QUERY PLAN "
    with engine.connect() as connection:
        event.listen(connection, "before_cursor_execute", grab)
        connection.execute(statement, parameters).all()
        event.remove(connection, "before_cursor_execute", grab)
        text, params = sent[-1]
        plan = [str(row[-1]) for row in connection.exec_driver_sql(explain + text, params)]
        connection.rollback()  # Postgres: the statement's row locks
        return plan


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
    plan = plan_of(sqlite_engine, Q.claim_messages(count).statement, {f"m{n}": n + 1 for n in range(count)})
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



def test_the_members_balances_are_looked_up_by_account_without_statistics(database_url: str) -> None:
    """``LOCK_GAME`` reads the balances of its game's members by account. On Postgres an
    ``IN`` list of expressions over the joined member is an ``OR`` no index serves, and
    with no statistics gathered yet (a new store) the planner read the whole holdings
    table for every step: ``= ANY (ARRAY[...])`` is looked up through the key whatever the
    statistics. Here 2,000 players' holdings, never analyzed."""
    engine = make_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO games (id, kind, status, channel, settings, state, created_at, "
                "updated_at, next_event_seq) VALUES ('g', 'tally', 'running', '#t', '{}', '{}', "
                "'2026-12-01 10:00:00', '2026-12-01 10:00:00', 1)"))
            connection.execute(text("INSERT INTO game_players (game_id, player) VALUES ('g', :p)"),
                               [{"p": "p0001"}, {"p": "p0002"}])
            connection.execute(text("INSERT INTO holdings (account, item, amount) VALUES (:a, 'chips', 1000)"),
                               [{"a": f"player:p{n:04d}"} for n in range(2000)])
        plan = plan_of(engine, Q.LOCK_GAME, {"id": "g"})
        with engine.connect() as connection:
            row = connection.execute(Q.LOCK_GAME, {"id": "g"}).one()
            connection.rollback()
        members = [line.strip() for line in plan if "member_holdings" in line]
        if engine.dialect.name == "postgresql":  # an index scan, or a bitmap scan of the key
            assert members and all("Seq Scan" not in line for line in members), plan
            at = next(n for n, line in enumerate(plan) if "member_holdings" in line)
            node = plan[at:next((n for n in range(at + 1, len(plan)) if "SubPlan" in plan[n]), len(plan))]
            assert any("pk_holdings" in line for line in node), plan
        else:
            assert members == ["SEARCH member_holdings USING INDEX sqlite_autoindex_holdings_1 "
                               "(account=? AND item=?) LEFT-JOIN"], plan
        assert sorted(tuple(each) for each in row.member_balances) == [
            ("p0001", "player:p0001", "chips", 1000), ("p0002", "player:p0002", "chips", 1000)]
    finally:
        engine.dispose()



def test_a_delivery_claims_first_page_locks_its_posts_by_id_and_reads_its_players_accounts_by_key(database_url: str) -> None:
    """Postgres reads a claim's first page, locks its posts and reads their players'
    accounts in one statement (``delivery._FIRST_PAGE_LOCKED``), on a store of 3,000 players'
    accounts, 5,000 delivered posts and 600 pending: the posts it locks are looked up by
    id (as an ``IN`` subquery, Postgres read every pending post to find them, every
    claim), the accounts through their index on the player, not read whole. (Before the
    store's first analyze the planner may read the accounts table whole instead, once a
    claim: it takes such a table for a few pages; as two ``IN`` lists, an ``OR``, it read
    them whole analyzed or not.)"""
    if not database_url.startswith("postgresql"):
        pytest.skip("the statement is Postgres's (SQLite reads the page, then the accounts)")
    engine = make_engine(database_url)
    try:
        with engine.begin() as connection:
            players = [{"k": f"p{n:04d}"} for n in range(3000)]
            connection.execute(text("INSERT INTO players (key, name, created_at) "
                                    "VALUES (:k, :k, '2026-12-01 10:00:00')"), players)
            connection.execute(text("INSERT INTO accounts (platform, account_id, player, linked_at) "
                                    "VALUES ('discord', :k, :k, '2026-12-01 10:00:00')"), players)
            connection.execute(text(
                "INSERT INTO outbox (key, channel, recipient, kind, subject, body, created_at, status, "
                "attempts) VALUES (:key, 'pm', :to, 'note', 's', 'b', '2026-12-01 10:00:00', :status, 0)"),
                [{"key": f"k{n}", "to": f"p{n % 3000:04d}", "status": "delivered" if n < 5000 else "pending"}
                 for n in range(5600)])
            connection.execute(text("ANALYZE accounts"))  # as autovacuum does once the tables grew
            connection.execute(text("ANALYZE outbox"))
        parameters = {"after": 0, "n": 51, "limit": 50, "now": datetime(2026, 12, 1, 11, tzinfo=timezone.utc)}
        plan = plan_of(engine, delivery._FIRST_PAGE_LOCKED, parameters)
        accounts = [line.strip() for line in plan if " on accounts" in line]
        assert accounts and all("Seq Scan" not in line for line in accounts), plan
        at = next(n for n, line in enumerate(plan) if "LockRows" in line)
        depth = len(plan[at]) - len(plan[at].lstrip())
        lock = plan[at:next((n for n in range(at + 1, len(plan))
                             if len(plan[n]) - len(plan[n].lstrip()) <= depth), len(plan))]
        scans = [line.strip() for line in lock if " on outbox" in line]
        assert scans and all("pk_outbox" in line for line in scans), plan
        with engine.connect() as connection:
            rows = connection.execute(delivery._FIRST_PAGE_LOCKED, parameters).all()
            connection.rollback()
        assert [row.locked_key for row in rows] == [f"k{n}" for n in range(5000, 5050)] + [None]
        assert sorted(tuple(each) for each in rows[0].accounts) == [
            (f"p{n:04d}", "discord", f"p{n:04d}") for n in range(2000, 2051)]
    finally:
        engine.dispose()


def _senders_store(engine: Engine) -> None:
    """3,000 games of two players each (6,000 players), their states 1.5 KB, never
    analyzed: a store whose senders' statement must look games up by id."""
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO players (key, name, created_at) "
                                "VALUES (:k, :k, '2026-12-01 10:00:00')"),
                           [{"k": f"p{n:04d}"} for n in range(6000)])
        connection.execute(text(
            "INSERT INTO games (id, kind, status, channel, settings, state, created_at, updated_at, "
            "next_event_seq) VALUES (:g, 'tally', 'running', '#t', '{}', :state, "
            "'2026-12-01 10:00:00', '2026-12-01 10:00:00', 1)"),
            [{"g": f"g{n:04d}", "state": '{"x": "' + "a" * 1500 + '"}'} for n in range(3000)])
        connection.execute(text("INSERT INTO game_players (game_id, player) VALUES (:g, :p)"),
                           [{"g": f"g{n // 2:04d}", "p": f"p{n:04d}"} for n in range(6000)])


def test_a_groups_senders_and_their_games_are_read_by_key_and_id(database_url: str) -> None:
    """A group reads its senders with their unfinished games and locks those games in one
    statement (a single step reads its sender, a group of deadlines locks its games): on a
    store of 3,000 games (their states 1.5 KB) never analyzed, each looks the games up by
    id, none reads them whole."""
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite plans by its own rules (its claims are checked above)")
    engine = make_engine(database_url)
    try:
        _senders_store(engine)
        keys = {"k0": "p0100", "k1": "p0101", "k2": "p0200"}
        senders = plan_of(engine, routing._players_with_games(3), keys)
        locking = plan_of(engine, routing._players_with_games(3, True), keys)
        locks = plan_of(engine, Q.lock_games(2), {"g0": "g0050", "g1": "g0100"})
        for plan in (senders, locking, locks):
            games = [line.strip() for line in plan if " on games" in line]
            assert games and all("Seq Scan" not in line for line in games), plan
        with Session(engine) as session:
            found = {key: [row.id for row in rows] for key, rows in Q.players_with_games(
                session, list(keys.values())).items()}
            session.rollback()
        assert found == {"p0100": ["g0050"], "p0101": ["g0050"], "p0200": ["g0100"]}
    finally:
        engine.dispose()
