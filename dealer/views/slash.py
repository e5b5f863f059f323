"""Autocomplete for the slash commands (dealer/games/slash.py): the values a player may pick
now, read from the game's state and the ledger, with no step and no write."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from dealer import ledger as L
from dealer.cards import card_of_item, display
from dealer.games import rules_for
from dealer.games.slash import GAME_OPTION, Invoked
from dealer.store import queries as Q
from dealer.store.models import Game, Player
from dealer.views.admin import ledger_scope

MAX = 25


def player_of(session: Session, sender: str) -> str | None:
    """The name of the player linked to ``discord:ID`` (None: nobody)."""
    platform, _, account = sender.partition(":")
    key = Q.player_of_sender(session, platform, account)
    player = session.get(Player, key) if key else None
    return player.name if player else None


def game_for(session: Session, kind: str, channel: str | None, player: str | None,
             named: str | None = None) -> Game | None:
    """The game of ``kind`` an interaction is for: the one named, the channel's, else the player's one."""
    if named:
        return session.get(Game, named)
    ids = [g.id for g in Q.games_on_channel(session, channel) if g.kind == kind] if channel else []
    if len(ids) != 1 and player:
        ids = [g.id for g in Q.player_games(session, player) if g.kind == kind]
    return session.get(Game, ids[0]) if len(ids) == 1 else None


def choices(session: Session, sender: str, channel: str | None, asked: Invoked,
            typed: str) -> list[dict[str, Any]]:
    """Discord's autocomplete choices (``name``, ``value``) for the focused option."""
    what = asked.completes()
    player = player_of(session, sender)
    if what == GAME_OPTION:
        mine = [g.id for g in Q.player_games(session, player)] if player else []
        near = [g.id for g in Q.games_on_channel(session, channel)] if channel else []
        found = [(i, i) for i in dict.fromkeys(mine + near)
                 if (g := session.get(Game, i)) is not None and g.kind == asked.kind]
        return _matching(found, typed)
    game = game_for(session, asked.kind, channel, player, asked.game)
    if game is None or what is None:
        return []
    rules = rules_for(game.kind)
    state: Any = rules.State.from_stored(game.state)
    if what == "horse":
        found = [(h.name, h.name) for h in getattr(state, "horses", [])]
    elif what == "player":
        found = [(p, p) for p in rules.summary(state).players if p != player]
    elif player is None:
        found = []
    elif what == "open":
        found = _open(rules, asked, state, player)
    elif hasattr(state, "seat"):  # a match: the cards of one's hand, then the spare ones
        seat = state.seat(player)
        items = [h.item for h in (seat.hand or [])] + list(seat.spare) if seat else []
        found = [_card(item) for item in dict.fromkeys(items)]
    else:
        held = Q.holdings_of(session, L.Scope(ledger_scope(session, game.id)).player(player))
        found = [_card(item) for item in sorted(held) if card_of_item(item) is not None]
    return _matching(found, typed)


def _open(rules: Any, asked: Invoked, state: Any, player: str) -> list[tuple[str, Any]]:
    """The numbers the command's suggestions for ``player`` name now (offers made to them,
    their duels ...), each with its help line."""
    command = asked.sub.command
    if command is None or command.suggest is None or not command.is_valid(state, player):
        return []
    found = []
    for example in command.suggest(state, player):
        match = command.regex.fullmatch(rules.commands.clean(example.line))
        if match and match.group(asked.focused) and all(
                match.group(k) == v for k, v in asked.sub.fixed.items()):
            found.append((command.help_line(example), int(match.group(asked.focused).strip("#:"))))
    return found


def _card(item: str) -> tuple[str, str]:
    """A card's name as shown, and as a command writes it (``holo 7H``)."""
    card, holo = card_of_item(item)  # type: ignore[misc]
    return display(item), f"holo {card.code}" if holo else card.code


def _matching(found: list[tuple[str, Any]], typed: str) -> list[dict[str, Any]]:
    typed = typed.strip().lower()
    kept = [(n, v) for n, v in found if typed in n.lower() or typed in str(v).lower()]
    return [{"name": n[:100], "value": v[:100] if isinstance(v, str) else v} for n, v in kept[:MAX]]
