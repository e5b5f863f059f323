"""Players, grants and games: what the CLI's admin commands do to the store."""

from __future__ import annotations

import difflib
import re
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from dealer import ledger as L
from dealer.cards import card_of_item, display, parse_card, UnknownCard
from dealer.clock import iso
from dealer.games import rules_for
from dealer.games.base import Rejected
from dealer.history import ItemGranted
from dealer.history import shown as shown_fields
from dealer.shell.steps import apply_transfers, game_scope, load_state, open_game, run_step
from dealer.store.models import Deadline, Event, Game, GamePlayer, Holding, Player, Seed
from dealer.text import BadName, look_alike_keys, player_key, player_name

GAME_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")
PACKS = {"handy": "pack:handy", "deck": "pack:deck", "legendary": "pack:legendary"}


class AdminError(ValueError):
    """An admin command that cannot be carried out; the message says why."""


def add_player(session: Session, name: str, now: datetime, chips: int = 0, vertebrae: int = 0) -> Player:
    """Register a player, optionally with starting chips and vertebrae from the mint.

    Any printable name of at most 64 characters (dealer.text.player_name says what is
    refused); a name that shares its key (case, width, spaces) or a look-alike key with an
    existing player's is refused, so nobody can pass for another player.
    """
    try:
        shown = player_name(name)
    except BadName as exc:
        raise AdminError(f"{name!r} is not a valid player name: {exc}") from None
    key = player_key(shown)
    existing = session.get(Player, key)
    if existing is not None:
        raise AdminError(
            f"a player called {existing.name!r} already exists (names ignore case, width and spacing)"
        )
    alike = look_alike_keys(shown)
    for other in session.scalars(select(Player.name)):
        if alike & look_alike_keys(other):
            raise AdminError(
                f"{shown!r} looks like the existing player {other!r} (letters of other scripts "
                "drawn alike, accents, I/l/1 and O/0 are not told apart); choose a name that "
                "cannot be mistaken for it"
            )
    if chips < 0 or vertebrae < 0:
        raise AdminError("starting chips and vertebrae cannot be negative")
    player = Player(key=key, name=shown, created_at=now)
    session.add(player)
    session.flush()
    ledger = L.Ledger()
    ledger.mint(L.player(shown), L.CHIPS, chips, "starting chips")
    ledger.mint(L.player(shown), L.VERTEBRAE, vertebrae, "starting vertebrae")
    apply_transfers(session, ledger.staged, now, None)
    return player


def get_player(session: Session, name: str) -> Player:
    """The player called ``name`` (matched as :func:`~dealer.text.player_key` says), or
    :class:`AdminError`."""
    player = session.get(Player, player_key(name))
    if player is None:
        raise AdminError(f'there is no player {name!r}; add one with `dealer player add "{name}"`')
    return player


def parse_item(text: str) -> str:
    """The ledger item an admin names: chips, vertebrae, a card or a pack."""
    cleaned = " ".join(text.strip().lower().split())
    if cleaned in ("chip", "chips"):
        return L.CHIPS
    if cleaned in ("vertebra", "vertebrae"):
        return L.VERTEBRAE
    pack = cleaned.removesuffix(" pack").removesuffix(" packs")
    if pack in PACKS:
        return PACKS[pack]
    try:
        card, holo = parse_card(text)
    except UnknownCard:
        raise AdminError(
            f"{text!r} is no item: use chips, vertebrae, a card such as 'king of spades' or "
            "'holo 7H', or a pack: 'handy pack', 'deck pack', 'legendary pack'"
        ) from None
    return card.item(holo)


def grant(
    session: Session, name: str, item_text: str, amount: int, now: datetime,
    game_id: str | None = None,
) -> tuple[str, int]:
    """Give ``amount`` of an item to a player from the mint; return the item and new balance.

    Without ``game_id`` it goes to the player's wallet; with it, into the player's inventory
    in that Hall cycle (GH-1), as a step of the game: the cycle records it, tells the player
    and checks victory (GH-8) at once.
    """
    player = get_player(session, name)
    if amount <= 0:
        raise AdminError("the amount to grant must be a positive whole number")
    item = parse_item(item_text)
    if game_id is None:
        ledger = L.Ledger()
        ledger.mint(L.player(player.name), item, amount, "granted by the dealer")
        apply_transfers(session, ledger.staged, now, None)
        return item, balance(session, L.player(player.name), item)
    game, scope = _own_inventories(session, game_id, "grant", lock=True)
    try:
        run_step(
            session, game, now, ItemGranted(player=player.name, item=item, amount=amount),
            # The grant appends the game's next event: its number makes the posts' keys unique.
            origin=f"grant:{game.id}:{game.next_event_seq}", actor=player.name,
        )
    except Rejected as exc:
        raise AdminError(f"{exc.what}{f' ({exc.rule})' if exc.rule else ''}") from None
    return item, balance(session, scope.player(player.name), item)


def _own_inventories(
    session: Session, game_id: str, command: str, lock: bool = False
) -> tuple[Game, L.Scope]:
    """The game ``game_id`` (its row locked with ``lock``) and its ledger scope, for
    ``--game``; only a game whose inventories are its own (a Hall cycle, GH-1) has one."""
    game = session.get(Game, game_id, with_for_update=lock)
    if game is None:
        raise AdminError(f"there is no game {game_id!r}; `dealer game list` shows them")
    rules = rules_for(game.kind)
    scope = game_scope(session, game.id)  # a child game's are its parent's
    if scope is None:
        raise AdminError(
            f"game {game.id} is {rules.title} ({game.kind}), which keeps no inventories of its "
            f"own; --game names a Hall cycle (GH-1). Without --game, `{command}` uses the "
            "player's wallet"
        )
    return game, L.Scope(scope)


def balance(session: Session, account: str, item: str) -> int:
    """What ``account`` holds of ``item``."""
    amount = session.scalar(
        select(Holding.amount).where(Holding.account == account, Holding.item == item)
    )
    return amount or 0


def player_view(session: Session, name: str, game_id: str | None = None) -> dict[str, Any]:
    """``dealer player show``: the player's wallet, cards, packs and games.

    With ``game_id``, the player's inventory in that Hall cycle instead (GH-1), with the same
    keys plus ``game`` and ``member`` (whether the player has joined the cycle).
    """
    player = get_player(session, name)
    account = L.player(player.name)
    extra: dict[str, Any] = {}
    if game_id is not None:
        game, scope = _own_inventories(session, game_id, "player show")
        account = scope.player(player.name)
        member = session.get(GamePlayer, (game.id, player.name)) is not None
        extra = {"game": game.id, "member": member}
    holdings = {
        row.item: row.amount
        for row in session.scalars(select(Holding).where(Holding.account == account))
        if row.amount > 0
    }
    cards: list[str] = []
    for item, amount in sorted(holdings.items()):
        if card_of_item(item) is not None:
            cards += [display(item)] * amount
    packs = {item.split(":", 1)[1]: amount for item, amount in holdings.items() if item.startswith("pack:")}
    games = list(
        session.scalars(select(GamePlayer.game_id).where(GamePlayer.player == player.name).order_by(GamePlayer.game_id))
    )
    return {
        "name": player.name,
        "chips": holdings.get(L.CHIPS, 0),
        "vertebrae": holdings.get(L.VERTEBRAE, 0),
        "cards": cards,
        "packs": packs,
        "games": games,
        **extra,
    }


def parse_settings(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs from ``--set``; a key given twice is refused."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise AdminError(f"--set {pair!r}: write it as KEY=VALUE")
        if key in result:
            raise AdminError(f"--set {key} is given twice")
        result[key] = value.strip()
    return result


def settings_help(kind: str) -> list[dict[str, str]]:
    """Each setting of ``kind``: its ``name``, ``default`` (as ``--set`` writes it), the
    ``rule`` it sets and what it ``means`` (from the field descriptions, "SR-1: ...")."""
    rules = _rules(kind)
    defaults = rules.Settings().model_dump(mode="json")
    rows = []
    for name, field in rules.Settings.model_fields.items():
        rule, _, meaning = (field.description or "").partition(": ")
        rows.append(
            {"name": name, "default": _setting_text(defaults[name]), "rule": rule, "meaning": meaning}
        )
    return rows


def _setting_text(value: Any) -> str:
    if value is None:
        return "off"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _rules(kind: str):  # type: ignore[no-untyped-def]
    try:
        return rules_for(kind)
    except KeyError as exc:
        raise AdminError(str(exc.args[0])) from None


def _settings_problems(kind: str, names: list[str], exc: ValidationError) -> str:
    """One line per wrong ``--set``: an unknown key names the valid ones."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        if error["type"] == "extra_forbidden":
            close = difflib.get_close_matches(where, names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(
                f"{where}: no such setting{hint}; the settings of {kind} are {', '.join(names)}"
                f" (`dealer game new {kind} --help-settings` shows each)"
            )
        elif error["type"] == "value_error":
            problems.append(f"{where}: {error['ctx']['error']}")
        else:
            problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


def create_game(
    session: Session,
    kind: str,
    game_id: str,
    now: datetime,
    *,
    players: list[str] | None = None,
    start: datetime | None = None,
    settings: dict[str, str] | None = None,
    channel: str | None = None,
    server_seed: str | None = None,
) -> Game:
    """Create a game and run its ruleset's start (opening posts, first deadlines)."""
    rules = _rules(kind)
    if not GAME_ID.match(game_id):
        raise AdminError(
            f"{game_id!r} is not a valid game id: 1 to 64 letters, digits, '_' or '-'"
        )
    if session.get(Game, game_id) is not None:
        raise AdminError(f"a game {game_id!r} already exists")
    names = [get_player(session, p).name for p in (players or [])]
    if len(set(player_key(n) for n in names)) != len(names):
        raise AdminError("a player is listed twice")
    try:
        parsed = rules.Settings.model_validate(settings or {})
    except ValidationError as exc:
        problems = _settings_problems(kind, list(rules.Settings.model_fields), exc)
        raise AdminError(f"bad --set for {kind}: {problems}") from None
    try:
        open_game(
            session, rules, game_id, now, players=names, settings=parsed, start=start or now,
            channel=channel, server_seed=server_seed,
        )
    except Rejected as exc:
        raise AdminError(f"{exc.what}{f' ({exc.rule})' if exc.rule else ''}") from None
    game = session.get(Game, game_id)
    assert game is not None
    return game


def game_view(session: Session, game_id: str) -> dict[str, Any]:
    """``dealer game show``: status, players, scores, winner, deadlines, history and the
    fairness record (``seeds``; ``sealed``: each resolved round's full commitments, salts,
    receipts and sealed texts, for a game that seals submissions)."""
    game = session.get(Game, game_id)
    if game is None:
        raise AdminError(f"there is no game {game_id!r}")
    rules, state = load_state(game)
    summary = rules.summary(state)
    deadlines = [
        {"name": d.name, "due_at": iso(d.due_at), "status": d.status, "paused": d.paused,
         "error": d.error}
        for d in session.scalars(
            select(Deadline).where(Deadline.game_id == game.id).order_by(Deadline.due_at, Deadline.id)
        )
        if d.status == "pending"
    ]
    events = list(session.scalars(select(Event).where(Event.game_id == game.id).order_by(Event.seq)))
    history = [
        {"seq": e.seq, "at": iso(e.at), "type": e.type, **shown_fields(e.type, e.data)}
        for e in events
        if e.type.startswith(("deadline.", "admin."))
    ]
    seeds = [
        {
            "epoch": s.epoch,
            "commitment": s.commitment,
            "server_seed": s.server_seed if s.revealed_at else None,
            "client_seeds": s.client_seeds,
        }
        for s in session.scalars(select(Seed).where(Seed.game_id == game.id).order_by(Seed.epoch))
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
        "settings": game.settings,
        "detail": summary.detail,
        "seeds": seeds,
        # The full values behind the hashes the posts shorten (the game's fairness record).
        "sealed": rules.fairness_record([(e.type, e.data) for e in events]),
        "history": history,
        "created_at": iso(game.created_at),
    }


def list_games(session: Session) -> list[dict[str, Any]]:
    """Every game, newest first, with its status and players."""
    rows = []
    for game in session.scalars(select(Game).order_by(Game.created_at.desc(), Game.id)):
        players = list(session.scalars(select(GamePlayer.player).where(GamePlayer.game_id == game.id)))
        next_deadline = session.scalar(
            select(Deadline.due_at)
            .where(Deadline.game_id == game.id, Deadline.status == "pending")
            .order_by(Deadline.due_at)
            .limit(1)
        )
        rows.append(
            {
                "id": game.id,
                "kind": game.kind,
                "status": game.status,
                "players": sorted(players),
                "next_deadline": iso(next_deadline) if next_deadline else None,
            }
        )
    return rows
