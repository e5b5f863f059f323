"""A step reads its game's row, locked, with its epoch, pause, pending deadlines and its
players' currencies in one statement (issue 13). On Postgres a statement that waited for the row's lock reads what
lies beside the row as it stood before the transaction it waited for: the step must
still see that transaction's changes. On a real store."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import event, select, text

from lockwait import run_after_waiting
from dealer.history import ClientSeedAdded
from dealer.shell import steps
from dealer.shell.admin import add_player, create_game
from dealer.shell.steps import run_step
from dealer.store import queries as Q
from dealer.store.models import Deadline, Event, Holding, Seed

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
AT = T0 + timedelta(minutes=10)


def _bobs_step_after(harness, first) -> None:  # type: ignore[no-untyped-def]
    """Run bob's step (a client seed for game t1) in a transaction of its own, wait until
    its lock statement waits for ``first``'s lock on the game (its snapshot is taken),
    then commit ``first`` and let bob's step finish."""

    def release() -> None:
        first.commit()
        first.close()

    run_after_waiting(
        harness,
        lambda session: run_step(session, "t1", AT, ClientSeedAdded(player="bob", seed="bob: two"),
                                 origin="x:2", actor="bob"),
        release,
    )


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
    _bobs_step_after(harness, first)
    seeds = harness.admin(lambda s: s.scalars(select(Seed.client_seeds).where(Seed.game_id == "t1")).one())
    # Both seeds are kept: the second step read the epoch as the first one left it.
    assert seeds == ["alice: one", "bob: two"]
    due = harness.admin(lambda s: s.scalars(select(Deadline.due_at).where(Deadline.game_id == "t1")).one())
    assert due == T0 + timedelta(hours=2)


# -- the currencies read with the locked row ------------------------------------------------


def snapshots(monkeypatch) -> list[tuple[bool, dict, dict]]:  # type: ignore[no-untyped-def]
    """Each step's ledger from now on: (whether the currencies read with the locked row
    were used, the currencies it holds, the store's currencies of its accounts then)."""
    seen: list[tuple[bool, dict, dict]] = []
    original = steps.ledger_snapshot

    def spy(session, accounts, locked=None):  # type: ignore[no-untyped-def]
        ledger = original(session, accounts, locked)
        wanted = sorted(set(accounts))
        stored = {(row.account, row.item): row.amount for row in session.execute(
            Q.currency_holdings(len(wanted)), {f"a{i}": a for i, a in enumerate(wanted)}) if row.amount}
        seen.append((locked is not None, {k: v for k, v in ledger.balances.items() if v}, stored))
        return ledger

    monkeypatch.setattr(steps, "ledger_snapshot", spy)
    return seen


def holdings_reads(engine) -> list[str]:  # type: ignore[no-untyped-def]
    """Every statement that reads balances of ``holdings`` on its own, from now on."""
    sent: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if " ".join(statement.split()).startswith("SELECT holdings."):
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    return sent


def test_a_step_reads_its_players_currencies_with_its_locked_row(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=10)
        add_player(session, "bob", T0, chips=3, vertebrae=2)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    reads = holdings_reads(harness.dealer.engine)
    harness.send("alice", "add 2", AT)
    harness.send("bob", "add 3", AT + timedelta(seconds=1))
    harness.run(AT + timedelta(seconds=2))
    harness.run(T0 + timedelta(hours=1))  # the close: the winner takes a chip from the other
    assert reads == []
    fired = harness.admin(lambda s: s.scalars(select(Event.data).where(
        Event.game_id == "t1", Event.type == "deadline.fired")).one())
    # What the step read is what the store held (the history keeps it for the replay).
    winner = harness.admin(lambda s: s.scalars(select(Event.data).where(
        Event.game_id == "t1", Event.type == "tally.closed")).one())["winner"]
    loser = "bob" if winner == "alice" else "alice"
    assert fired["balances"] == {"player:alice": {"chips": 10}, "player:bob": {"chips": 3}}
    held = harness.admin(lambda s: {(h.account, h.item): h.amount for h in s.scalars(select(Holding))})
    assert held[(f"player:{winner}", "chips")] == {"alice": 10, "bob": 3}[winner] + 1
    assert held[(f"player:{loser}", "chips")] == {"alice": 10, "bob": 3}[loser] - 1
    assert held[("player:bob", "vertebrae")] == 2


def test_a_step_whose_accounts_the_locked_read_did_not_cover_reads_their_currencies(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=10)
        add_player(session, "bob", T0, chips=3)
        add_player(session, "carol", T0, chips=7, vertebrae=1)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    seen = snapshots(monkeypatch)
    with harness.dealer.sessions.begin() as session:
        # carol plays in no game: her wallet was not read with the game's row.
        run_step(session, "t1", AT, ClientSeedAdded(player="carol", seed="carol: x"), origin="x:1",
                 actor="carol")
        run_step(session, "t1", AT, ClientSeedAdded(player="alice", seed="alice: y"), origin="x:2",
                 actor="alice")
    assert [used for used, _, _ in seen] == [False, True]
    assert seen[0][1] == seen[0][2] == {("player:alice", "chips"): 10, ("player:bob", "chips"): 3,
                                        ("player:carol", "chips"): 7, ("player:carol", "vertebrae"): 1}
    assert seen[1][1] == seen[1][2] == {("player:alice", "chips"): 10, ("player:bob", "chips"): 3}


def test_a_hall_like_game_and_its_match_read_their_scopes_currencies_with_their_rows(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The board keeps its members' chips in its own scope; its duel (a child) in the
    # board's: each step's currencies, read with its row, are the store's.
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
    harness.admin(setup)
    seen = snapshots(monkeypatch)
    harness.send("alice", "duel bob", AT, channel="#board")
    harness.run(AT + timedelta(seconds=1))
    harness.send("bob", "game b1-duel-1\nconcede", AT + timedelta(seconds=2))
    harness.run(AT + timedelta(seconds=3))
    # The board offered the whole message (it reads only #motions whole), the board's
    # command, the duel's creation (its players not yet its members), the duel's
    # concession, the board told of its end.
    assert [used for used, _, _ in seen] == [True, True, False, True, True]
    assert all(ledger == stored for _, ledger, stored in seen)
    assert seen[3][1] == {("b1/player:alice", "chips"): 3, ("b1/player:bob", "chips"): 3,
                          ("b1/pool:b1-duel-1", "chips"): 4}


def test_a_step_that_waited_for_its_game_sees_the_balances_the_step_before_it_changed(harness, database_url, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: no step waits for a row lock")

    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=10)
        add_player(session, "bob", T0, chips=3)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    seen = snapshots(monkeypatch)
    first = harness.dealer.sessions()
    first.begin()
    run_step(first, "t1", AT, ClientSeedAdded(player="alice", seed="alice: one"), origin="x:1",
             actor="alice")
    # The first transaction also pays bob 4 of alice's chips, holding the game's lock.
    first.execute(text("UPDATE holdings SET amount = amount - 4 WHERE account = 'player:alice'"))
    first.execute(text("UPDATE holdings SET amount = amount + 4 WHERE account = 'player:bob'"))
    _bobs_step_after(harness, first)
    # The second step's currencies, read with its row, are those the first one left.
    used, ledger, stored = seen[-1]
    assert used and ledger == stored == {("player:alice", "chips"): 6, ("player:bob", "chips"): 7}
