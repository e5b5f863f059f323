"""Players, grants and games: what the CLI's admin commands write (they read through :mod:`dealer.views`)."""

from __future__ import annotations

import difflib
import re
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from dealer import ledger as L
from dealer.clock import format_utc
from dealer.games import rules_for
from dealer.games.base import Rejected
from dealer.history import ItemGranted
from dealer.shell.effects import apply_transfers
from dealer.shell.steps import open_game, run_step
from dealer.store import queries as Q
from dealer.store.models import Game, GamePlayer, Player
from dealer.text import BadName, account_problem, look_alike_keys, player_key, player_name
from dealer.views import NotFound, find_player as get_player, own_inventories

GAME_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")

START_GRACE = timedelta(minutes=5)
"""How late a ``--start`` may be without ``--start-in-past``: a host typing "now" is a minute
late; further back, the next pass would fire every deadline up to now at once."""


class AdminError(ValueError):
    """An admin command that cannot be carried out; the message says why."""


__all__ = ["AdminError", "NotFound", "add_player", "link_account", "unlink_account", "parse_account", "create_game", "grant", "parse_item", "parse_settings"]


PLATFORMS = ("discord", "email", "discourse")
"""Platforms whose accounts a player can link (``dealer player link``)."""


def parse_account(text: str) -> tuple[str, str]:
    """``discord:80351110224678912`` -> (``discord``, ``80351110224678912``), else :class:`AdminError`."""
    platform, sep, account_id = text.strip().partition(":")
    platform = platform.lower()
    problem = account_problem(account_id)
    if problem:
        raise AdminError(f"{text!r} is not an account dealer can match: {problem}; "
                         "type it again rather than pasting it")
    if not sep or platform not in PLATFORMS:
        raise AdminError(f"{text!r} is not an account; write PLATFORM:ID, e.g. discord:80351110224678912, "
                         "email:alice@example.org or discourse:alice_w "
                         f"(platforms: {', '.join(PLATFORMS)})")
    if platform == "discord" and not (account_id.isdigit() and 15 <= len(account_id) <= 20):
        raise AdminError(f"{account_id!r} is not a Discord user id (17 to 20 digits: in Discord, "
                         "Developer Mode on, right-click the user, Copy User ID)")
    if platform == "email":
        account_id = account_id.strip().lower()
        if not re.match(r"^[^@\s:,]+@[^@\s:,]+\.[^@\s:,]+$", account_id):
            raise AdminError(f"{account_id!r} is not an e-mail address (write email:alice@example.org)")
    if platform == "discourse":
        # Discourse usernames are unique whatever their case, and a PM is addressed to one.
        account_id = account_id.strip().lower()
        if not re.match(r"^[\w.\-]{1,60}$", account_id):
            raise AdminError(f"{account_id!r} is not a Discourse username (letters, digits, _ . -; "
                             "write discourse:alice_w)")
    return platform, account_id


def link_account(session: Session, name: str, account: str, now: datetime) -> tuple[str, str]:
    """Link a platform account to player ``name`` (one player per account, one account per
    platform per player); return (player name, account)."""
    platform, account_id = parse_account(account)
    player = get_player(session, name)
    owner = Q.player_of_account(session, platform, account_id)
    if owner is not None and owner != player.key:
        other = session.get(Player, owner)
        raise AdminError(f"{platform}:{account_id} is already linked to {other.name if other else owner}; "
                         f"`dealer player unlink {platform}:{account_id}` first")
    if owner == player.key:
        return player.name, f"{platform}:{account_id}"
    for old in Q.accounts_of(session, [player.key]).get(player.key, {}).items():
        if old[0] == platform:
            Q.unlink_account(session, platform, old[1])
    Q.link_account(session, player.key, platform, account_id, now)
    return player.name, f"{platform}:{account_id}"


def unlink_account(session: Session, account: str) -> str:
    """Unlink an account; the name of the player it was linked to."""
    platform, account_id = parse_account(account)
    owner = Q.player_of_account(session, platform, account_id)
    if owner is None:
        raise AdminError(f"{platform}:{account_id} is linked to no player")
    Q.unlink_account(session, platform, account_id)
    player = session.get(Player, owner)
    return player.name if player else owner


def register_account(session: Session, display_name: str, platform: str, account_id: str, now: datetime) -> str:
    """Make a player of an unknown platform sender (``DEALER_REGISTER_UNKNOWN``), named after
    their cleaned display name (a taken name gets the account's last digits); return it."""
    base = re.sub(r"[@,]", "", display_name or "").strip() or f"{platform}-{account_id[-6:]}"
    for candidate in (base, f"{base[:50]} {account_id[-6:]}", f"{platform}-{account_id}"):
        try:  # add_player refuses a name before it adds anything
            name = add_player(session, candidate, now).name
        except AdminError:
            continue
        session.flush()
        Q.link_account(session, player_key(name), platform, account_id, now)
        return name
    raise AdminError(f"no usable name for {platform}:{account_id} ({display_name!r})")


def add_player(session: Session, name: str, now: datetime, chips: int = 0, vertebrae: int = 0) -> Player:
    """Register a player, optionally with chips and vertebrae from the mint; a name whose key
    or look-alike key is another player's is refused, so nobody can pass for another."""
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
    other = Q.look_alike_player(session, alike)
    if other is not None:
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
    Q.add_look_alikes(session, key, alike)
    ledger = L.Ledger()
    ledger.mint(L.player(shown), L.CHIPS, chips, "starting chips")
    ledger.mint(L.player(shown), L.VERTEBRAE, vertebrae, "starting vertebrae")
    apply_transfers(session, ledger.staged, now, None)
    return player


def parse_item(text: str) -> str:
    """The ledger item an admin names: chips, vertebrae, a card or a pack."""
    from dealer.games.hall.items import CURRENCY_WORDS, single_item

    cleaned = " ".join(text.strip().lower().split())
    item = CURRENCY_WORDS.get(cleaned) or single_item(cleaned) or single_item(f"{cleaned} pack")
    if item is None:
        raise AdminError(
            f"{text!r} is no item: use chips, vertebrae, a card such as 'king of spades' or "
            "'holo 7H', or a pack: 'handy pack', 'deck pack', 'legendary pack'"
        )
    return item


def grant(session: Session, name: str, item_text: str, amount: int, now: datetime,
          game_id: str | None = None) -> tuple[str, int]:
    """Give ``amount`` of an item from the mint to a player's wallet, or with ``game_id`` to
    their inventory in that Hall cycle as a step (GH-1, GH-8); return the item and balance."""
    player = get_player(session, name)
    if amount <= 0:
        raise AdminError("the amount to grant must be a positive whole number")
    item = parse_item(item_text)
    if game_id is None:
        ledger = L.Ledger()
        ledger.mint(L.player(player.name), item, amount, "granted by the dealer")
        apply_transfers(session, ledger.staged, now, None)
        return item, Q.balance(session, L.player(player.name), item)
    game, scope = own_inventories(session, game_id, "grant", lock=True)
    try:
        run_step(
            session, game, now, ItemGranted(player=player.name, item=item, amount=amount),
            # The grant appends the game's next event: its number makes the posts' keys unique.
            origin=f"grant:{game.id}:{game.next_event_seq}", actor=player.name,
        )
    except Rejected as exc:
        raise AdminError(f"{exc.what}{f' ({exc.rule})' if exc.rule else ''}") from None
    return item, Q.balance(session, scope.player(player.name), item)


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


def _parent(session: Session, rules: Any, settings: Any, names: list[str]) -> str:
    """The game a match created directly lives in: its ``hall`` setting's, else the only running
    one of that kind; every player must have joined it (GH-10)."""
    kind = rules.parent_kind
    named = getattr(settings, kind, None)
    if named:
        parent = session.get(Game, named)
        if parent is None or parent.kind != kind:
            raise AdminError(f"there is no {kind} game {named!r}; `dealer game list` shows them")
        if parent.status == "finished":
            raise AdminError(f"{kind} game {named} is over; a match needs a running one")
    else:
        running = [g for g in session.scalars(select(Game).where(
            Game.kind == kind, Game.status != "finished").order_by(Game.id))]
        if len(running) != 1:
            found = ", ".join(g.id for g in running) or "none"
            raise AdminError(f"a {rules.kind} match is played in a running {kind} game; name it "
                             f"with --set {kind}=ID (running: {found})")
        parent = running[0]
    members = {p.player for p in session.scalars(select(GamePlayer).where(
        GamePlayer.game_id == parent.id))}
    strangers = [n for n in names if n not in members]
    if strangers:
        raise AdminError(f"{', '.join(strangers)} has not joined {kind} game {parent.id}: a "
                         f"{rules.kind} match uses the cards of its members (GH-10)")
    return parent.id


def create_game(session: Session, kind: str, game_id: str, now: datetime, *,
                players: list[str] | None = None, start: datetime | None = None,
                settings: dict[str, str] | None = None, channel: str | None = None,
                server_seed: str | None = None, start_in_past: bool = False) -> Game:
    """Create a game and run its start; a ``start`` more than :data:`START_GRACE` ago needs ``start_in_past``."""
    rules = _rules(kind)
    if start is not None and start < now - START_GRACE and not start_in_past:
        raise AdminError(
            f"--start {format_utc(start)} is in the past (now {format_utc(now)}): every deadline "
            "up to now would fire at once on the next pass, playing those rounds and moving "
            "their chips; give a later --start, or add --start-in-past if that is what you want"
        )
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
    parent_id = _parent(session, rules, parsed, names) if rules.parent_kind else None
    try:
        open_game(
            session, rules, game_id, now, players=names, settings=parsed, start=start or now,
            channel=channel, server_seed=server_seed, parent_id=parent_id,
        )
    except Rejected as exc:
        raise AdminError(f"{exc.what}{f' ({exc.rule})' if exc.rule else ''}") from None
    game = session.get(Game, game_id)
    assert game is not None
    return game
