"""A group of deadlines fired without savepoints keeps its steps' own writes (issue 13):
each deadline's fired mark, each game's new state and its new deadline rows are written
in one statement each for the group, before its commit; a step that reads a game an
earlier step of the group wrote (a parent told of its child's end) sees it as that step
left it; a group that fails is fired again deadline by deadline, writing each at once.
On a real store; uses the test rulesets of ``board.py`` (a board and its child duels)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import event, select

import board
import tally
from sqlcount import statements
from dealer.shell.admin import add_player, create_game
from dealer.shell.passes import PassReport
from dealer.shell import unit_of_work
from dealer.views import game_state
from dealer.store.models import Deadline, Event, Game, Holding

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
OPENED = T0 + timedelta(minutes=1)  # the duels open; they end an hour later
END = OPENED + timedelta(hours=1)


def deadlines(h, game_id: str) -> list[tuple[str, str, datetime]]:  # type: ignore[no-untyped-def]
    def read(session):  # type: ignore[no-untyped-def]
        rows = session.scalars(select(Deadline).where(Deadline.game_id == game_id).order_by(Deadline.id))
        return [(d.name, d.status, d.due_at.replace(tzinfo=timezone.utc)) for d in rows]
    return h.admin(read)


def board_state(h):  # type: ignore[no-untyped-def]
    return h.admin(lambda s: game_state(s.get(Game, "b1"))[1])


def two_duels(h, monkeypatch, review: datetime) -> None:  # type: ignore[no-untyped-def]
    """Board b1 opens two duels at OPENED (both end at END) and sets its own ``review``
    deadline at ``review``."""
    handle = board.Board.handle

    def handle_and_review(self, ctx, state, actor, command):  # type: ignore[no-untyped-def]
        state = handle(self, ctx, state, actor, command)
        ctx.set_deadline("review", review)
        return state

    monkeypatch.setattr(board.Board, "handle", handle_and_review)

    def make(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
    h.admin(make)
    h.send("alice", "duel bob\nduel bob", OPENED, channel="#board", id="d1")
    h.run(OPENED + timedelta(seconds=1))
    assert [name for name, _, _ in deadlines(h, "b1-duel-1") + deadlines(h, "b1-duel-2")] == ["end", "end"]


def tally_games(h, count: int) -> None:  # type: ignore[no-untyped-def]
    """``count`` two-round tally games ``t0``.. of players ``a0``/``b0``.., started at T0."""
    def setup(session):  # type: ignore[no-untyped-def]
        for i in range(count):
            add_player(session, f"a{i}", T0, chips=10)
            add_player(session, f"b{i}", T0, chips=10)
            create_game(session, "tally", f"t{i}", T0, players=[f"a{i}", f"b{i}"], settings={"rounds": "2"})
    h.admin(setup)


def test_a_groups_marks_and_game_updates_are_written_together(harness) -> None:  # type: ignore[no-untyped-def]
    tally_games(harness, 4)
    close = T0 + timedelta(hours=1)
    sent = statements(harness.dealer.engine)
    report = PassReport(now=close)
    harness.dealer.process_due(close, report)
    assert report.deadlines == 4 and report.ok
    # One executemany each for the group's fired marks, its games' new states and the
    # next round's deadlines; none of them one by one, and no savepoint.
    for words in ("UPDATE deadlines SET", "UPDATE games SET", "INSERT INTO deadlines"):
        assert [many for s, many in sent if s == words] == [True], words
    assert not [s for s, _ in sent if s.startswith("SAVEPOINT")]
    for i in range(4):
        assert [(n, s) for n, s, _ in deadlines(harness, f"t{i}")] == [("close", "fired"), ("close", "pending")]
    seqs = harness.admin(lambda s: [(e.game_id, e.seq) for e in s.scalars(select(Event).order_by(Event.game_id, Event.seq))])
    for i in range(4):
        mine = [seq for game, seq in seqs if game == f"t{i}"]
        assert mine == list(range(1, len(mine) + 1))
    next_seqs = harness.admin(lambda s: {g.id: g.next_event_seq for g in s.scalars(select(Game))})
    assert all(next_seqs[f"t{i}"] == len([1 for game, _ in seqs if game == f"t{i}"]) + 1 for i in range(4))


def test_a_group_reads_its_games_in_one_statement(harness) -> None:  # type: ignore[no-untyped-def]
    tally_games(harness, 4)
    close = T0 + timedelta(hours=1)
    reads: list[int] = []

    def sent(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if "seen_seq" in statement:  # Q.LOCK_GAME, over one game or several
            values = parameters.values() if isinstance(parameters, dict) else parameters
            reads.append(sum(1 for v in values if isinstance(v, str) and v.startswith("t")))

    event.listen(harness.dealer.engine, "before_cursor_execute", sent)
    report = PassReport(now=close)
    harness.dealer.process_due(close, report)
    assert report.deadlines == 4 and report.ok
    assert reads == [4]  # the group's four games at once; no step reads its game again


def test_a_parent_in_a_group_sees_its_fired_deadline_gone_as_a_fresh_read_would(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The board's kept read (the group's, before any step) lists its review as pending; the
    # review's step fires it, and the duels' ends, stepping the board after it, must not
    # see it pending (each reuse is checked against a fresh read, too: CHECK_KEPT).
    monkeypatch.setattr(unit_of_work, "CHECK_KEPT", True)
    two_duels(harness, monkeypatch, END - timedelta(seconds=1))
    finished = board.Board.on_child_finished

    def noted(self, ctx, state, child_id, summary):  # type: ignore[no-untyped-def]
        state = finished(self, ctx, state, child_id, summary)
        state.acks.append(f"{child_id} with {sorted(ctx.deadlines)}")
        return state

    monkeypatch.setattr(board.Board, "on_child_finished", noted)
    report = PassReport(now=END)
    harness.dealer.process_due(END, report)
    assert report.deadlines == 3 and report.ok
    assert board_state(harness).acks == ["b1-duel-1 with []", "b1-duel-2 with []"]
    assert [(n, s) for n, s, _ in deadlines(harness, "b1")] == [("review", "fired")]


def test_a_group_that_fails_writes_each_deadline_at_once_in_its_savepoint(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tally_games(harness, 3)
    original = tally.Tally.on_deadline

    def faulty(self, ctx, state, name):  # type: ignore[no-untyped-def]
        if ctx.game_id == "t1":
            raise KeyError("round")
        return original(self, ctx, state, name)

    monkeypatch.setattr(tally.Tally, "on_deadline", faulty)
    close = T0 + timedelta(hours=1)
    sent = statements(harness.dealer.engine)
    report = PassReport(now=close)
    harness.dealer.process_due(close, report)
    assert report.deadlines == 2 and report.failed_deadlines == ["t1:close"]
    # The redo: a savepoint per deadline, each mark, game update and new deadline written
    # at once (a step rolled back to its savepoint leaves nothing kept): three marks (t1's
    # rolled back) and t1's error kept after the commit; two updates, two new deadlines.
    redo = sent[next(i for i, (s, _) in enumerate(sent) if s.startswith("SAVEPOINT")):]
    for words, count in (("UPDATE deadlines SET", 4), ("UPDATE games SET", 2), ("INSERT INTO deadlines", 2)):
        assert [many for s, many in redo if s == words] == [False] * count, words
    assert [(n, s) for n, s, _ in deadlines(harness, "t0")] == [("close", "fired"), ("close", "pending")]
    assert [(n, s) for n, s, _ in deadlines(harness, "t1")] == [("close", "pending")]
    assert [(n, s) for n, s, _ in deadlines(harness, "t2")] == [("close", "fired"), ("close", "pending")]


def test_a_parent_stepped_after_its_own_deadline_in_a_group_sees_its_rows(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The board's review falls just before the duels end: one group fires the review, then
    # both duels, each telling the board of its end. Each of those steps must see the
    # board as the step before it left it: its state, its review fired (not pending) and
    # the deadline the first duel's end set (so the second does not set it again).
    two_duels(harness, monkeypatch, END - timedelta(seconds=1))
    on_deadline, finished = board.Board.on_deadline, board.Board.on_child_finished

    def reviewed(self, ctx, state, name):  # type: ignore[no-untyped-def]
        state.acks.append(f"{name} with {sorted(ctx.deadlines)}")
        return on_deadline(self, ctx, state, name)

    def review_again(self, ctx, state, child_id, summary):  # type: ignore[no-untyped-def]
        state = finished(self, ctx, state, child_id, summary)
        state.acks.append(f"{child_id} with {sorted(ctx.deadlines)}")
        if "review" not in ctx.deadlines:
            ctx.set_deadline("review", ctx.now + timedelta(days=1))
        return state

    monkeypatch.setattr(board.Board, "on_deadline", reviewed)
    monkeypatch.setattr(board.Board, "on_child_finished", review_again)
    commits: list[int] = []
    event.listen(harness.dealer.engine, "commit", lambda _conn: commits.append(1))
    sent = statements(harness.dealer.engine)
    report = PassReport(now=END)
    harness.dealer.process_due(END, report)
    assert report.deadlines == 3 and report.ok and len(commits) == 1
    assert not [s for s, _ in sent if s.startswith("SAVEPOINT")]  # no fallback
    state = board_state(harness)
    assert state.acks == ["review with []", "b1-duel-1 with []", "b1-duel-2 with ['review']"]
    assert set(state.results) == {"b1-duel-1", "b1-duel-2"}
    assert deadlines(harness, "b1") == [("review", "fired", END - timedelta(seconds=1)),
                                        ("review", "pending", END + timedelta(days=1))]
    seqs = harness.admin(lambda s: list(s.scalars(select(Event.seq).where(Event.game_id == "b1").order_by(Event.seq))))
    assert seqs == list(range(1, len(seqs) + 1))
    assert harness.admin(lambda s: s.get(Game, "b1").next_event_seq) == len(seqs) + 1
    # Each winner's bonus chip landed: 10 chips in the board (5 + 5), 2 bonus, nothing pooled.
    chips = harness.admin(lambda s: {h.account: h.amount for h in s.scalars(
        select(Holding).where(Holding.account.startswith("b1/"), Holding.item == "chips"))})
    assert sum(chips.values()) == 2 * board.START_CHIPS + 2 * board.BONUS


def test_a_deadline_an_earlier_step_of_its_group_cancelled_does_not_fire(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The board's review falls just after the duels end, in the same group; the first
    # duel's end makes the board cancel it: its mark is written at once and finds it gone.
    two_duels(harness, monkeypatch, END + timedelta(seconds=1))
    finished = board.Board.on_child_finished
    fired: list[str] = []

    def cancel_review(self, ctx, state, child_id, summary):  # type: ignore[no-untyped-def]
        ctx.cancel_deadline("review")
        return finished(self, ctx, state, child_id, summary)

    def never(self, ctx, state, name):  # type: ignore[no-untyped-def]
        fired.append(name)
        return state

    monkeypatch.setattr(board.Board, "on_child_finished", cancel_review)
    monkeypatch.setattr(board.Board, "on_deadline", never)
    sent = statements(harness.dealer.engine)
    report = PassReport(now=END + timedelta(seconds=1))
    harness.dealer.process_due(END + timedelta(seconds=1), report)
    assert report.deadlines == 2 and report.ok and fired == []
    assert not [s for s, _ in sent if s.startswith("SAVEPOINT")]  # no fallback
    assert [(n, s) for n, s, _ in deadlines(harness, "b1")] == [("review", "cancelled")]
    assert set(board_state(harness).results) == {"b1-duel-1", "b1-duel-2"}


def test_a_deadline_of_a_game_stepped_earlier_in_its_group_fires_on_its_current_row(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The board's review falls just after the duels end, in the same group: it fires on the
    # board as both duels' ends left it (their results, its next event number).
    two_duels(harness, monkeypatch, END + timedelta(seconds=1))
    on_deadline = board.Board.on_deadline

    def reviewed(self, ctx, state, name):  # type: ignore[no-untyped-def]
        state.acks.append(f"{name} after {sorted(state.results)}")
        return on_deadline(self, ctx, state, name)

    monkeypatch.setattr(board.Board, "on_deadline", reviewed)
    sent = statements(harness.dealer.engine)
    report = PassReport(now=END + timedelta(seconds=1))
    harness.dealer.process_due(END + timedelta(seconds=1), report)
    assert report.deadlines == 3 and report.ok
    assert not [s for s, _ in sent if s.startswith("SAVEPOINT")]  # no fallback
    assert board_state(harness).acks == ["review after ['b1-duel-1', 'b1-duel-2']"]
    assert [(n, s) for n, s, _ in deadlines(harness, "b1")] == [("review", "fired")]
    seqs = harness.admin(lambda s: list(s.scalars(select(Event.seq).where(Event.game_id == "b1").order_by(Event.seq))))
    assert seqs == list(range(1, len(seqs) + 1))
