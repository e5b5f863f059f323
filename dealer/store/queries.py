"""The store's queries, built once and named for what they ask.

Routing (which game a message, an edit, a deletion or a reaction goes to) reads games as
Core rows with a Game's attributes (``id``, ``kind``, ``status``, ``channel``,
``parent_id``) and leaves the state out: the step that follows reads it, locked.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, select
from sqlalchemy.orm import Session

from dealer.store.models import Game, GameChannel, GamePlayer, Inbound, Post

_games = Game.__table__
_members = GamePlayer.__table__
_channels = GameChannel.__table__
_inbound = Inbound.__table__
_posts = Post.__table__

GAME_REF = (_games.c.id, _games.c.kind, _games.c.status, _games.c.channel, _games.c.parent_id)
"""The columns of a game that routing needs."""

_GAME_BY_ID = select(*GAME_REF).where(_games.c.id == bindparam("game_id"))
_GAME_BY_ID_ANY_CASE = select(*GAME_REF).where(func.lower(_games.c.id) == bindparam("game_id"))
_GAME_STATE = select(_games.c.kind, _games.c.state).where(_games.c.id == bindparam("game_id"))
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
_CHANNELS_OF_GAME = (
    select(_channels.c.channel).where(_channels.c.game_id == bindparam("game_id")).order_by(_channels.c.channel)
)


def game_by_id(session: Session, game_id: str) -> Row[Any] | None:
    """The game ``game_id`` (exactly, else case aside), or None."""
    game = session.execute(_GAME_BY_ID, {"game_id": game_id}).first()
    if game is None:
        game = session.execute(_GAME_BY_ID_ANY_CASE, {"game_id": game_id.lower()}).first()
    return game


def game_state_row(session: Session, game_id: str) -> Row[Any]:
    """The game's ``kind`` and stored ``state``."""
    return session.execute(_GAME_STATE, {"game_id": game_id}).one()


def player_games(session: Session, name: str) -> list[Row[Any]]:
    """The unfinished games ``name`` takes part in."""
    return list(session.execute(_GAMES_OF_PLAYER, {"player": name}))


def games_on_channel(session: Session, channel: str) -> list[Row[Any]]:
    """The unfinished games that own ``channel`` (as their main channel or a declared one)."""
    return list(session.execute(_GAMES_ON_CHANNEL, {"channel": channel}))


def game_of_target(session: Session, source: str, target: str) -> str | None:
    """The game an edit, deletion or reaction goes to: that of the message it targets.

    ``target`` is first read as a player's message (its inbox id from the same source: the
    game it was applied to), then as one of dealer's posts (the outbox post's ``id``, as
    the directory publisher writes it: the game that posted it). None when neither knows a
    game.
    """
    game_id = session.execute(_GAME_OF_MESSAGE, {"source": source, "external_id": target}).scalar()
    if game_id is not None:
        return game_id
    if target.isdigit() and len(target) < 19:
        return session.execute(_GAME_OF_POST, {"post_id": int(target)}).scalar()
    return None


def channels_of_game(connection: Connection | Session, game_id: str) -> list[str]:
    """Every channel game ``game_id`` owns, sorted."""
    return list(connection.execute(_CHANNELS_OF_GAME, {"game_id": game_id}).scalars())


def own_channels(connection: Connection | Session, game_id: str, channels: list[str]) -> None:
    """Record that game ``game_id`` owns ``channels`` (its main one first)."""
    wanted = list(dict.fromkeys(channels))
    if wanted:
        connection.execute(_channels.insert(), [{"game_id": game_id, "channel": c} for c in wanted])
