"""The admin's read views (what the CLI prints), as plain dicts; a view of many rows asks a
fixed number of queries, never one per row."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from dealer import ledger as L
from dealer.cards import card_of_item, display
from dealer.clock import iso
from dealer.games import rules_for
from dealer.games.base import GameState, Rules
from dealer.history import shown as shown_fields
from dealer.store import queries as Q
from dealer.store.models import Game, GamePlayer, Inbound, Player, Post
from dealer.text import player_key


class NotFound(ValueError):
    """A view of a player, game or inventory that does not exist; the message says how to find it."""


def find_player(session: Session, name: str) -> Player:
    """The player called ``name`` (as :func:`~dealer.text.player_key` matches), or :class:`NotFound`."""
    player = session.get(Player, player_key(name))
    if player is None:
        raise NotFound(f'there is no player {name!r}; add one with `dealer player add "{name}"`')
    return player


def game_state(game: Any) -> tuple[Rules, GameState]:
    """The ruleset of ``game`` (a Game, or a row of its kind and state) and its stored state, parsed."""
    rules = rules_for(game.kind)
    return rules, rules.State.from_stored(game.state)


def ledger_scope(session: Session, game_id: str) -> str | None:
    """The ledger scope of the game's accounts (its parent's for a child game), for steps, replay and views."""
    row = session.execute(Q.SCOPE_OF, {"game_id": game_id}).one()
    rules = rules_for(row.kind)
    state = rules.State.from_stored(row.state) if row.state else None
    parent_scope = ledger_scope(session, row.parent_id) if row.parent_id else None
    return rules.ledger_scope(row.id, state, parent_scope)


def own_inventories(session: Session, game_id: str, command: str,
                    lock: bool = False) -> tuple[Game, L.Scope]:
    """The game (locked with ``lock``) and its scope, for ``--game``: only a Hall cycle's inventories are its own (GH-1)."""
    game = session.get(Game, game_id, with_for_update=lock)
    if game is None:
        raise NotFound(f"there is no game {game_id!r}; `dealer game list` shows them")
    rules = rules_for(game.kind)
    scope = ledger_scope(session, game.id)  # a child game's are its parent's
    if scope is None:
        raise NotFound(
            f"game {game.id} is {rules.title} ({game.kind}), which keeps no inventories of its "
            f"own; --game names a Hall cycle (GH-1). Without --game, `{command}` uses the "
            "player's wallet"
        )
    return game, L.Scope(scope)


def player_view(session: Session, name: str, game_id: str | None = None) -> dict[str, Any]:
    """``dealer player show``: wallet, cards, packs and games, or with ``game_id`` the inventory
    in that Hall cycle (GH-1), plus ``game`` and ``member``."""
    player = find_player(session, name)
    account = L.player(player.name)
    extra: dict[str, Any] = {}
    if game_id is not None:
        game, scope = own_inventories(session, game_id, "player show")
        account = scope.player(player.name)
        member = session.get(GamePlayer, (game.id, player.name)) is not None
        extra = {"game": game.id, "member": member}
    holdings = Q.holdings_of(session, account)
    cards: list[str] = []
    for item, amount in sorted(holdings.items()):
        if card_of_item(item) is not None:
            cards += [display(item)] * amount
    packs = {item.split(":", 1)[1]: amount for item, amount in holdings.items() if item.startswith("pack:")}
    return {
        "name": player.name,
        "chips": holdings.get(L.CHIPS, 0),
        "vertebrae": holdings.get(L.VERTEBRAE, 0),
        "cards": cards,
        "packs": packs,
        "games": Q.games_of_player(session, player.name),
        **extra,
    }


def game_view(session: Session, game_id: str) -> dict[str, Any]:
    """``dealer game show``: status, players, scores, winner, deadlines, history and the fairness record."""
    game = session.get(Game, game_id)
    if game is None:
        raise NotFound(f"there is no game {game_id!r}")
    rules, state = game_state(game)
    summary = rules.summary(state)
    deadlines = [
        {"name": d.name, "due_at": iso(d.due_at), "status": d.status, "paused": d.paused,
         "error": d.error}
        for d in Q.game_deadlines(session, game.id)
        if d.status == "pending"
    ]
    history = [
        {"seq": e.seq, "at": iso(e.at), "type": e.type, **shown_fields(e.type, e.data)}
        for e in Q.game_events_with_prefix(session, game.id, ("deadline.", "admin."))
    ]
    # Only the events a ruleset's records read (a long Hall's history is large, and the
    # status page shows this view on every request).
    keeps_record = (type(rules).fairness_record is not Rules.fairness_record
                    or type(rules).record_view is not Rules.record_view)
    if not keeps_record:
        events = []
    elif rules.record_events:
        events = Q.game_events_with_prefix(session, game.id, rules.record_events)
    else:
        events = Q.game_events(session, game.id)
    seeds = [
        {
            "epoch": s.epoch,
            "commitment": s.commitment,
            "server_seed": s.server_seed if s.revealed_at else None,
            "client_seeds": s.client_seeds,
        }
        for s in Q.game_seeds(session, game.id)
    ]
    return {
        "id": game.id,
        "kind": game.kind,
        "title": rules.title,
        "status": summary.status,
        "channel": game.channel,
        "players": summary.players,
        "scores": summary.scores,
        "winner": summary.winner,
        "deadlines": deadlines,
        # What a game with no pending deadline waits for, as its posts announced it.
        "waiting": summary.waiting if not deadlines else None,
        # The settings in force: a Hall's adopted proposals may have changed some (GH-23).
        "settings": summary.settings if summary.settings is not None else game.settings,
        "detail": summary.detail,
        "seeds": seeds,
        # The full values behind the hashes the posts shorten (the game's fairness record).
        "sealed": rules.fairness_record([(e.type, e.data) for e in events]),
        "history": history,
        "created_at": iso(game.created_at),
        **rules.record_view([(e.type, e.data) for e in events], summary),
    }


def list_games(session: Session) -> list[dict[str, Any]]:
    """``dealer game list``: every game, newest first, in three queries."""
    players = Q.players_by_game(session)
    next_deadline = Q.next_deadline_by_game(session)
    rows = []
    for game in Q.games_newest_first(session):
        due = next_deadline.get(game.id)
        rows.append(
            {
                "id": game.id,
                "kind": game.kind,
                "status": game.status,
                "players": sorted(players.get(game.id, [])),
                "next_deadline": iso(due) if due else None,
            }
        )
    return rows


def settings_help(kind: str) -> list[dict[str, str]]:
    """Each setting of ``kind``: ``name``, ``default``, the ``rule`` and what it ``means`` (its description)."""
    try:
        rules = rules_for(kind)
    except KeyError as exc:
        raise NotFound(str(exc.args[0])) from None
    defaults = rules.Settings().model_dump(mode="json")
    rows = []
    for name, field in rules.Settings.model_fields.items():
        rule, _, meaning = (field.description or "").partition(": ")
        rows.append(
            {"name": name, "default": setting_text(defaults[name]), "rule": rule, "meaning": meaning}
        )
    return rows


def setting_text(value: Any) -> str:
    """A setting's value as ``--set`` writes it (``off`` for none)."""
    if value is None:
        return "off"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):  # names, written alice,bob
        return ",".join(str(v) for v in value) or "(none)"
    return str(value)


def message_view(inbound: Inbound) -> dict[str, Any]:
    """One stored message as ``dealer inbox list`` shows it."""
    return {
        "id": inbound.id,
        "message_id": inbound.external_id,
        "source": inbound.source,
        "sender": inbound.sender,
        "channel": inbound.channel,
        "sent_at": iso(inbound.sent_at),
        "received_at": iso(inbound.received_at),
        "status": inbound.status,
        "body": inbound.body,
        "error": inbound.error,
    }


def list_messages(session: Session, *, failed: bool = False, limit: int = 20,
                  quarantined: bool = False) -> list[dict[str, Any]]:
    """``dealer inbox list``: the newest stored messages (only the failed or quarantined ones, with why)."""
    if quarantined:
        return [message_view(m) for m in Q.quarantined_messages(session, limit)]
    return [message_view(m) for m in Q.newest_messages(session, failed=failed, limit=limit)]


def post_view(post: Post) -> dict[str, Any]:
    """One queued, sent, parked or dropped post as ``dealer outbox list`` shows it."""
    return {
        "id": post.id,
        "key": post.key,
        "game": post.game_id,
        "channel": post.channel,
        "recipient": post.recipient,
        "kind": post.kind,
        "subject": post.subject,
        "created_at": iso(post.created_at),
        "status": post.status,
        "attempts": post.attempts,
        "next_attempt_at": iso(post.next_attempt_at) if post.next_attempt_at else None,
        "delivered_at": iso(post.delivered_at) if post.delivered_at else None,
        "error": post.last_error,
    }


def list_posts(session: Session, *, failed: bool = False, limit: int = 20) -> list[dict[str, Any]]:
    """``dealer outbox list``: the newest posts (only the parked ones with ``failed``)."""
    return [post_view(p) for p in Q.outbox_posts(session, failed=failed, limit=limit)]
