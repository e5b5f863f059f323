"""The unit of work of a transaction of steps (``dealer.shell.unit_of_work``), its invariants
checked on the module itself, on the real store (SQLite, and Postgres when configured):
what it stages, when it writes it, what it keeps and what makes it read again."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from dealer.history import ClientSeedAdded, CommandSent
from dealer.shell import steps, unit_of_work
from dealer.shell.admin import add_player, create_game
from dealer.shell.unit_of_work import KeptGame, StaleRows, lock_game
from dealer.store import queries as Q
from dealer.store.models import Deadline, Game, Post

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
AT = T0 + timedelta(minutes=30)
_games = Game.__table__
SET_STATUS = update(_games).where(_games.c.id == bindparam("game_id")).values(
    status=bindparam("new_status"))
"""A game's own write, as a step's ``UPDATE games`` is."""


def post(key: str) -> dict[str, Any]:
    return dict(key=key, game_id=None, channel="pm", recipient="alice", kind="reply",
                subject="s", body="b", created_at=T0, status="pending", attempts=0)


def keys(session: Session) -> list[str]:
    """The keys of the posts these tests add (the boards' own have their game)."""
    return list(session.scalars(select(Post.key).where(Post.game_id.is_(None)).order_by(Post.id)))


def status(session: Session, game_id: str) -> str:
    return session.scalar(select(Game.status).where(Game.id == game_id))  # type: ignore[return-value]


def deadline_status(session: Session, deadline_id: int) -> str:
    return session.scalar(select(Deadline.status).where(Deadline.id == deadline_id))  # type: ignore[return-value]


@pytest.fixture
def boards(harness):  # type: ignore[no-untyped-def]
    """Boards b1 (alice, bob) and b2 (carol), and a pending deadline of b1 due at T0: its id."""
    def setup(session: Session) -> int:
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
        create_game(session, "board", "b2", T0, players=["carol"])
        deadline = Deadline(game_id="b1", name="tick", due_at=T0, set_due_at=T0,
                            status="pending", paused=False)
        session.add(deadline)
        session.flush()
        return deadline.id
    return harness.admin(setup)


def mark(deadline_id: int) -> dict[str, Any]:
    return {"deadline_id": deadline_id, "due": T0, "new_fired_at": AT}


def test_outside_a_group_the_unit_writes_at_once_and_keeps_nothing(harness, boards) -> None:  # type: ignore[no-untyped-def]
    with harness.session() as session:
        unit = unit_of_work.of(session)
        assert unit_of_work.of(session) is unit  # one per transaction
        unit.add(Q.INSERT_POSTS, [post("a")])
        assert keys(session) == ["a"]
        assert unit.own("b1", SET_STATUS, [{"game_id": "b1", "new_status": "closed"}]) == 1
        assert status(session, "b1") == "closed"
        assert unit.kept is None and unit.kept_row("b1") is None
        assert unit.own("b1", Q.MARK_FIRED, [mark(boards)], firing=boards) == 1
        assert unit.own("b1", Q.MARK_FIRED, [mark(boards)], firing=boards) == 0  # fired already


def test_a_group_writes_its_appended_rows_at_its_end_in_the_order_first_staged(harness, boards) -> None:  # type: ignore[no-untyped-def]
    with harness.session() as session:
        with unit_of_work.group(session) as unit:
            assert unit_of_work.of(session) is unit
            unit.add(Q.INSERT_POSTS, [post("a")])
            unit.add(Q.RECORD_OUTCOME, [])  # nothing to stage: no statement
            unit.add(Q.INSERT_POSTS, [post("b")])
            assert keys(session) == []
            assert list(unit.staged.rows) == [Q.INSERT_POSTS]
        assert keys(session) == ["a", "b"]
        assert unit_of_work.of(session) is not unit  # the group's unit ends with it
    with harness.session() as session:
        assert keys(session) == ["a", "b"]


def test_a_read_of_appended_rows_during_the_group_writes_those_staged_so_far(harness, boards) -> None:  # type: ignore[no-untyped-def]
    with harness.session() as session:
        with unit_of_work.group(session) as unit:
            unit.add(Q.INSERT_POSTS, [post("a")])
            unit.before_reading_appended()
            assert keys(session) == ["a"]
            unit.add(Q.INSERT_POSTS, [post("b")])
            assert keys(session) == ["a"]
        assert keys(session) == ["a", "b"]


def test_a_group_that_fails_writes_nothing_and_leaves_no_unit_behind(harness, boards) -> None:  # type: ignore[no-untyped-def]
    with harness.session() as session:
        with pytest.raises(RuntimeError):
            with unit_of_work.group(session, own_writes=True) as unit:
                unit.add(Q.INSERT_POSTS, [post("a")])
                unit.own("b1", SET_STATUS, [{"game_id": "b1", "new_status": "closed"}])
                raise RuntimeError("a step failed")
        assert not unit_of_work.of(session).staging
        assert keys(session) == [] and status(session, "b1") == "running"


def test_own_writes_wait_for_a_read_of_their_game_and_only_theirs(harness, boards) -> None:  # type: ignore[no-untyped-def]
    with harness.session() as session:
        with unit_of_work.group(session, own_writes=True) as unit:
            unit.add(Q.INSERT_POSTS, [post("a")])
            assert unit.own("b1", SET_STATUS, [{"game_id": "b1", "new_status": "closed"}]) is None
            assert status(session, "b1") == "running"
            unit.before_reading(["b2"])  # another game: nothing of it staged
            assert status(session, "b1") == "running"
            unit.before_reading(["b1"])
            assert status(session, "b1") == "closed"
            assert keys(session) == []  # appended rows still wait: no step reads them back
            unit.own("b2", SET_STATUS, [{"game_id": "b2", "new_status": "closed"}])
            unit.before_reading()  # any game (found by player, channel or due time)
            assert status(session, "b2") == "closed"
        assert keys(session) == ["a"]


def test_a_fired_mark_staged_alone_does_not_hold_back_the_step_it_fires(harness, boards) -> None:  # type: ignore[no-untyped-def]
    with harness.session() as session:
        with unit_of_work.group(session, own_writes=True) as unit:
            assert unit.own("b1", Q.MARK_FIRED, [mark(boards)], firing=boards) is None
            unit.before_reading(["b1"], firing=boards)  # that step leaves it out of its pending
            assert deadline_status(session, boards) == "pending"
            unit.before_reading(["b1"])  # any other read of the game writes it
            assert deadline_status(session, boards) == "fired"


def test_a_fired_mark_of_a_game_the_group_wrote_is_written_at_once_with_its_count(harness, boards) -> None:  # type: ignore[no-untyped-def]
    # An earlier step of the group stepped the game and may have moved or cancelled the
    # deadline: the row count says whether it still stands.
    with harness.session() as session:
        with unit_of_work.group(session, own_writes=True) as unit:
            unit.own("b1", SET_STATUS, [{"game_id": "b1", "new_status": "running"}])
            session.execute(update(Deadline).where(Deadline.id == boards).values(status="cancelled"))
            assert unit.own("b1", Q.MARK_FIRED, [mark(boards)], firing=boards) == 0
        assert deadline_status(session, boards) == "cancelled"


def test_a_staged_fired_mark_that_no_longer_stands_fails_the_group(harness, boards) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StaleRows, match="1 of 1 rows kept for deadlines"):
        with harness.session() as session:
            with unit_of_work.group(session, own_writes=True) as unit:
                unit.own("b1", Q.MARK_FIRED, [mark(boards)], firing=boards)
                # Changed behind the unit's back: never done by dealer's own steps.
                session.execute(update(Deadline).where(Deadline.id == boards).values(paused=True))
    with harness.session() as session:
        assert deadline_status(session, boards) == "pending"  # rolled back with the group


def test_a_kept_game_is_locked_and_read_once_and_followed_as_a_fresh_read(harness, boards, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    reads: list[str] = []
    real = unit_of_work.lock_game
    monkeypatch.setattr(unit_of_work, "lock_game", lambda conn, game_id: reads.append(game_id) or real(conn, game_id))
    with harness.session() as session:
        with unit_of_work.group(session, own_writes=True, keep_games=True) as unit:
            first = unit.game("b1")
            assert unit.game("b1") is first and reads == ["b1"]
            steps.run_step(session, "b1", AT, ClientSeedAdded(player="alice", seed="alice: one"),
                           origin="x:1", actor="alice")
            assert reads == ["b1"]  # the step used the kept game
            kept = unit.game("b1")
            assert kept.row.client_seeds == ["alice: one"]
            assert kept.row.next_event_seq == first.row.next_event_seq + 1
            unit.before_reading(["b1"])
            fresh = KeptGame.read(lock_game(session.connection(), "b1"))
            assert kept.same_as(fresh)
            assert unit.kept_row("b1") == kept.row


def test_a_kept_game_leaves_out_the_deadline_its_step_fires(harness, boards) -> None:  # type: ignore[no-untyped-def]
    with harness.session() as session:
        with unit_of_work.group(session, own_writes=True, keep_games=True) as unit:
            unit.lock_games(["b1", "b2"])
            assert {row[0] for row in unit.kept["b1"].pending} == {boards}  # type: ignore[index]
            assert unit.game("b1", firing=boards).pending == []
            assert unit.kept["b1"].pending == []  # type: ignore[index]


def test_the_games_version_counts_steps_that_change_who_plays_or_a_status(harness, boards) -> None:  # type: ignore[no-untyped-def]
    # What routing read of the senders' games stands while it does not change; it
    # outlives the group, in the transaction's unit.
    with harness.session() as session:
        before = unit_of_work.of(session).games_version
        with unit_of_work.group(session, own_writes=True, keep_games=True) as unit:
            steps.run_step(session, "b1", AT, ClientSeedAdded(player="alice", seed="alice: one"),
                           origin="x:1", actor="alice")
            assert unit.games_version == before
            steps.run_step(session, "b1", AT, CommandSent(actor="alice", line="close"),
                           origin="x:2", actor="alice", command=("close",))
            assert unit.games_version == before + 1
            assert "b1" not in (unit.kept or {}) or unit.kept["b1"].row.status == "finished"
        assert unit_of_work.of(session).games_version == before + 1
        assert status(session, "b1") == "finished"
