"""Who sent a message, where a transport cannot vouch for it: pass phrases' hashes, the
player a sender is, and quarantined messages (a pass never claims them)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.routes import ACCOUNT
from dealer.store.models import Inbound, Passphrase, Player
from dealer.store.queries.platforms import player_of_sender
from dealer.text import player_key

QUARANTINED = "quarantined"
"""The status of a message held because its sender was not authenticated."""


def player_of(connection: Connection | Session, sender: str) -> str | None:
    """The key of the player a stored sender is, or None."""
    account = ACCOUNT.match(sender)
    if account:
        platform, account_id = account.group("platform"), account.group("id")
        if platform in ("discourse", "email"):
            account_id = account_id.lower()  # both kept in lower case
        return player_of_sender(connection, platform, account_id)
    key = player_key(sender)
    return connection.execute(select(Player.key).where(Player.key == key)).scalar()


def passphrase_hash(connection: Connection | Session, player: str) -> str | None:
    """The hash of ``player``'s pass phrase (a key), or None when none is set."""
    return connection.execute(select(Passphrase.hash).where(Passphrase.player == player)).scalar()


def set_passphrase_hash(connection: Connection | Session, player: str, hashed: str, now: datetime) -> None:
    """Keep ``hashed`` as ``player``'s pass phrase (a key), replacing any before it."""
    connection.execute(delete(Passphrase).where(Passphrase.player == player))
    connection.execute(insert(Passphrase).values(player=player, hash=hashed, set_at=now))


def count_quarantined_like(connection: Connection, sender: str, why: str, since: datetime) -> int:
    """How many of ``sender``'s messages received since ``since`` were quarantined for a reason containing ``why``."""
    return connection.execute(
        select(func.count()).select_from(Inbound).where(
            Inbound.sender == sender, Inbound.status == QUARANTINED, Inbound.received_at >= since,
            Inbound.error.contains(why, autoescape=True))
    ).scalar() or 0


def quarantined_messages(session: Session, limit: int = 20) -> list[Inbound]:
    """The newest quarantined messages, newest first."""
    return list(session.scalars(
        select(Inbound).where(Inbound.status == QUARANTINED)
        .order_by(Inbound.received_at.desc(), Inbound.id.desc()).limit(limit)
    ))


def count_quarantined(connection: Connection | Session) -> int:
    """How many stored messages are quarantined."""
    return connection.execute(
        select(func.count()).select_from(Inbound).where(Inbound.status == QUARANTINED)
    ).scalar() or 0


def release_quarantined(session: Session, ids: list[int]) -> None:
    """Put the quarantined messages of ``ids`` back to pending, their reason cleared."""
    session.execute(
        update(Inbound).where(Inbound.id.in_(ids), Inbound.status == QUARANTINED)
        .values(status="pending", error=None)
    )
