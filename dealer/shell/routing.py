"""Which game a stored message is for: its ``game`` field or a ``game ID`` line, else the
game owning its channel, else in a PM the sender's one game; a match's command goes to the
sender's one running match (a child game owns no channel)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from sqlalchemy import Row, bindparam, select
from sqlalchemy.orm import Session

from dealer.clock import iso_exact
from dealer.games import rules_for
from dealer.routes import ACCOUNT
from dealer.shell import unit_of_work
from dealer.store import queries
from dealer.store.models import Game, GamePlayer, Inbound, Player
from dealer.store.queries.replies import note_told
from dealer.text import player_key

GameRef = Row[Any] | queries.PlayerGame
"""A game as routing found it (``id``, ``kind``, ``status``, ``channel``, ``parent_id``, ``created_at``)."""

PlayerRef = Row[Any] | queries.PlayerGame
"""A player as routing found it: a row with ``key`` and ``name``."""

InboundRef = Inbound | queries.ClaimedMessage
"""A stored message being handled."""


GAME_LINE = re.compile(r"^game\s+(\S+)$", re.IGNORECASE)
SEED_LINE = re.compile(r"^seed\s+(.+)$", re.IGNORECASE)
HELP_LINE = re.compile(r"^(help|\?|commands)$", re.IGNORECASE)


_PLAYER = select(Player.__table__.c.key, Player.__table__.c.name).where(
    Player.__table__.c.key == bindparam("key")
)


_ROUTING = "dealer.routing_reads"
"""``session.info`` key: what routing read of the senders (:class:`_Senders`)."""


@dataclass
class _Senders:
    """The senders routing read in a transaction and their unfinished games, kept until a step
    changes who plays where (``games_version``)."""

    version: int
    """:attr:`~dealer.shell.unit_of_work.UnitOfWork.games_version` when ``games`` were read."""
    players: dict[str, PlayerRef | None] = field(default_factory=dict)
    """By sender as stored: the player (``key``, ``name``), or None for no player."""
    games: dict[str, list[GameRef]] = field(default_factory=dict)
    """By player name: the unfinished games the player takes part in."""


def _senders(session: Session) -> _Senders:
    """What routing read in ``session``, its games dropped if a step changed any since."""
    version = unit_of_work.of(session).games_version
    senders = session.info.get(_ROUTING)
    if senders is None:
        senders = session.info[_ROUTING] = _Senders(version)
    elif senders.version != version:
        senders.games.clear()
        senders.version = version
    return senders


def read_senders(session: Session, names: Iterable[str], *, keep_games: bool = False) -> None:
    """Read the senders ``names`` not read yet (a platform account is read through the account
    it linked, :func:`find_sender`) with their unfinished games, in one statement for a group
    (``keep_games``: the same statement locks those games, kept by the group's unit of work)."""
    senders = _senders(session)
    keys = {name: player_key(name) for name in names
            if name not in senders.players and not ACCOUNT.match(name)}
    if not keys:
        return
    unit = unit_of_work.of(session)
    unit.before_reading()  # a step of the group may have changed a game's status
    found = queries.players_with_games(session, sorted(set(keys.values())),
                                       unit.read_locked if keep_games else None)
    for name, key in keys.items():  # by sender as stored
        rows = found.get(key)
        senders.players[name] = rows[0] if rows else None
        if rows:
            senders.games[rows[0].name] = [row for row in rows if row.id is not None]


def read_senders_keeping_games(session: Session, names: Iterable[str]) -> None:
    """What a group reads first, in one statement: its senders, their unfinished games locked
    and kept, and whether each sender was told of each game: the group holds the step lock
    alone, so only its own replies change that (each one noted, ``queries.replies.note_told``)."""
    read_senders(session, names, keep_games=True)
    for name, games in _senders(session).games.items():
        for game in games:
            note_told(session, game.id, name, game.told)


def find_sender(session: Session, name: str) -> PlayerRef | None:
    """The player a sender is (``key``, ``name``), by its name or, for a platform account, by the
    account it linked (a message is attributed by account, never by a display name), read
    with the player's unfinished games in the same statement, unless read already."""
    senders = _senders(session)
    if name not in senders.players:
        if ACCOUNT.match(name):
            key = queries.player_of(session, name)
            senders.players[name] = None if key is None else session.execute(_PLAYER, {"key": key}).first()
        else:
            read_senders(session, [name])
    return senders.players[name]


def player_games(session: Session, name: str) -> list[Row[Any]]:
    """The unfinished games ``name`` takes part in."""
    senders = _senders(session)
    games = senders.games.get(name)
    if games is None:
        unit_of_work.of(session).before_reading()
        games = senders.games[name] = queries.player_games(session, name)
    return games


def find_game(session: Session, inbound: InboundRef, sender: PlayerRef,
              chosen: str | None) -> tuple[GameRef | None, str | None]:
    """The game a line is for, or ``(None, why)``."""
    if chosen:
        # One of the sender's games, as read already, needs no statement (most `game ID`
        # lines name one).
        known = _senders(session).games.get(sender.name, ())
        game = next((g for g in known if g.id == chosen), None)
        if game is None:
            unit_of_work.of(session).before_reading()
            game = queries.game_by_id(session, chosen)
        if game is None:
            return None, f"There is no game {chosen!r}."
        return game, None
    if inbound.channel != "pm":
        unit_of_work.of(session).before_reading()
        on_channel = queries.games_on_channel(session, inbound.channel)
        if len(on_channel) == 1:
            return on_channel[0], None
        if len(on_channel) > 1:
            ids = ", ".join(g.id for g in on_channel)
            return None, f"Several games run in {inbound.channel} ({ids}); start with 'game ID'."
    mine = player_games(session, sender.name)
    if len(mine) == 1:
        return mine[0], None
    if not mine:
        unit_of_work.of(session).before_reading()
        finished = session.scalar(
            select(Game.id)
            .join(GamePlayer, GamePlayer.game_id == Game.id)
            .where(GamePlayer.player == sender.name, Game.status == "finished")
            .order_by(Game.updated_at.desc())
            .limit(1)
        )
        if finished:
            return None, f"Your game {finished} has finished, and you are in no running game."
        open_games = [
            g.id
            for g in session.scalars(select(Game).where(Game.status != "finished").order_by(Game.id))
            if rules_for(g.kind).open_to_all
        ]
        hint = f" Open games: {', '.join(open_games)}." if open_games else ""
        return None, f"You are in no running game, so the line has no game to go to.{hint} Start with 'game ID'."
    ids = ", ".join(g.id for g in mine)
    return None, f"You are in several games ({ids}); start the message with a line 'game ID'."


def match_route(session: Session, sender: PlayerRef, line: str,
                route: tuple[GameRef | None, str | None],
                public: bool) -> tuple[GameRef | None, str | None]:
    """A match's command sent where its parent is reached goes to the sender's one running
    match whose ruleset has the line's first word, when the routed game lacks that word."""
    game, _ = route
    words = line.split()
    if not words or HELP_LINE.match(line) or SEED_LINE.match(line) or (game is None and public):
        return route
    word = words[0]
    if game is not None and rules_for(game.kind).is_command_word(word):
        return route
    mine = player_games(session, sender.name)
    matches = [g for g in mine
               if g.parent_id is not None and (game is None or g.parent_id == game.id)
               and rules_for(g.kind).is_command_word(word)]
    if len(matches) == 1:
        return matches[0], None
    if game is None and len({g.parent_id or g.id for g in mine}) == 1:
        # A PM of a player whose games are one Hall and its matches: a Hall command goes to
        # the Hall.
        parents = [g for g in mine if g.parent_id is None and rules_for(g.kind).is_command_word(word)]
        if len(parents) == 1:
            return parents[0], None
    if len(matches) > 1:
        ids = ", ".join(g.id for g in matches)
        return None, f"You play in several matches ({ids}); start the message with a line 'game ID'."
    return route


def before_game(session: Session, game: GameRef, inbound: InboundRef) -> str | None:
    """Why a message sent before its game began is refused (else None): a clock far behind
    would otherwise have every deadline it sets fall before the game began."""
    if inbound.sent_at >= game.created_at:
        return None  # the common case needs no query
    # The game may have been opened by an earlier message of the group.
    unit_of_work.of(session).before_reading_appended()
    began = queries.game_began(session, game.id, game.created_at)
    if inbound.sent_at >= began:
        return None
    return (
        f"The message says it was sent at {iso_exact(inbound.sent_at)}, before game "
        f"{game.id} began ({iso_exact(began)}), so it does not count for it. "
        "If the time is wrong, send the message again."
    )
