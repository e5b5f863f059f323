"""What a step reads and writes: its game's row locked with all it reads beside it
(:data:`LOCK_GAME`), then its state, seeds, draws, events, deadlines and ledger changes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable, NamedTuple

from sqlalchemy import (
    Select, Text, Update, and_, bindparam, cast, delete, exists, func, lambda_stmt, or_, select,
    update,
)

from dealer.clock import as_utc
from dealer.store.models import (
    Deadline, Draw, Event, Game, GamePlayer, Holding, LedgerEntry, Override, Seed,
)
from dealer.store.queries.sql import equals_any, json_rows, row_type, sql_text

_games = Game.__table__
_game_players = GamePlayer.__table__
_holdings = Holding.__table__
_seeds = Seed.__table__
_deadlines = Deadline.__table__
_events = Event.__table__
_overrides = Override.__table__


# -- games ---------------------------------------------------------------------------------

_epochs = _seeds.alias("epochs")


_PENDING_OF_GAME = (
    select(json_rows(_deadlines.c.id, _deadlines.c.name, _deadlines.c.due_at, _deadlines.c.paused,
                     _deadlines.c.error))
    .where(_deadlines.c.game_id == _games.c.id, _deadlines.c.status == "pending")
    .scalar_subquery()
)


CURRENCIES = ("chips", "vertebrae")
"""The currencies a step reads for every account at once (other items on first use)."""


_CURRENCY_NAMES = [sql_text(item) for item in CURRENCIES]
_NEAR_SCOPES = (func.coalesce(_games.c.parent_id.concat(sql_text("/")), sql_text("")),
                _games.c.id.concat(sql_text("/")))
"""The account prefixes a step most likely reads: its parent's (else global) scope and its own."""


_member_holdings = _holdings.alias("member_holdings")

_MEMBER_BALANCES = (
    select(json_rows(_game_players.c.player, _member_holdings.c.account,
                     _member_holdings.c.item, _member_holdings.c.amount))
    .select_from(_game_players.outerjoin(_member_holdings, and_(
        equals_any(_member_holdings.c.account,
                   *[prefix.concat(sql_text("player:")).concat(_game_players.c.player)
                     for prefix in _NEAR_SCOPES]),
        _member_holdings.c.item.in_(_CURRENCY_NAMES),
    )))
    .where(_game_players.c.game_id == _games.c.id)
    .scalar_subquery()
)

_OWN_BALANCES = (
    select(json_rows(_holdings.c.account, _holdings.c.item, _holdings.c.amount))
    .where(
        _holdings.c.account.in_([prefix.concat(tail) for prefix in _NEAR_SCOPES for tail in (
            sql_text("house"), sql_text("void"), sql_text("pool:").concat(_games.c.id))]),
        _holdings.c.item.in_(_CURRENCY_NAMES),
    )
    .scalar_subquery()
)

_seen = _games.alias("seen")

_LOCKED_COLUMNS = [column for column in _games.c if column.key not in ("state", "settings")]
"""The game's columns a step reads: all but the settings (in the state too); the state as text."""

LOCKED_GAMES = (
    select(
        *_LOCKED_COLUMNS,
        cast(_games.c.state, Text).label("state"),
        # A game is paused by its own ``pause`` override or by its parent's (a paused Hall
        # cycle holds its matches).
        exists().where(
            or_(_overrides.c.game_id == _games.c.id, _overrides.c.game_id == _games.c.parent_id),
            _overrides.c.value == "pause", _overrides.c.deadline_name.is_(None),
        ).label("paused"),
        _seeds.c.epoch, _seeds.c.server_seed, _seeds.c.client_seeds, _seeds.c.counter,
        _seeds.c.revealed_at, _PENDING_OF_GAME.label("pending"),
        _MEMBER_BALANCES.label("member_balances"), _OWN_BALANCES.label("own_balances"),
        select(_seen.c.next_event_seq).where(_seen.c.id == _games.c.id).scalar_subquery()
        .label("seen_seq"),
    )
    .select_from(_games.outerjoin(_seeds, and_(
        _seeds.c.game_id == _games.c.id,
        _seeds.c.epoch == select(func.max(_epochs.c.epoch)).where(_epochs.c.game_id == _games.c.id)
        .scalar_subquery(),
    )))
    .with_for_update(of=_games)
)
""":data:`LOCK_GAME` before it chooses its games."""

_LOCK_GAME = LOCKED_GAMES.where(_games.c.id == bindparam("id"))
LOCK_GAME = lambda_stmt(lambda: _LOCK_GAME)
"""The game's row locked for the step, with its state as JSON text (pydantic parses it at
half the cost), its pause, its newest epoch, its pending deadlines and the currencies of
the accounts its step most likely reads: what every step reads, in one statement.

On Postgres a statement that waited for the lock read all but the row as it stood before;
``seen_seq`` differing from ``next_event_seq`` says so, and it is run again. A lambda
statement: SQLAlchemy keys its cache on the lambda's code, not on hashing the whole
structure (about 50,000 instructions a step)."""

LockedGame = row_type("LockedGame", _LOCK_GAME)
"""A row of :data:`LOCK_GAME`, whose fields a step reads dozens of times."""


@lru_cache(maxsize=64)
def lock_games(count: int) -> Select[Any]:
    """:data:`LOCK_GAME` for ``count`` games (``g0``, ``g1``, ...), locked in id order."""
    return (LOCKED_GAMES.where(_games.c.id.in_([bindparam(f"g{i}") for i in range(count)]))
            .order_by(_games.c.id))


class PendingDeadline(NamedTuple):
    """A pending deadline row, as a step sees it."""

    id: int
    name: str
    due_at: datetime
    paused: bool = False
    error: str | None = None  # why its step last crashed


def pending_of_locked(game: LockedGame) -> list[PendingDeadline]:
    """The pending deadlines read with a locked game."""
    return [PendingDeadline(deadline_id, name, as_utc(datetime.fromisoformat(due_at)), bool(paused), error)
            for deadline_id, name, due_at, paused, error in game.pending or ()]


@dataclass
class LockedBalances:
    """The currencies read with a game's locked row (:data:`LOCK_GAME`)."""

    members: frozenset[str]
    """The players in ``game_players``: each one's account was read in both scopes."""
    amounts: dict[tuple[str, str], int]
    """``(account, item)``: amount, for each currency held by an account read."""

    def covers(self, game_id: str, parent_id: str | None, scope: str | None,
               accounts: Iterable[str]) -> bool:
        """Whether every account of ``accounts`` (in ``scope``) was read with the game."""
        if scope not in (game_id, parent_id):
            return False
        mark = "" if scope is None else scope + "/"
        read = {mark + "house", mark + "void", mark + "pool:" + game_id}
        read.update(mark + "player:" + name for name in self.members)
        return read.issuperset(accounts)


def balances_of_locked(game: LockedGame) -> LockedBalances:
    """The currencies read with a game's locked row (:data:`LOCK_GAME`)."""
    amounts: dict[tuple[str, str], int] = {}
    members = set()
    for player, account, item, amount in game.member_balances or ():
        members.add(player)
        if account is not None:
            amounts[(account, item)] = amount
    for account, item, amount in game.own_balances or ():
        amounts[(account, item)] = amount
    return LockedBalances(frozenset(members), amounts)


UPDATE_GAME = (
    update(_games)
    .where(_games.c.id == bindparam("game_id"))
    .values(
        state=bindparam("new_state"),
        status=bindparam("new_status"),
        updated_at=bindparam("new_updated_at"),
        next_event_seq=bindparam("new_next_event_seq"),
    )
)
"""A step's new state, status, time and next event number (``game_id``, ``new_*``)."""

INSERT_GAME = _games.insert()
"""A new game's row."""

GAME_EXISTS = select(_games.c.id).where(_games.c.id == bindparam("game_id"))
"""A row if game ``game_id`` exists."""


INSERT_SEED = _seeds.insert()
"""A new epoch of a game's fair source (the columns of :func:`dealer.shell.effects.new_seed_row`)."""

INSERT_GAME_PLAYERS = _game_players.insert()
"""Rows ``{"game_id", "player"}`` of ``game_players``."""


def remove_game_players(game_id: str, names: set[str]):  # type: ignore[no-untyped-def]
    """DELETE the ``game_players`` rows of ``names`` in ``game_id``."""
    return delete(_game_players).where(
        _game_players.c.game_id == game_id, _game_players.c.player.in_(names)
    )


def update_epoch(game_id: str, epoch: int) -> Update:
    """UPDATE one epoch of a game's fair source (add ``.values(...)``)."""
    return update(_seeds).where(_seeds.c.game_id == game_id, _seeds.c.epoch == epoch)


INSERT_DRAWS = Draw.__table__.insert().inline()
"""A step's fair draws."""

INSERT_EVENTS = _events.insert().inline()
"""Events of a game's history (``game_id``, ``seq``, ``at``, ``type``, ``data``)."""


# -- the ledger ----------------------------------------------------------------------------

@lru_cache(maxsize=32)
def currency_holdings(accounts: int) -> Select[Any]:
    """The currencies held by ``accounts`` accounts (``a0``, ``a1``, ...): one prebuilt statement
    per count, as an expanding parameter is rendered again on every call."""
    return select(_holdings.c.account, _holdings.c.item, _holdings.c.amount).where(
        _holdings.c.account.in_([bindparam(f"a{i}") for i in range(accounts)]),
        _holdings.c.item.in_([bindparam(f"currency{i}", item) for i, item in enumerate(CURRENCIES)]),
    )

BALANCE = select(_holdings.c.amount).where(
    _holdings.c.account == bindparam("account"), _holdings.c.item == bindparam("item")
)
"""What ``account`` holds of ``item`` (no row: nothing)."""

ACCOUNT_HOLDINGS = select(_holdings.c.item, _holdings.c.amount).where(
    _holdings.c.account == bindparam("account")
)
"""Every item ``account`` holds."""

CHANGE_BALANCE = (
    update(_holdings)
    .where(_holdings.c.account == bindparam("a"), _holdings.c.item == bindparam("i"))
    .values(amount=_holdings.c.amount + bindparam("d"))
)
"""Add ``d`` to account ``a``'s item ``i`` in SQL (no lost update between two steps)."""

INSERT_HOLDING = _holdings.insert().inline()
INSERT_LEDGER_ENTRIES = LedgerEntry.__table__.insert().inline()


# -- deadlines -----------------------------------------------------------------------------

INSERT_DEADLINE = _deadlines.insert().inline()

CANCEL_DEADLINE = (
    update(_deadlines).where(_deadlines.c.id == bindparam("deadline_id")).values(status="cancelled")
)
MOVE_DEADLINE = (
    update(_deadlines)
    .where(_deadlines.c.id == bindparam("deadline_id"))
    .values(due_at=bindparam("when"), set_due_at=bindparam("when"))
)
