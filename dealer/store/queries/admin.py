"""The admin's reads and writes: balances, look-alike keys, overrides, failed messages."""

from __future__ import annotations

from sqlalchemy import Update, bindparam, select, update
from sqlalchemy.orm import Session

from dealer.store.models import Deadline, Holding, Inbound, Override, Player, PlayerLookAlike

_players = Player.__table__


def balance(session: Session, account: str, item: str) -> int:
    """What ``account`` holds of ``item``."""
    amount = session.scalar(
        select(Holding.amount).where(Holding.account == account, Holding.item == item)
    )
    return amount or 0


# -- players -------------------------------------------------------------------------------

_look_alikes = PlayerLookAlike.__table__
_LOOK_ALIKE_PLAYER = (
    select(_players.c.name)
    .join(_look_alikes, _look_alikes.c.player == _players.c.key)
    .where(_look_alikes.c.key.in_(bindparam("keys", expanding=True)))
    .order_by(_players.c.key)
    .limit(1)
)


def look_alike_player(session: Session, keys: frozenset[str]) -> str | None:
    """The name of a player sharing one of the look-alike ``keys``, if any (an index probe)."""
    return session.execute(_LOOK_ALIKE_PLAYER, {"keys": sorted(keys)}).scalar()


def add_look_alikes(session: Session, player: str, keys: frozenset[str]) -> None:
    """Store player ``player``'s look-alike keys."""
    session.execute(_look_alikes.insert(), [{"key": k, "player": player} for k in sorted(keys)])


# -- overrides and the deadlines they name ----------------------------------------------

def pending_deadlines_of(session: Session, game_id: str, name: str | None = None) -> list[Deadline]:
    """The game's pending deadlines (only those called ``name`` if given), earliest first."""
    query = select(Deadline).where(Deadline.game_id == game_id, Deadline.status == "pending")
    if name is not None:
        query = query.where(Deadline.name == name)
    return list(session.scalars(query.order_by(Deadline.due_at, Deadline.id)))


def overrides(session: Session) -> list[Override]:
    """Every override entry the daemon has seen and applied."""
    return list(session.scalars(select(Override)))


# -- failed messages -----------------------------------------------------------------------

def failed_messages(session: Session) -> list[Inbound]:
    """Every failed message, in the order they were sent."""
    return list(session.scalars(
        select(Inbound).where(Inbound.status == "failed").order_by(Inbound.sent_at, Inbound.id)
    ))


def messages_with_external_id(session: Session, external_id: str) -> list[Inbound]:
    """The stored messages whose own id is ``external_id`` (one per source at most)."""
    return list(session.scalars(select(Inbound).where(Inbound.external_id == external_id)))


def retry_failed(ids: list[int]) -> Update:
    """UPDATE the failed messages of ``ids`` back to pending, their error and outcome cleared."""
    return (
        update(Inbound)
        .where(Inbound.id.in_(ids), Inbound.status == "failed")
        .values(status="pending", error=None, outcome=None, processed_at=None)
    )
