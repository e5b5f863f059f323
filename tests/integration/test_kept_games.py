"""A group of messages locks and reads a game once (issue 13): a later step of a game in the
same group uses what the earlier step left of its locked row (``unit_of_work.KeptGame``: its
state, status, event number, balances, epoch), never a stale copy. Every reuse here is
also checked against a fresh read (``unit_of_work.CHECK_KEPT``), which stops the run at the first
difference; the outcomes are asserted besides. On a real store."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import event, select, text

import board as board_rules
from lockwait import run_after_waiting
from dealer.history import ClientSeedAdded
from dealer.shell import routing, steps, unit_of_work
from dealer.shell.admin import add_player, create_game
from dealer.store.models import Deadline, Event, Game, Holding, Inbound, Seed
from dealer.views import game_view

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
AT = T0 + timedelta(minutes=30)


@pytest.fixture(autouse=True)
def checked(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(unit_of_work, "CHECK_KEPT", True)


def board(h) -> None:  # type: ignore[no-untyped-def]
    """Board b1 of alice and bob (5 chips each in its scope); carol plays in no game."""
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
    h.admin(setup)


def commits(h) -> list[int]:  # type: ignore[no-untyped-def]
    """One entry per transaction committed on the harness's engine from now on."""
    seen: list[int] = []
    event.listen(h.dealer.engine, "commit", lambda _conn: seen.append(1))
    return seen


def process_in_one_transaction(h, at) -> None:  # type: ignore[no-untyped-def]
    """Ingest what was sent and process it at ``at``: one group, so one commit."""
    h.dealer.ingest(at)
    committed = commits(h)
    h.dealer.process_due(at)
    assert len(committed) == 1


def locked_reads(h, monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The games of the board (``b1...``) locked and read from now on, in the order they
    were read: one entry per row of a locked read (``Q.LOCK_GAME``, one game or several
    at once, alone or with the group's senders) kept for the group's steps."""
    seen: list[str] = []
    read = unit_of_work.KeptGame.read

    def spy(row):  # type: ignore[no-untyped-def]
        if row.id.startswith("b1"):
            seen.append(row.id)
        return read(row)

    monkeypatch.setattr(unit_of_work.KeptGame, "read", spy)
    return seen


def group_reads(h) -> list[str]:  # type: ignore[no-untyped-def]
    """The locked reads of several games at once (a group's: ``games.id IN``, alone or
    with the group's senders) sent from now on; not those of one game (``CHECK_KEPT``'s)."""
    sent: list[str] = []
    event.listen(h.dealer.engine, "before_cursor_execute", lambda conn, cursor, statement, *_: sent.append(
        statement) if "seen_seq" in statement and "games.id IN" in statement else None)
    return sent


def state(h) -> dict:  # type: ignore[no-untyped-def,type-arg]
    return h.admin(lambda s: s.get(Game, "b1").state)


def outcomes(h) -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: [(m.status, m.game_id) for m in s.scalars(select(Inbound).order_by(Inbound.id))])


def chips(h, account: str) -> int:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: s.scalar(select(Holding.amount).where(
        Holding.account == account, Holding.item == "chips")))


def test_a_game_stepped_twice_in_a_group_is_read_once_and_its_second_step_sees_the_first(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The second duel is the board's second (b1-duel-2): a stale state would open
    # b1-duel-1 again, and be refused as a game that exists.
    monkeypatch.setattr(unit_of_work, "CHECK_KEPT", False)  # the check reads again: count without it
    board(harness)
    harness.send("alice", "duel bob", AT, channel="#board")
    harness.send("bob", "duel alice", AT + timedelta(seconds=1), channel="#board")
    harness.dealer.ingest(AT + timedelta(seconds=2))
    reads, committed = locked_reads(harness, monkeypatch), commits(harness)
    harness.dealer.process_due(AT + timedelta(seconds=2))
    assert len(committed) == 1  # one group, not applied again one by one
    assert outcomes(harness) == [("applied", "b1"), ("applied", "b1")]
    assert sorted(reads) == ["b1", "b1-duel-1", "b1-duel-2"]  # the board read once
    assert harness.admin(lambda s: game_view(s, "b1-duel-2"))["players"] == ["bob", "alice"]
    seqs = harness.admin(lambda s: list(s.scalars(select(Event.seq).where(Event.game_id == "b1").order_by(Event.seq))))
    assert seqs == list(range(1, len(seqs) + 1))


def test_what_a_step_of_another_game_moves_is_followed_by_the_kept_game(harness) -> None:  # type: ignore[no-untyped-def]
    # Each duel stakes 2 chips of each player's board account (a step of the duel, another
    # game); the duel alice wins pays her its pool and the board her bonus (a step of the
    # board, kept). The board's later steps read those balances as they then stand. The
    # concession cancels the duel's deadline: alice's, refused, reads the duel again.
    board(harness)
    harness.send("alice", "duel bob", AT, channel="#board")
    harness.send("bob", "game b1-duel-1\nconcede", AT + timedelta(seconds=1))
    harness.send("alice", "game b1-duel-1\nconcede", AT + timedelta(seconds=2))
    harness.send("alice", "duel bob", AT + timedelta(seconds=3), channel="#board")
    harness.send("alice", "game b1\nhelp", AT + timedelta(seconds=4))
    process_in_one_transaction(harness, AT + timedelta(seconds=5))
    assert outcomes(harness) == [("applied", "b1"), ("applied", "b1-duel-1"), ("rejected", "b1-duel-1"),
                                 ("applied", "b1"), ("ignored", "b1")]
    start = board_rules.START_CHIPS
    assert chips(harness, "b1/player:alice") == start - 2 + 4 + board_rules.BONUS - 2
    assert chips(harness, "b1/player:bob") == start - 2 - 2
    assert state(harness)["results"] == {"b1-duel-1": "alice"}


def test_the_check_finds_a_kept_game_whose_balances_were_not_followed(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The scenario above, with the kept games told of no balance moved: the board's next
    # step is checked against a fresh read and the difference stops the run.
    board(harness)
    keep = unit_of_work.UnitOfWork.follow
    monkeypatch.setattr(unit_of_work.UnitOfWork, "follow",
                        lambda self, game, records, players, moved, values:
                        keep(self, game, records, players, {}, values))
    harness.send("alice", "duel bob", AT, channel="#board")
    harness.send("alice", "duel bob", AT + timedelta(seconds=1), channel="#board")
    harness.dealer.ingest(AT + timedelta(seconds=2))
    with pytest.raises(unit_of_work.KeptGameDiffers):
        harness.dealer.process_due(AT + timedelta(seconds=2))


def test_a_refused_step_leaves_its_kept_game_as_read(harness) -> None:  # type: ignore[no-untyped-def]
    # alice's challenge of carol (no member) is refused and writes nothing: the board's
    # next steps and its help use the row as read before it.
    board(harness)
    harness.send("alice", "duel carol", AT, channel="#board")
    harness.send("alice", "duel bob", AT + timedelta(seconds=1), channel="#board")
    harness.send("bob", "duel alice", AT + timedelta(seconds=2), channel="#board")
    harness.send("bob", "duel carol", AT + timedelta(seconds=3), channel="#board")
    process_in_one_transaction(harness, AT + timedelta(seconds=4))
    assert outcomes(harness) == [("rejected", "b1"), ("applied", "b1"), ("applied", "b1"), ("rejected", "b1")]
    assert state(harness)["duels"] == 2


def test_client_seeds_added_in_one_group_are_all_kept(harness) -> None:  # type: ignore[no-untyped-def]
    # Each seed is added to the epoch's client seeds as the step before left them: a stale
    # list would lose alice's.
    board(harness)
    harness.send("alice", "game b1\nseed one", AT)
    harness.send("bob", "game b1\nseed two", AT + timedelta(seconds=1))
    harness.send("alice", "duel bob", AT + timedelta(seconds=2), channel="#board")
    process_in_one_transaction(harness, AT + timedelta(seconds=3))
    assert outcomes(harness) == [("applied", "b1")] * 3
    seeds = harness.admin(lambda s: s.scalar(select(Seed.client_seeds).where(Seed.game_id == "b1")))
    assert seeds == ["alice: one", "bob: two"]


def test_a_group_rolled_back_keeps_nothing_of_its_steps(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # alice's duel is kept with the group; bob's concession crashes after the duel's step
    # wrote (the board refuses to hear of it): the group is rolled back and applied one
    # message at a time, each reading the board afresh, so alice's second duel is again
    # b1-duel-2 and the board's history has each step once.
    board(harness)

    def refusing(self, ctx, state, child_id, summary):  # type: ignore[no-untyped-def]
        raise board_rules.Rejected("not now")

    monkeypatch.setattr(board_rules.Board, "on_child_finished", refusing)
    harness.send("alice", "duel bob", AT, channel="#board")
    harness.send("bob", "game b1-duel-1\nconcede", AT + timedelta(seconds=1))
    harness.send("alice", "duel bob", AT + timedelta(seconds=2), channel="#board")
    report = harness.run(AT + timedelta(seconds=3))
    first, concession, second = harness.admin(lambda s: list(s.scalars(select(Inbound.id).order_by(Inbound.id))))
    assert report.failed_messages == [concession]
    assert [status for status, _ in outcomes(harness)] == ["applied", "failed", "applied"]
    assert state(harness)["duels"] == 2
    assert harness.admin(lambda s: game_view(s, "b1-duel-1"))["status"] == "running"
    assert chips(harness, "b1/player:alice") == board_rules.START_CHIPS - 2 - 2
    seqs = harness.admin(lambda s: list(s.scalars(select(Event.seq).where(Event.game_id == "b1").order_by(Event.seq))))
    assert seqs == list(range(1, len(seqs) + 1))


def test_a_step_that_sets_a_deadline_has_its_game_read_again(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Each duel sets (then moves) the board's review deadline: the first creates its row,
    # whose id only the store knows, so the second step reads the board again and moves
    # that row; a stale list of pending deadlines would create a second one.
    board(harness)
    handle = board_rules.Board.handle

    def reviewed(self, ctx, state, actor, command):  # type: ignore[no-untyped-def]
        ctx.set_deadline("review", ctx.now + timedelta(days=1))
        return handle(self, ctx, state, actor, command)

    monkeypatch.setattr(board_rules.Board, "handle", reviewed)
    harness.send("alice", "duel bob", AT, channel="#board")
    harness.send("bob", "duel alice", AT + timedelta(seconds=1), channel="#board")
    process_in_one_transaction(harness, AT + timedelta(seconds=2))
    assert outcomes(harness) == [("applied", "b1"), ("applied", "b1")]
    reviews = harness.admin(lambda s: [(d.status, d.due_at) for d in s.scalars(
        select(Deadline).where(Deadline.game_id == "b1").order_by(Deadline.id))])
    assert reviews == [("pending", AT + timedelta(seconds=1, days=1))]


def test_a_game_read_with_the_groups_senders_follows_what_another_game_moved_before_its_step(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The board and its duel are read when the group begins; bob's concession (a step of
    # the duel) pays alice the pool in the board's scope before the board's first step of
    # the group (told of the duel's end), which reads her balance as it then stands.
    board(harness)
    harness.send("alice", "duel bob", AT, channel="#board")
    harness.run(AT + timedelta(seconds=1))
    reads = locked_reads(harness, monkeypatch)
    harness.send("bob", "game b1-duel-1\nconcede", AT + timedelta(seconds=2))
    harness.send("alice", "duel bob", AT + timedelta(seconds=3), channel="#board")
    ingested = harness.dealer.ingest(AT + timedelta(seconds=4))
    statements = group_reads(harness)
    process_in_one_transaction(harness, AT + timedelta(seconds=4))
    assert ingested == 2 and len(statements) == 1  # the group's first read: its senders' games
    assert outcomes(harness)[-2:] == [("applied", "b1-duel-1"), ("applied", "b1")]
    assert chips(harness, "b1/player:alice") == board_rules.START_CHIPS - 2 + 4 + board_rules.BONUS - 2
    assert reads[:2] == ["b1", "b1-duel-1"]  # in one statement (above), in id order


def _kept_board_after_waiting(harness, read) -> unit_of_work.KeptGame:  # type: ignore[no-untyped-def]
    """The board as a group keeps it when ``read(session)``, the group's read of its
    games, had to wait for another transaction that holds the board's row lock, adds a
    client seed and moves 7 chips to bob, and then commits."""
    board(harness)
    first = harness.dealer.sessions()
    first.begin()
    steps.run_step(first, "b1", AT, ClientSeedAdded(player="alice", seed="alice: one"),
                   origin="x:1", actor="alice")
    first.execute(text("UPDATE holdings SET amount = amount + 7 WHERE account = 'b1/player:bob'"))
    kept: list[unit_of_work.KeptGame] = []

    def group(session) -> None:  # type: ignore[no-untyped-def]
        with unit_of_work.group(session, own_writes=True, keep_games=True) as unit:
            read(session)
            kept.append(unit.kept["b1"])  # type: ignore[index]

    def release() -> None:
        first.commit()
        first.close()

    run_after_waiting(harness, group, release)
    return kept[0]


def test_games_read_together_after_waiting_for_a_lock_see_what_that_transaction_wrote(harness, database_url) -> None:  # type: ignore[no-untyped-def]
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: no read waits for a row lock")
    kept = _kept_board_after_waiting(harness, lambda session: unit_of_work.of(session).lock_games(["b1"]))
    assert kept.row.client_seeds == ["alice: one"]
    assert kept.balances.amounts[("b1/player:bob", "chips")] == board_rules.START_CHIPS + 7


@pytest.mark.parametrize("senders", [["bob", "carol"], ["bob"]], ids=["two senders", "one sender"])
def test_a_groups_first_read_of_its_senders_and_their_games_waits_and_sees_what_it_waited_for(harness, database_url, senders) -> None:  # type: ignore[no-untyped-def]
    # A group's first read locks its senders' games: after waiting for another
    # transaction's lock on a game, it reads that transaction's seed and chips.
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: no read waits for a row lock")
    kept = _kept_board_after_waiting(
        harness, lambda session: routing.read_senders_keeping_games(session, senders))
    assert kept.row.client_seeds == ["alice: one"]
    assert kept.balances.amounts[("b1/player:bob", "chips")] == board_rules.START_CHIPS + 7
    assert kept.row.next_event_seq == kept.row.seen_seq  # read again, not waited
