"""Routing: which game a message, an edit, a deletion or a reaction goes to (games read
without their state: the step reads it, locked)."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any, Callable, Sequence

from sqlalchemy import Row, Select, Text, and_, bindparam, cast, exists, func, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.clock import as_utc, parse_time
from dealer.routes import ACCOUNT
from dealer.store.direct import direct
from dealer.store.models import (
    Account, Event, Game, GameChannel, GamePlayer, Inbound, Player, Post, PostPart,
)
from dealer.store.queries.platforms import player_of_sender
from dealer.store.queries.sql import row_type
from dealer.store.queries.steps import LOCKED_GAMES

_games = Game.__table__
_inbound = Inbound.__table__
_posts = Post.__table__
_events = Event.__table__
_players = Player.__table__
_members = GamePlayer.__table__
_channels = GameChannel.__table__

GAME_REF = (_games.c.id, _games.c.kind, _games.c.status, _games.c.channel, _games.c.parent_id,
            _games.c.created_at)
"""The columns of a game that routing needs."""

_GAME_BY_ID = select(*GAME_REF).where(_games.c.id == bindparam("game_id"))
_GAME_BY_ID_ANY_CASE = select(*GAME_REF).where(func.lower(_games.c.id) == bindparam("game_id"))
_GAME_STATE = select(_games.c.kind, cast(_games.c.state, Text).label("state")).where(
    _games.c.id == bindparam("game_id")
)
_GAMES_OF_PLAYER = (
    select(*GAME_REF)
    .join(_members, _members.c.game_id == _games.c.id)
    .where(_members.c.player == bindparam("player"), _games.c.status != "finished")
    .order_by(_games.c.created_at, _games.c.id)
)
_GAMES_ON_CHANNEL = (
    select(*GAME_REF)
    .join(_channels, _channels.c.game_id == _games.c.id)
    .where(_channels.c.channel == bindparam("channel"), _games.c.status != "finished")
    .order_by(_games.c.created_at, _games.c.id)
)
_GAME_OF_MESSAGE = select(_inbound.c.game_id).where(
    _inbound.c.source == bindparam("source"), _inbound.c.external_id == bindparam("external_id")
)
_GAME_OF_POST = select(_posts.c.game_id).where(_posts.c.id == bindparam("post_id"))
_REF_OF_POST = select(_posts.c.ref).where(_posts.c.id == bindparam("post_id"))
_FIRST_MESSAGES = (
    select(_inbound.c.sender, func.min(_inbound.c.sent_at))
    .where(
        or_(_inbound.c.game_id == bindparam("game_id"),
            _inbound.c.game_id.in_(select(_games.c.id).where(_games.c.parent_id == bindparam("game_id")))),
        _inbound.c.kind == "message",
        _inbound.c.sent_at >= bindparam("since"),
        _inbound.c.sent_at <= bindparam("until"),
    )
    .group_by(_inbound.c.sender)
)
_GAME_OF_PLATFORM_POST = (
    select(_posts.c.game_id)
    .where(or_(
        _posts.c.external_id == bindparam("external_id"),
        _posts.c.id.in_(select(PostPart.__table__.c.post_id).where(
            PostPart.__table__.c.external_id == bindparam("external_id"))),
    ))
    .limit(1)
)
"""The game of one of dealer's posts by its platform id (of the post or any of its parts)."""
_REF_OF_PLATFORM_POST = _GAME_OF_PLATFORM_POST.with_only_columns(_posts.c.ref)


def game_by_id(session: Session, game_id: str) -> Row[Any] | None:
    """The game ``game_id`` (exactly, else case aside), or None."""
    game = session.execute(_GAME_BY_ID, {"game_id": game_id}).first()
    if game is None:
        game = session.execute(_GAME_BY_ID_ANY_CASE, {"game_id": game_id.lower()}).first()
    return game


def game_state_row(session: Session, game_id: str) -> Row[Any]:
    """The game's ``kind`` and ``state`` as JSON text, parsed as a step's locked read does."""
    return session.execute(_GAME_STATE, {"game_id": game_id}).one()


@lru_cache(maxsize=64)
def _players_with_games(count: int, lock: bool = False) -> Select[Any]:
    """The players of ``count`` keys (``k0``, ``k1``, ...) with their unfinished games and whether
    each had a private post of each (``told``, :func:`dealer.store.queries.replies.was_told`);
    with ``lock`` each game locked and read as ``LOCK_GAME`` reads it (in id order), in the
    columns after those: one statement per count."""
    told = exists().where(_posts.c.game_id == _games.c.id, _posts.c.channel == "pm",
                          _posts.c.recipient == _players.c.name)
    senders = (
        select(_players.c.key, _players.c.name, *GAME_REF, told.label("told"))
        .select_from(_players)
        .outerjoin(_members, _members.c.player == _players.c.name)
        .outerjoin(_games, and_(_games.c.id == _members.c.game_id, _games.c.status != "finished"))
        .where(_players.c.key.in_([bindparam(f"k{i}") for i in range(count)]))
        .order_by(_players.c.key, _games.c.created_at, _games.c.id)
    )
    if not lock:
        return senders
    found = senders.cte("senders")
    locked = (LOCKED_GAMES.where(_games.c.id.in_(select(found.c.id))).order_by(_games.c.id)
              .cte("locked").prefix_with("MATERIALIZED"))
    return (select(found, locked).select_from(found.outerjoin(locked, locked.c.id == found.c.id))
            .order_by(found.c.key, found.c.created_at, found.c.id))


PlayerGame = row_type("PlayerGame", _players_with_games(1))
"""A row of :func:`players_with_games` (routing reads its game's fields again and again)."""


def players_with_games(session: Session, keys: Sequence[str],
                       lock: Callable[..., list[tuple[Any, ...]]] | None = None) -> dict[str, list[PlayerGame]]:
    """Each player of ``keys`` by key: one row per unfinished game (its routing columns), or
    one row whose ``id`` is None; one statement for them all. With ``lock`` (a unit of work's
    ``read_locked``) that statement also locks the games and reads them for it to keep."""
    found: dict[str, list[PlayerGame]] = {}
    session.flush()  # as session.execute would: a player added in this transaction is read
    statement = direct(_players_with_games(len(keys), lock is not None))
    values = {f"k{i}": key for i, key in enumerate(keys)}
    width = len(PlayerGame._fields)
    for row in (statement.rows(session.connection(), values) if lock is None
                else lock(statement, values, width)):
        found.setdefault(row[0], []).append(PlayerGame._make(row[:width]))
    # Each player's rows with a game, or its one row without (a player in no game).
    return {key: [row for row in rows if row.id is not None] or rows[:1] for key, rows in found.items()}


def player_games(session: Session, name: str) -> list[Row[Any]]:
    """The unfinished games ``name`` takes part in."""
    return list(session.execute(_GAMES_OF_PLAYER, {"player": name}))


def games_on_channel(session: Session, channel: str) -> list[Row[Any]]:
    """The unfinished games that own ``channel`` (as their main channel or a declared one)."""
    return list(session.execute(_GAMES_ON_CHANNEL, {"channel": channel}))


def game_of_target(session: Session, source: str, target: str) -> str | None:
    """The game an edit, deletion or reaction goes to: a player's message's (same source), else
    one of dealer's posts' (its outbox id); None when neither knows one."""
    game_id = session.execute(_GAME_OF_MESSAGE, {"source": source, "external_id": target}).scalar()
    if game_id is not None:
        return game_id
    game_id = session.execute(_GAME_OF_PLATFORM_POST, {"external_id": target}).scalar()
    if game_id is not None:
        return game_id
    if target.isdigit() and len(target) < 19:
        return session.execute(_GAME_OF_POST, {"post_id": int(target)}).scalar()
    return None


def post_ref(session: Session, source: str, target: str) -> str | None:
    """The name the rules gave the post a reaction targets (by platform or outbox id); else None."""
    if session.execute(_GAME_OF_MESSAGE, {"source": source, "external_id": target}).first():
        return None  # a player's message of that id comes first (game_of_target)
    found = session.execute(_REF_OF_PLATFORM_POST, {"external_id": target}).first()
    if found is not None:
        return found[0]
    if not target.isdigit() or len(target) >= 19:
        return None
    return session.execute(_REF_OF_POST, {"post_id": int(target)}).scalar()


def first_messages(session: Session, game_id: str, since: datetime,
                   until: datetime) -> dict[str, datetime]:
    """Each sender's first text message to the game or its matches in [``since``, ``until``]."""
    rows = session.execute(_FIRST_MESSAGES, {"game_id": game_id, "since": since, "until": until})
    found = {sender: as_utc(first) for sender, first in rows}
    # A platform stores its sender as the account (``discord:ID``): the rules know players
    # by name, so an account linked to a player counts as that player (the earliest time
    # when a player wrote both ways).
    accounts = [s for s in found if ACCOUNT.match(s)]
    if accounts:
        names = _player_names_of_accounts(session, accounts)
        for account in accounts:
            name = names.get(account)
            if name is not None:
                at = found.pop(account)
                found[name] = min(at, found.get(name, at))
    return found


def _player_names_of_accounts(session: Session, accounts: list[str]) -> dict[str, str]:
    """``platform:id`` -> the name of the player its messages are from, for a player's."""
    wanted = [tuple(a.split(":", 1)) for a in accounts]
    rows = session.execute(
        select(Account.platform, Account.account_id, Player.name)
        .join(Player, Player.key == Account.player)
        .where(or_(*[and_(Account.platform == p, Account.account_id == i) for p, i in wanted]))
    )
    names = {f"{platform}:{account_id}": name for platform, account_id, name in rows}
    for platform, account_id in wanted:
        if platform == "discourse" and f"{platform}:{account_id}" not in names:
            key = player_of_sender(session, platform, account_id)
            name = None if key is None else session.execute(
                select(_players.c.name).where(_players.c.key == key)).scalar()
            if name is not None:
                names[f"{platform}:{account_id}"] = name
    return names


def own_channels(connection: Connection | Session, game_id: str, channels: list[str]) -> None:
    """Record that game ``game_id`` owns ``channels`` (its main one first)."""
    wanted = list(dict.fromkeys(channels))
    if wanted:
        connection.execute(_channels.insert(), [{"game_id": game_id, "channel": c} for c in wanted])
_GAME_START = (
    select(_events.c.data)
    .where(_events.c.game_id == bindparam("game_id"), _events.c.type == "game.create")
    .order_by(_events.c.seq)
    .limit(1)
)


def game_began(session: Session, game_id: str, created_at: datetime) -> datetime:
    """When a game's own time begins: its creation, or an earlier start it was given."""
    data = session.execute(_GAME_START, {"game_id": game_id}).scalar()
    start = data.get("start") if isinstance(data, dict) else None
    return min(created_at, parse_time(start)) if isinstance(start, str) else created_at
