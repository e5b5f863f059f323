"""What the platforms' adapters keep: linked accounts, history cursors, webhook delivery
ids, mail threads and Discourse ids."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Sequence

from sqlalchemy import bindparam, delete, exists, func, select, update
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.store.models import Account, Cursor, Inbound, Player, Post, WebhookDelivery
from dealer.text import player_key

_inbound = Inbound.__table__
_posts = Post.__table__
_players = Player.__table__
_accounts = Account.__table__


# -- accounts linked to players -----------------------------------------------------------

_cursors = Cursor.__table__

_PLAYER_OF_ACCOUNT = select(_accounts.c.player).where(
    _accounts.c.platform == bindparam("platform"), _accounts.c.account_id == bindparam("account_id")
)
_ACCOUNTS_OF_PLAYERS = select(_accounts.c.player, _accounts.c.platform, _accounts.c.account_id).where(
    _accounts.c.player.in_(bindparam("players", expanding=True))
)


def linked_accounts_among(connection: Connection | Session, platform: str, account_ids: Sequence[str]) -> set[str]:
    """Which of ``account_ids`` on ``platform`` are linked to a player (one query)."""
    if not account_ids:
        return set()
    return set(connection.execute(select(_accounts.c.account_id).where(
        _accounts.c.platform == platform, _accounts.c.account_id.in_(sorted(set(account_ids))))).scalars())


def player_of_account(connection: Connection | Session, platform: str, account_id: str) -> str | None:
    """The key of the player linked to an account, if any."""
    return connection.execute(_PLAYER_OF_ACCOUNT, {"platform": platform, "account_id": account_id}).scalar()


_NAMESAKE_WITHOUT_DISCOURSE = select(_players.c.key).where(
    _players.c.key == bindparam("key"),
    ~exists().where(_accounts.c.player == _players.c.key, _accounts.c.platform == "discourse"),
)


def player_of_sender(connection: Connection | Session, platform: str, account_id: str) -> str | None:
    """The key of the player linked to an account; a Discourse username linked to nobody is its
    namesake, unless that player linked another Discourse account (docs/DISCOURSE.md)."""
    key = player_of_account(connection, platform, account_id)
    if key is None and platform == "discourse":
        key = connection.execute(_NAMESAKE_WITHOUT_DISCOURSE, {"key": player_key(account_id)}).scalar()
    return key


def accounts_of(connection: Connection | Session, players: Sequence[str]) -> dict[str, dict[str, str]]:
    """Each of ``players`` (keys) with its accounts, platform -> account id (one query)."""
    if not players:
        return {}
    return by_player(connection.execute(_ACCOUNTS_OF_PLAYERS, {"players": list(players)}))


def by_player(rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, str]]:
    """``(player, platform, account_id)`` rows as player -> platform -> account id."""
    found: dict[str, dict[str, str]] = {}
    for player, platform, account_id in rows:
        found.setdefault(player, {})[platform] = account_id
    return found


def linked_accounts(connection: Connection | Session, platform: str) -> list[str]:
    """Every account id linked to a player on ``platform``."""
    return list(connection.execute(
        select(_accounts.c.account_id).where(_accounts.c.platform == platform).order_by(_accounts.c.account_id)
    ).scalars())


def link_account(session: Session, player: str, platform: str, account_id: str, now: datetime) -> None:
    """Link an account to a player (the caller has checked that it is free)."""
    session.add(Account(platform=platform, account_id=account_id, player=player, linked_at=now))


def unlink_account(session: Session, platform: str, account_id: str) -> int:
    """Unlink an account; how many rows went (0 or 1)."""
    return session.execute(
        delete(_accounts).where(_accounts.c.platform == platform, _accounts.c.account_id == account_id)
    ).rowcount


# -- history cursors, and what the catch-up reads ------------------------------------------

def cursor(connection: Connection | Session, source: str, place: str) -> str | None:
    """How far ``source`` has read ``place`` (a message id), if it has."""
    return connection.execute(
        select(_cursors.c.position).where(_cursors.c.source == source, _cursors.c.place == place)
    ).scalar()


def cursors(connection: Connection | Session, source: str) -> dict[str, str]:
    """Every place of ``source`` with its position."""
    return {r.place: r.position for r in connection.execute(
        select(_cursors.c.place, _cursors.c.position).where(_cursors.c.source == source))}


def move_cursor(connection: Connection, source: str, place: str, position: str, now: datetime) -> None:
    """Set how far ``source`` has read ``place``, never backwards (ids only grow)."""
    current = cursor(connection, source, place)
    if current is None:
        connection.execute(_cursors.insert().values(source=source, place=place, position=position, updated_at=now))
    elif int(position) > int(current):
        connection.execute(
            update(_cursors).where(_cursors.c.source == source, _cursors.c.place == place)
            .values(position=position, updated_at=now)
        )


def cursor_back(connection: Connection, source: str, place: str, position: str, now: datetime) -> None:
    """Put a cursor back to ``position`` if past it: an earlier message failed to store."""
    current = cursor(connection, source, place)
    if current is not None and int(current) > int(position):
        connection.execute(
            update(_cursors).where(_cursors.c.source == source, _cursors.c.place == place)
            .values(position=position, updated_at=now)
        )


_SENDER_OF_MESSAGE = select(_inbound.c.sender).where(
    _inbound.c.source == bindparam("source"), _inbound.c.external_id == bindparam("external_id")
)


def sender_of_message(connection: Connection | Session, source: str, external_id: str) -> str | None:
    """Who sent a stored message (its ``sender`` as stored), if it is stored."""
    return connection.execute(_SENDER_OF_MESSAGE, {"source": source, "external_id": external_id}).scalar()


_TOLD = select(_posts.c.id).where(
    _posts.c.channel == "pm", _posts.c.recipient == bindparam("recipient")
).limit(1)


def already_told(connection: Connection | Session, recipient: str) -> bool:
    """Whether a private post to ``recipient`` was ever queued (an unlinked account is told once)."""
    return connection.execute(_TOLD, {"recipient": recipient}).first() is not None


# -- the signed webhook inbox (shell/webhooks.py) ------------------------------------------

_webhook_deliveries = WebhookDelivery.__table__


def delivery_seen(connection: Connection, source: str, delivery_id: str) -> bool:
    """Whether a webhook delivery with this id from ``source`` was recorded."""
    return connection.execute(
        select(_webhook_deliveries.c.delivery_id).where(
            _webhook_deliveries.c.source == source,
            _webhook_deliveries.c.delivery_id == delivery_id,
        )
    ).first() is not None


def record_delivery(connection: Connection, source: str, delivery_id: str, now: datetime,
                    forget_before: datetime) -> bool:
    """Record a webhook delivery id; False for a replay. Ids older than ``forget_before`` go."""
    connection.execute(delete(_webhook_deliveries).where(_webhook_deliveries.c.received_at < forget_before))
    insert = postgres_insert if connection.dialect.name == "postgresql" else sqlite_insert
    inserted = connection.execute(
        insert(_webhook_deliveries)
        .values(source=source, delivery_id=delivery_id, received_at=now)
        .on_conflict_do_nothing(index_elements=["source", "delivery_id"])
        .returning(_webhook_deliveries.c.delivery_id)
    ).first()
    return inserted is not None


# -- e-mail threading (shell/mailing.py) -----------------------------------------------------

MAIL_OF_MESSAGE = select(_inbound.c.source, _inbound.c.sender, _inbound.c.raw).where(
    _inbound.c.id == bindparam("id")
)
"""A stored message's source, sender and raw text (``id``): the mail a reply answers."""

LATEST_MAIL_FROM = (
    select(_inbound.c.raw)
    .where(_inbound.c.source == bindparam("source"),
           func.lower(_inbound.c.sender) == func.lower(bindparam("sender")),
           _inbound.c.status != "quarantined")
    .order_by(_inbound.c.id.desc())
    .limit(1)
)
"""The raw text of the latest unquarantined mail of ``sender``: an unauthenticated mail never
decides where posts go."""


# -- Discourse (shell/discourse.py) ---------------------------------------------------------

POST_BY_EXTERNAL_ID = select(_posts.c.id).where(_posts.c.external_id == bindparam("external_id")).limit(1)
"""One of dealer's delivered posts by the id its transport gave it (``external_id``)."""

MESSAGE_BY_EXTERNAL_ID = select(_inbound.c.id).where(
    _inbound.c.source == bindparam("source"), _inbound.c.external_id == bindparam("external_id")
).limit(1)
"""A stored message by its source and id."""

LATEST_MESSAGE_IDS = (
    select(_inbound.c.external_id)
    .where(_inbound.c.source == bindparam("source"), _inbound.c.kind == "message")
    .order_by(_inbound.c.id.desc())
    .limit(50)
)
"""The ids of the latest messages stored from ``source``."""
