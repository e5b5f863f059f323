"""A step reads its game's row, locked, with its epoch, pause and pending deadlines in one
statement (issue 13). On Postgres a statement that waited for the row's lock reads what
lies beside the row as it stood before the transaction it waited for: the step must
still see that transaction's changes. On a real store."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select, text

from dealer.history import ClientSeedAdded
from dealer.shell.admin import add_player, create_game
from dealer.shell.steps import run_step
from dealer.store.models import Deadline, Seed

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
AT = T0 + timedelta(minutes=10)


def _blocked(harness, pid: int) -> bool:  # type: ignore[no-untyped-def]
    with harness.dealer.engine.connect() as connection:
        return bool(connection.execute(
            text("SELECT count(*) FROM pg_locks WHERE pid = :pid AND NOT granted"), {"pid": pid}
        ).scalar())


def test_a_step_that_waited_for_its_game_sees_what_the_step_before_it_wrote(harness, database_url) -> None:  # type: ignore[no-untyped-def]
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: no step waits for a row lock")

    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    first = harness.dealer.sessions()
    first.begin()
    # The first step adds a client seed (the epoch's row) and holds the game's lock.
    run_step(first, "t1", AT, ClientSeedAdded(player="alice", seed="alice: one"), origin="x:1",
             actor="alice")
    # The first step also moves the game's deadline, as a later step of a real game may.
    first.execute(text("UPDATE deadlines SET due_at = due_at + interval '1 hour' WHERE game_id = 't1'"))
    second_pid: list[int] = []
    errors: list[BaseException] = []

    def second_step() -> None:
        try:
            with harness.dealer.sessions.begin() as session:
                second_pid.append(session.execute(text("SELECT pg_backend_pid()")).scalar())
                started.set()
                run_step(session, "t1", AT, ClientSeedAdded(player="bob", seed="bob: two"),
                         origin="x:2", actor="bob")
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    started = threading.Event()
    thread = threading.Thread(target=second_step)
    thread.start()
    assert started.wait(timeout=30)
    # Wait until the second step's statement waits for the lock (its snapshot is taken),
    # then let the first one commit.
    for _ in range(3000):
        if _blocked(harness, second_pid[0]):
            break
        threading.Event().wait(0.01)
    else:
        pytest.fail("the second step never waited for the game's lock")
    first.commit()
    first.close()
    thread.join(timeout=30)
    assert not thread.is_alive() and not errors
    seeds = harness.admin(lambda s: s.scalars(select(Seed.client_seeds).where(Seed.game_id == "t1")).one())
    # Both seeds are kept: the second step read the epoch as the first one left it.
    assert seeds == ["alice: one", "bob: two"]
    due = harness.admin(lambda s: s.scalars(select(Deadline.due_at).where(Deadline.game_id == "t1")).one())
    assert due == T0 + timedelta(hours=2)
