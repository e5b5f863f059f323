"""The baseline a deadline burst is compared with: the same essential work, done inline.

Per game, in one transaction of its own: read the game's JSON state (locked on Postgres),
update it, mark its deadline fired, write two ledger rows, render two posts (Jinja2
templates shaped like the round result and the round start) and queue them, and insert
the next deadline row. No rules engine, no history, no fair source, no
routing: what a hand-written daemon would have to do at least, with prebuilt statements
on one connection. ``deadlines.py`` runs it beside dealer on the same kind of store
(a SQLite file of its own, or a schema of its own on the same Postgres) and prints both.

    .venv/bin/python bench/baseline.py --games 1000
    .venv/bin/python bench/baseline.py --games 1000 --database-url postgresql://postgres@127.0.0.1:5432/test_e
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from jinja2 import Environment
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine, make_url

T = datetime(2026, 12, 3, 10, 0, tzinfo=timezone.utc)

_JINJA = Environment(autoescape=False, trim_blocks=True, lstrip_blocks=True)
_RESULT = _JINJA.from_string(
    "**Stationary Roulette {{ game }}: round {{ round }} result**\n"
    "{% for r in roulettes %}"
    "{{ r.preparer }}'s roulette for {{ r.bettor }}: winning colour **{{ r.colour }}**; "
    "layout gold {{ r.gold }}, silver {{ r.silver }}, black {{ 40 - r.gold - r.silver }}.\n"
    "{{ r.bettor }} bet {% for colour, n in r.bet.items() %}{{ colour }} {{ n }} {% endfor %}\n"
    "- Total: {{ r.preparer }} +{{ r.points }}, {{ r.bettor }} pays {{ r.owed }} chips.\n"
    "{% endfor %}"
)
_START = _JINJA.from_string(
    "**Stationary Roulette {{ game }}: round {{ round }} opens**\n"
    "{% for p in players %}{{ p }}: prepare a roulette and bet before {{ ends }}.\n{% endfor %}"
)

_SCHEMA = [
    "CREATE TABLE bl_games (id VARCHAR(64) PRIMARY KEY, state TEXT NOT NULL)",
    "CREATE TABLE bl_deadlines (id INTEGER PRIMARY KEY {auto}, game_id VARCHAR(64) NOT NULL, "
    "name VARCHAR(64) NOT NULL, due_at TIMESTAMP NOT NULL, status VARCHAR(16) NOT NULL, "
    "fired_at TIMESTAMP)",
    "CREATE INDEX bl_deadlines_due ON bl_deadlines (status, due_at)",
    "CREATE TABLE bl_ledger (id INTEGER PRIMARY KEY {auto}, game_id VARCHAR(64) NOT NULL, "
    "source VARCHAR(120) NOT NULL, target VARCHAR(120) NOT NULL, amount INTEGER NOT NULL)",
    "CREATE TABLE bl_outbox (id INTEGER PRIMARY KEY {auto}, game_id VARCHAR(64) NOT NULL, "
    "channel VARCHAR(120) NOT NULL, body TEXT NOT NULL, status VARCHAR(16) NOT NULL)",
]

_DUE = text("SELECT id, game_id, name FROM bl_deadlines WHERE status = 'pending' AND due_at <= :now "
            "ORDER BY due_at, id")
_STATE = {"sqlite": text("SELECT state FROM bl_games WHERE id = :id"),
          "postgresql": text("SELECT state FROM bl_games WHERE id = :id FOR UPDATE")}
_UPDATE_STATE = text("UPDATE bl_games SET state = :state WHERE id = :id")
_FIRED = text("UPDATE bl_deadlines SET status = 'fired', fired_at = :now WHERE id = :id AND status = 'pending'")
_LEDGER = text("INSERT INTO bl_ledger (game_id, source, target, amount) VALUES (:g, :s, :t, :a)")
_POST = text("INSERT INTO bl_outbox (game_id, channel, body, status) VALUES (:g, :c, :b, 'pending')")
_NEXT = text("INSERT INTO bl_deadlines (game_id, name, due_at, status) VALUES (:g, :n, :d, 'pending')")


def _engine(url: str) -> Engine:
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        # As dealer's store: WAL, synchronous NORMAL, the write lock taken at BEGIN.
        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            dbapi_connection.isolation_level = None
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

        @event.listens_for(engine, "begin")
        def _begin(connection):  # type: ignore[no-untyped-def]
            connection.exec_driver_sql("BEGIN IMMEDIATE")
    return engine


class BaselineStore:
    """A throw-away store for the baseline: a SQLite file, or a Postgres schema."""

    def __init__(self, database_url: str | None):
        self.root = Path(tempfile.mkdtemp(prefix="dealer-baseline-"))
        self.schema: str | None = None
        self.admin_url = database_url
        if not database_url:
            self.url = f"sqlite:///{self.root / 'baseline.db'}"
        else:
            parsed = make_url(database_url)
            if parsed.drivername in ("postgresql", "postgres"):
                parsed = parsed.set(drivername="postgresql+psycopg")
            self.admin_url = parsed.render_as_string(hide_password=False)
            self.schema = f"dealer_baseline_{os.getpid()}"
            admin = create_engine(self.admin_url)
            with admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'))
                connection.execute(text(f'CREATE SCHEMA "{self.schema}"'))
            admin.dispose()
            self.url = parsed.update_query_dict(
                {"options": f"-csearch_path={self.schema}"}).render_as_string(hide_password=False)
        self.engine = _engine(self.url)
        auto = "" if self.engine.dialect.name == "sqlite" else "GENERATED BY DEFAULT AS IDENTITY"
        with self.engine.begin() as connection:
            for statement in _SCHEMA:
                connection.execute(text(statement.format(auto=auto)))

    def close(self) -> None:
        self.engine.dispose()
        if self.schema and self.admin_url:
            admin = create_engine(self.admin_url)
            with admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'))
            admin.dispose()
        shutil.rmtree(self.root, ignore_errors=True)


def populate(engine: Engine, games: int) -> None:
    """``games`` games, each with a 4 KB-ish state and one deadline due at ``T``."""
    state = json.dumps({"round": 1, "phase": "round", "players": {
        p: {"chips": 1000, "roulette": {"winning": "gold", "gold": 25, "silver": 15},
            "bets": [{"on": "gold", "chips": 30}, {"on": "silver", "chips": 10}],
            "history": [f"round {r}: lost 10" for r in range(40)]}
        for p in ("alice", "bob")}})
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO bl_games (id, state) VALUES (:id, :state)"),
                           [{"id": f"g{i:05d}", "state": state} for i in range(games)])
        connection.execute(text("INSERT INTO bl_deadlines (game_id, name, due_at, status) "
                                "VALUES (:g, 'round-1', :d, 'pending')"),
                           [{"g": f"g{i:05d}", "d": T} for i in range(games)])


def fire_all(engine: Engine) -> int:
    """Fire every due deadline, one transaction per game; return how many fired."""
    dialect = engine.dialect.name
    with engine.connect() as connection:
        due = connection.execute(_DUE, {"now": T}).all()
        connection.rollback()
        for deadline_id, game_id, name in due:
            with connection.begin():
                state = json.loads(connection.execute(_STATE[dialect], {"id": game_id}).scalar_one())
                state["round"] += 1
                state["players"]["alice"]["chips"] -= 30
                state["players"]["bob"]["chips"] += 30
                connection.execute(_UPDATE_STATE, {"id": game_id, "state": json.dumps(state)})
                connection.execute(_FIRED, {"id": deadline_id, "now": T})
                connection.execute(_LEDGER, [
                    {"g": game_id, "s": "player:alice", "t": f"pool:{game_id}", "a": 30},
                    {"g": game_id, "s": f"pool:{game_id}", "t": "player:bob", "a": 30},
                ])
                roulettes = [
                    {"preparer": a, "bettor": b, "colour": "gold", "gold": 25, "silver": 15,
                     "bet": {"gold": 30, "silver": 10}, "points": 25, "owed": 30}
                    for a, b in (("alice", "bob"), ("bob", "alice"))
                ]
                connection.execute(_POST, [
                    {"g": game_id, "c": "#stationary-roulette",
                     "b": _RESULT.render(game=game_id, round=state["round"] - 1, roulettes=roulettes)},
                    {"g": game_id, "c": "#stationary-roulette",
                     "b": _START.render(game=game_id, round=state["round"], players=["alice", "bob"],
                                        ends=T + timedelta(days=1))},
                ])
                connection.execute(_NEXT, {"g": game_id, "n": f"round-{state['round']}",
                                           "d": T + timedelta(days=1)})
    return len(due)


def run_baseline(database_url: str | None, games: int) -> tuple[float, int]:
    """Set up ``games`` games on a throw-away store, fire their deadlines; return the
    seconds the burst took and how many fired."""
    store = BaselineStore(database_url)
    try:
        populate(store.engine, games)
        began = time.perf_counter()
        fired = fire_all(store.engine)
        return time.perf_counter() - began, fired
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--database-url")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    times = []
    for _ in range(args.repeat):
        seconds, fired = run_baseline(args.database_url, args.games)
        assert fired == args.games, fired
        times.append(seconds)
    times.sort()
    print(f"baseline, {args.games} deadlines: min {times[0]:.2f} s, median {times[len(times) // 2]:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
