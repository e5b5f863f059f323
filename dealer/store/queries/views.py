"""The reads of the read views and the status page; a list reads a fixed number of queries."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterator, Sequence

from sqlalchemy import Row, and_, bindparam, func, or_, select
from sqlalchemy.orm import Session

from dealer.store.models import (
    Deadline, Draw, Event, Game, GamePlayer, Holding, Inbound, Post, Seed,
)

_games = Game.__table__
_game_players = GamePlayer.__table__
_holdings = Holding.__table__
_deadlines = Deadline.__table__
_events = Event.__table__


# -- read views ----------------------------------------------------------------------------

SCOPE_OF = select(_games.c.id, _games.c.kind, _games.c.state, _games.c.parent_id).where(
    _games.c.id == bindparam("game_id")
)
"""What the ledger scope of game ``game_id`` depends on (its kind, state and parent)."""


def holdings_of(session: Session, account: str) -> dict[str, int]:
    """Every item ``account`` holds a positive amount of."""
    rows = session.execute(
        select(_holdings.c.item, _holdings.c.amount).where(_holdings.c.account == account)
    )
    return {row.item: row.amount for row in rows if row.amount > 0}


def games_of_player(session: Session, name: str) -> list[str]:
    """The ids of the games ``name`` takes part in, in id order."""
    return list(session.scalars(
        select(GamePlayer.game_id).where(GamePlayer.player == name).order_by(GamePlayer.game_id)
    ))


def newest_messages(session: Session, *, failed: bool = False, limit: int = 20) -> list[Inbound]:
    """The newest stored messages (only failed ones with ``failed``), newest first."""
    query = select(Inbound).order_by(Inbound.received_at.desc(), Inbound.id.desc()).limit(limit)
    if failed:
        query = query.where(Inbound.status == "failed")
    return list(session.scalars(query))


def count_failed_messages(session: Session) -> int:
    """How many stored messages are ``failed``."""
    return session.scalar(select(func.count()).select_from(Inbound).where(Inbound.status == "failed")) or 0


def outbox_posts(session: Session, *, failed: bool = False, limit: int = 20) -> list[Post]:
    """The newest posts (only the parked ones with ``failed``), newest first."""
    query = select(Post).order_by(Post.id.desc()).limit(limit)
    if failed:
        query = query.where(Post.status == "failed")
    return list(session.scalars(query))


def game_deadlines(session: Session, game_id: str) -> list[Deadline]:
    """Every deadline row of a game, earliest first."""
    return list(session.scalars(
        select(Deadline).where(Deadline.game_id == game_id).order_by(Deadline.due_at, Deadline.id)
    ))


def game_events(session: Session, game_id: str) -> list[Event]:
    """A game's whole history, in order."""
    return list(session.scalars(select(Event).where(Event.game_id == game_id).order_by(Event.seq)))


def game_seeds(session: Session, game_id: str) -> list[Seed]:
    """Every epoch of a game's fair source, in order."""
    return list(session.scalars(select(Seed).where(Seed.game_id == game_id).order_by(Seed.epoch)))


def games_newest_first(session: Session) -> Sequence[Row[Any]]:
    """``id, kind, status, created_at`` of every game, newest first."""
    return session.execute(
        select(_games.c.id, _games.c.kind, _games.c.status, _games.c.created_at)
        .order_by(_games.c.created_at.desc(), _games.c.id)
    ).all()


def players_by_game(session: Session) -> dict[str, list[str]]:
    """The players of every game, by game id, each list sorted (one query)."""
    result: dict[str, list[str]] = {}
    rows = session.execute(
        select(_game_players.c.game_id, _game_players.c.player)
        .order_by(_game_players.c.game_id, _game_players.c.player)
    )
    for row in rows:
        result.setdefault(row.game_id, []).append(row.player)
    return result


def next_deadline_by_game(session: Session) -> dict[str, datetime]:
    """The earliest pending deadline of every game that has one, by game id (one query)."""
    rows = session.execute(
        select(_deadlines.c.game_id, func.min(_deadlines.c.due_at).label("due_at"))
        .where(_deadlines.c.status == "pending")
        .group_by(_deadlines.c.game_id)
    )
    return {row.game_id: row.due_at for row in rows}


def game_events_with_prefix(session: Session, game_id: str, prefixes: tuple[str, ...]) -> list[Event]:
    """A game's events whose type starts with one of ``prefixes``, in order."""
    return list(session.scalars(
        select(Event).where(Event.game_id == game_id,
                            or_(*(Event.type.startswith(p, autoescape=True) for p in prefixes)))
        .order_by(Event.seq)
    ))


def game_events_of_type(session: Session, game_id: str, type_: str) -> list[Event]:
    """A game's events of one type, in order."""
    return list(session.scalars(
        select(Event).where(Event.game_id == game_id, Event.type == type_).order_by(Event.seq)
    ))


def epoch_draws(session: Session, game_id: str, epoch: int) -> list[Draw]:
    """The recorded draws of one epoch of a game's fair source, by counter."""
    return list(session.scalars(
        select(Draw).where(Draw.game_id == game_id, Draw.epoch == epoch).order_by(Draw.counter)
    ))


# -- the status page -----------------------------------------------------------------------

def child_games(session: Session, parent_id: str) -> Sequence[Row[Any]]:
    """The games opened inside ``parent_id`` (its matches), oldest first."""
    return session.execute(
        select(_games.c.id, _games.c.kind, _games.c.status, _games.c.created_at)
        .where(_games.c.parent_id == parent_id).order_by(_games.c.created_at, _games.c.id)
    ).all()


def game_rows(session: Session, game_ids: list[str]) -> Sequence[Row[Any]]:
    """``id, kind, status, created_at, parent_id`` of the games named, newest first."""
    if not game_ids:
        return []
    return session.execute(
        select(_games.c.id, _games.c.kind, _games.c.status, _games.c.created_at, _games.c.parent_id)
        .where(_games.c.id.in_(game_ids)).order_by(_games.c.created_at.desc(), _games.c.id)
    ).all()


def events_of_types(session: Session, game_ids: list[str], types: Sequence[str]) -> list[Event]:
    """The events of the types named in the games named, oldest first (one query)."""
    if not game_ids:
        return []
    return list(session.scalars(
        select(Event).where(Event.game_id.in_(game_ids), Event.type.in_(list(types)))
        .order_by(Event.at, Event.game_id, Event.seq)
    ))


def events_newest_first(session: Session, game_ids: list[str], types: Sequence[str],
                        batch: int = 1000) -> Iterator[Row[Any]]:
    """The events of these types in these games, newest first, ``batch`` rows at a time."""
    if not game_ids:
        return
    query = (
        select(_events.c.id, _events.c.game_id, _events.c.seq, _events.c.at, _events.c.type,
               _events.c.data)
        .where(_events.c.game_id.in_(game_ids), _events.c.type.in_(list(types)))
        .order_by(_events.c.at.desc(), _events.c.id.desc())
        .limit(batch)
    )
    after: tuple[Any, Any] | None = None
    while True:
        page = query if after is None else query.where(or_(
            _events.c.at < after[0], and_(_events.c.at == after[0], _events.c.id < after[1])))
        rows = session.execute(page).all()
        yield from rows
        if len(rows) < batch:
            return
        after = (rows[-1].at, rows[-1].id)


def revealed_seeds(session: Session, game_id: str) -> list[Seed]:
    """The game's seeds already revealed, by epoch."""
    return list(session.scalars(
        select(Seed).where(Seed.game_id == game_id, Seed.revealed_at.is_not(None)).order_by(Seed.epoch)
    ))


def change_mark(session: Session) -> str:
    """A short text that changes whenever any game changes (the status page polls it)."""
    row = session.execute(
        select(func.max(_games.c.updated_at), func.sum(_games.c.next_event_seq), func.count())
        .select_from(_games)
    ).one()
    deadlines = session.execute(
        select(func.count(), func.max(_deadlines.c.due_at)).select_from(_deadlines)
        .where(_deadlines.c.status == "pending")
    ).one()
    return f"{row[0]}|{row[1]}|{row[2]}|{deadlines[0]}|{deadlines[1]}"
