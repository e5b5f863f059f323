"""Every query of the store, in one place: prebuilt Core statements and small
query functions.

The shell (:mod:`dealer.shell`) and the read views (:mod:`dealer.views`) ask the store only
through this module, so what dealer reads and writes, and which index serves it, can be
seen at a glance. Statements on the hot path (a step, a message, a delivery) are built
once at import and executed with bound parameters: a thousand steps reuse them and
SQLAlchemy's compiled cache. Routing (which game a message, an edit, a deletion or a reaction goes to) reads
games as Core rows with a Game's attributes (``id``, ``kind``, ``status``, ``channel``,
``parent_id``) and leaves the state out: the step that follows reads it, locked.

Names in capitals are statements (execute them with the parameters their ``bindparam``
names); functions run a query and return plain rows or values.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable, Iterator, Sequence

from sqlalchemy import (
    Row, Select, String, Text, Update, and_, any_, bindparam, case, cast, delete, exists, func,
    lambda_stmt, literal_column, null, or_, select, union, union_all, update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import JSON, Boolean, Integer

from dealer.clock import as_utc, parse_time
from dealer.store.direct import Direct
from dealer.store.models import (
    Account,
    Cursor,
    PostPart,
    Deadline,
    GameChannel,
    Draw,
    Event,
    Game,
    GamePlayer,
    Holding,
    Inbound,
    LedgerEntry,
    Override,
    Player,
    PlayerLookAlike,
    Post,
    Seed,
    WebhookDelivery,
)
from dealer.routes import ACCOUNT
from dealer.text import player_key

_games = Game.__table__
_game_players = GamePlayer.__table__
_holdings = Holding.__table__
_seeds = Seed.__table__
_deadlines = Deadline.__table__
_inbound = Inbound.__table__
_posts = Post.__table__
_events = Event.__table__
_overrides = Override.__table__
_players = Player.__table__
_accounts = Account.__table__


def _row_type(name: str, statement: Any) -> Any:
    """A named tuple type with a field per column ``statement`` selects, for its hot rows.

    A field of it reads about ten times as fast as the attribute of SQLAlchemy's own row,
    which looks the name up on the row's class first (SQLAlchemy 2.1), raising and
    dropping an ``AttributeError`` on every read. A row read many times (a step's locked
    game, the posts a delivery sends) is made one with ``Type._make(row)``, the rest are
    read where they are as they come."""
    return namedtuple(name, statement.selected_columns.keys())


# -- games ---------------------------------------------------------------------------------

_epochs = _seeds.alias("epochs")


class _json_rows(FunctionElement[Any]):
    """A JSON array holding one JSON array of its arguments per row aggregated (``NULL``
    or ``[]`` for none): ``json_agg(json_build_array(...))`` on Postgres,
    ``json_group_array(json_array(...))`` on SQLite."""

    type = JSON()
    name = "json_rows"
    inherit_cache = True


@compiles(_json_rows, "postgresql")
def _json_rows_postgres(element: _json_rows, compiler: Any, **kw: Any) -> str:
    return f"json_agg(json_build_array({compiler.process(element.clauses, **kw)}))"


@compiles(_json_rows)
def _json_rows_sqlite(element: _json_rows, compiler: Any, **kw: Any) -> str:
    return f"json_group_array(json_array({compiler.process(element.clauses, **kw)}))"


_PENDING_OF_GAME = (
    select(_json_rows(_deadlines.c.id, _deadlines.c.name, _deadlines.c.due_at, _deadlines.c.paused,
                      _deadlines.c.error))
    .where(_deadlines.c.game_id == _games.c.id, _deadlines.c.status == "pending")
    .scalar_subquery()
)

CURRENCIES = ("chips", "vertebrae")
"""The currencies a step reads for every account at once (other items on first use)."""


def _sql_text(value: str) -> Any:
    """A constant string written into a statement's text (no parameter to bind or expand)."""
    return literal_column("'" + value.replace("'", "''") + "'", String)


_CURRENCY_NAMES = [_sql_text(item) for item in CURRENCIES]
_NEAR_SCOPES = (func.coalesce(_games.c.parent_id.concat(_sql_text("/")), _sql_text("")),
                _games.c.id.concat(_sql_text("/")))
"""The prefixes of the accounts a step of a game most likely reads (see
:data:`LOCK_GAME`): its parent's scope, or the global one for a game with no parent, and
its own scope (a Hall cycle's)."""


class equals_any(FunctionElement[bool]):
    """``column`` equal to one of ``values`` (expressions, not bound parameters): ``column =
    ANY (ARRAY[...])`` on Postgres, ``column IN (...)`` elsewhere.

    Postgres turns an ``IN`` list whose expressions read a column of the same query (a
    joined row's) into ``column = v1 OR column = v2``, which no index serves as a join's
    condition: with the holdings' statistics not yet gathered (a new store, before
    autovacuum's first analyze), every step's :data:`LOCK_GAME` then read the whole
    holdings table for its members' balances, a scan per step that grew with the players
    (3 ms a step at 2,000 players). As ``= ANY`` the condition is an index lookup whatever
    the statistics say. SQLite looks an ``IN`` list up through the index either way
    (``tests/integration/test_claim_plans.py`` checks both plans)."""

    type = Boolean()
    inherit_cache = True
    _is_implicitly_boolean = True  # a condition as it is: never compared with 1 (SQLite)


@compiles(equals_any)
def _equals_any_other(element: equals_any, compiler: Any, **kw: Any) -> str:
    column, *values = element.clauses
    return compiler.process(column.in_(values), **kw)


@compiles(equals_any, "postgresql")
def _equals_any_postgres(element: equals_any, compiler: Any, **kw: Any) -> str:
    column, *values = element.clauses
    return (compiler.process(column, **kw) + " = ANY (ARRAY["
            + ", ".join(compiler.process(value, **kw) for value in values) + "])")


_member_holdings = _holdings.alias("member_holdings")

_MEMBER_BALANCES = (
    select(_json_rows(_game_players.c.player, _member_holdings.c.account,
                      _member_holdings.c.item, _member_holdings.c.amount))
    .select_from(_game_players.outerjoin(_member_holdings, and_(
        equals_any(_member_holdings.c.account,
                   *[prefix.concat(_sql_text("player:")).concat(_game_players.c.player)
                     for prefix in _NEAR_SCOPES]),
        _member_holdings.c.item.in_(_CURRENCY_NAMES),
    )))
    .where(_game_players.c.game_id == _games.c.id)
    .scalar_subquery()
)

_OWN_BALANCES = (
    select(_json_rows(_holdings.c.account, _holdings.c.item, _holdings.c.amount))
    .where(
        _holdings.c.account.in_([prefix.concat(tail) for prefix in _NEAR_SCOPES for tail in (
            _sql_text("house"), _sql_text("void"), _sql_text("pool:").concat(_games.c.id))]),
        _holdings.c.item.in_(_CURRENCY_NAMES),
    )
    .scalar_subquery()
)

_seen = _games.alias("seen")

_LOCKED_COLUMNS = [column for column in _games.c if column.key not in ("state", "settings")]
"""What a step reads of its game's row: every column but the settings (they are in the
state too) and the state, which it reads as text (:data:`LOCK_GAME`)."""

_LOCK_GAMES = (
    select(
        *_LOCKED_COLUMNS,
        cast(_games.c.state, Text).label("state"),
        exists().where(
            _overrides.c.game_id == _games.c.id, _overrides.c.value == "pause",
            _overrides.c.deadline_name.is_(None),
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
_LOCK_GAME = _LOCK_GAMES.where(_games.c.id == bindparam("id"))
LOCK_GAME = lambda_stmt(lambda: _LOCK_GAME)
"""The game's row, locked for the step (``id``), its ``state`` as JSON text (parsed by
pydantic straight from the text: half the cost of ``json.loads`` and validating the
dict), with ``paused``: whether an active
``pause`` override holds it (the deadlines the step creates are created paused), and its
newest epoch's ``epoch``, ``server_seed``, ``client_seeds``, ``counter`` and
``revealed_at`` (its fair source; ``epoch`` is None if it has none), and ``pending``, its
pending deadlines (:func:`pending_of_locked`): what every step reads of its game, in one
statement. Beside them, the currencies of the accounts its step most likely reads
(:func:`balances_of_locked`): those of each player in ``game_players`` and of the house,
the void and the game's pool, in the parent's scope (the global one for a game with no
parent) and in the game's own scope; a step whose accounts they do not cover reads its
currencies with a statement of its own (:func:`dealer.shell.steps.ledger_snapshot`).

On Postgres a statement that waited for the row's lock returns the row as the transaction
it waited for left it, but reads everything beside it (the epoch, the pause, the
deadlines, the balances) as it stood when the statement began. ``seen_seq`` is the row's
``next_event_seq`` as it stood then: where it differs from ``next_event_seq`` (every step
and every admin event moves it), the rest was read from before that transaction and the
statement is run again (:func:`dealer.shell.steps.lock_game`), now without waiting.

It runs as a lambda statement: SQLAlchemy finds its compiled form by the lambda's code,
not by hashing the statement's whole structure on every execution, as it does for a
plain statement (a nested tuple of hundreds of elements here: about 50,000 instructions
a step). The lambda names the statement as a global, which SQLAlchemy leaves out of the
key."""

LockedGame = _row_type("LockedGame", _LOCK_GAME)
"""A row of :data:`LOCK_GAME` (:func:`dealer.shell.steps.lock_game` reads dozens of its
fields a step)."""


@lru_cache(maxsize=64)
def lock_games(count: int) -> Select[Any]:
    """:data:`LOCK_GAME` for ``count`` games at once (bound as ``g0``, ``g1``, ...), their
    rows locked in the order of their ids: a group of messages reads the games of its
    senders with one statement (:func:`dealer.shell.steps.keep_games`)."""
    return (_LOCK_GAMES.where(_games.c.id.in_([bindparam(f"g{i}") for i in range(count)]))
            .order_by(_games.c.id))


def pending_of_locked(game: LockedGame) -> list[tuple[int, str, datetime, bool, str | None]]:
    """The pending deadlines read with a game's locked row (:data:`LOCK_GAME`): ``(id,
    name, due_at, paused, error)`` each."""
    return [(deadline_id, name, as_utc(datetime.fromisoformat(due_at)), bool(paused), error)
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
        """Whether every account of ``accounts`` (in ledger ``scope``) was read: the scope
        is the parent's (global for no parent) or the game's own, and each account is a
        member's, the house, the void or the game's pool."""
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

SCOPE_OF = select(_games.c.id, _games.c.kind, _games.c.state, _games.c.parent_id).where(
    _games.c.id == bindparam("game_id")
)
"""What the ledger scope of game ``game_id`` depends on (its kind, state and parent)."""

INSERT_SEED = _seeds.insert()
"""A new epoch of a game's fair source (the columns of :func:`dealer.shell.steps.new_seed_row`)."""

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

HOLDINGS = select(_holdings.c.account, _holdings.c.item, _holdings.c.amount).where(
    _holdings.c.account.in_(bindparam("accounts", expanding=True))
)
"""Every balance of the ``accounts``."""

@lru_cache(maxsize=32)
def currency_holdings(accounts: int) -> Select[Any]:
    """The currencies held by ``accounts`` accounts, bound as ``a0``, ``a1``, ...

    One prebuilt statement per number of accounts (a step has a handful): an ``expanding``
    parameter would have SQLAlchemy render the statement's text again on every call. The
    currencies too are bound one by one (the same SQL): a plain list of values is an
    expanding parameter, expanded again on every call."""
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


def balance(session: Session, account: str, item: str) -> int:
    """What ``account`` holds of ``item``."""
    amount = session.scalar(
        select(Holding.amount).where(Holding.account == account, Holding.item == item)
    )
    return amount or 0


def holdings_of(session: Session, account: str) -> dict[str, int]:
    """Every item ``account`` holds a positive amount of."""
    rows = session.execute(
        select(_holdings.c.item, _holdings.c.amount).where(_holdings.c.account == account)
    )
    return {row.item: row.amount for row in rows if row.amount > 0}


# -- players -------------------------------------------------------------------------------


_look_alikes = PlayerLookAlike.__table__
_LOOK_ALIKE_PLAYER = (
    select(_players.c.name)
    .join(_look_alikes, _look_alikes.c.player == _players.c.key)
    .where(_look_alikes.c.key.in_(bindparam("keys", expanding=True)))
    .order_by(_players.c.key)
    .limit(1)
)


def look_alike_player(session: Session, keys: frozenset[str]) -> str | None:
    """The name of a player sharing one of the look-alike ``keys``, if any (an index probe)."""
    return session.execute(_LOOK_ALIKE_PLAYER, {"keys": sorted(keys)}).scalar()


def add_look_alikes(session: Session, player: str, keys: frozenset[str]) -> None:
    """Store player ``player``'s look-alike keys."""
    session.execute(_look_alikes.insert(), [{"key": k, "player": player} for k in sorted(keys)])


def games_of_player(session: Session, name: str) -> list[str]:
    """The ids of the games ``name`` takes part in, in id order."""
    return list(session.scalars(
        select(GamePlayer.game_id).where(GamePlayer.player == name).order_by(GamePlayer.game_id)
    ))


# -- steps of several daemons --------------------------------------------------------------

class _postgres_first(FunctionElement[bool]):
    """A condition, true, that runs ``call`` on Postgres once, before the statement it is
    in reads any row: ``(SELECT <call>) IS NOT NULL``, an uncorrelated subquery, which the
    planner runs once as an init plan, and a condition on no row, which it makes a
    one-time filter above the scan (the executor evaluates it before it reads, or locks,
    the first row). What the call does then costs no round trip of its own. Elsewhere a
    plain true (SQLite: ``1``)."""

    type = Boolean()
    inherit_cache = True
    call = ""


@compiles(_postgres_first, "postgresql")
def _postgres_first_postgres(element: _postgres_first, compiler: Any, **kw: Any) -> str:
    return f"(SELECT {element.call}) IS NOT NULL"


@compiles(_postgres_first)
def _postgres_first_other(element: _postgres_first, compiler: Any, **kw: Any) -> str:
    return "1"  # a true boolean without native booleans: SQLite's WHERE reads "1 = 1"


STEP_LOCK_KEY = 0x6465616C
"""The Postgres advisory lock that orders steps of several daemons (see :class:`_step_lock`)."""


class _step_lock(_postgres_first):
    """A condition, true, that takes the step lock on Postgres before the statement it is
    in locks any row: a statement that claims work for steps (messages, deadlines) carries
    it, so the lock costs no round trip of its own: :class:`step_lock_alone` for a
    transaction of several steps (several games), which takes the lock alone,
    :class:`step_lock_shared` for a single step, which shares it.

    A single step locks its game's row first, then the balances it changes in sorted
    order, so two single steps never wait on each other in a cycle. A group takes row
    locks step after step, in message order, across games and shared wallets: two groups
    (or a group and a single step) on two daemons would deadlock. Ordering the games
    alone would not do, as the wallets and the house account are shared between games.
    Excluding the groups from each other and from single steps removes every such cycle;
    a daemon's group waits only while another daemon's transaction runs. SQLite needs
    nothing: one writer at a time (``BEGIN IMMEDIATE``); the condition is a plain true.

    On Postgres it is ``(SELECT pg_advisory_xact_lock(KEY)) IS NOT NULL``
    (:class:`_postgres_first`): the executor evaluates it (waiting for the lock) before it
    reads the first row, so before the statement's ``FOR UPDATE`` locks any (``tests/integration/test_step_lock.py``). The statement's snapshot is taken
    before that wait: what it reads of a row it locks is the row as the transaction it
    waited for left it (``FOR UPDATE`` reads the newest version and checks its conditions
    again, ``status = 'pending'`` among them: a message that transaction applied is not
    claimed again, though Postgres keeps the lock it took on it until the commit), but
    what it reads beside without locking predates that transaction; a claim reads nothing
    else that another step changes (a deadline's game's kind never changes). Later
    statements of the transaction see it all.
    """

    inherit_cache = True


class step_lock_alone(_step_lock):
    """The step lock for a group of steps (several games): taken alone (see :class:`_step_lock`)."""

    name = "step_lock_alone"
    inherit_cache = True
    call = f"pg_advisory_xact_lock({STEP_LOCK_KEY})"


class step_lock_shared(_step_lock):
    """The step lock for a single step: shared (see :class:`_step_lock`)."""

    name = "step_lock_shared"
    inherit_cache = True
    call = f"pg_advisory_xact_lock_shared({STEP_LOCK_KEY})"


class unindexed(FunctionElement[Any]):
    """``column``, which SQLite's planner is not to look up through an index: ``+column``
    on SQLite (a unary plus changes no value, and a term it wraps constrains no index),
    the column itself elsewhere.

    For a claim of rows by id that also checks their status (``id IN (...) AND status =
    'pending'``). SQLite keeps no statistics unless told to (``ANALYZE``), and without
    them its planner took the index on ``(status, ...)`` over the ids' own lookups: every
    group of deadlines or messages read the index entries of every pending one to find its
    50, so a burst of 10,000 deadlines read about a million entries, each costing more the
    more there were (70-100 µs a deadline at 10,000 games against 4 µs by id;
    ``tests/integration/test_claim_plans.py``). Postgres keeps statistics and looks the
    ids up; it gets the plain column.
    """

    inherit_cache = True

    def __init__(self, column: Any) -> None:
        super().__init__(column)
        self.type = column.type


@compiles(unindexed)
def _unindexed_other(element: unindexed, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)


@compiles(unindexed, "sqlite")
def _unindexed_sqlite(element: unindexed, compiler: Any, **kw: Any) -> str:
    return "+" + compiler.process(element.clauses, **kw)


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


def next_due_deadline(
    connection: Connection, now: datetime, skipped: set[int]
) -> tuple[int, datetime] | None:
    """The id and time of the earliest pending, unpaused deadline due by ``now`` that is
    not in ``skipped``."""
    rows = connection.execute(
        select(Deadline.id, Deadline.due_at)
        .where(Deadline.status == "pending", Deadline.paused.is_(False), Deadline.due_at <= now)
        .order_by(Deadline.due_at, Deadline.id)
        .limit(len(skipped) + 1)
    ).all()
    for row in rows:
        if row.id not in skipped:
            return row.id, row.due_at
    return None


_LOCK_DEADLINES = (
    select(_deadlines.c.id, _deadlines.c.name, _deadlines.c.due_at, _deadlines.c.game_id,
           _deadlines.c.error, _games.c.kind)
    .join(_games, _games.c.id == _deadlines.c.game_id)
    .where(_deadlines.c.id.in_(bindparam("ids", expanding=True)),
           unindexed(_deadlines.c.status) == "pending", _deadlines.c.paused.is_(False))
    .with_for_update(skip_locked=True, of=_deadlines)
)
LOCK_DEADLINES = _LOCK_DEADLINES.where(step_lock_alone())
"""Take the step lock alone (:class:`step_lock_alone`: the group's steps lock several
games), then lock a group's deadlines that are still pending and unpaused (``ids``),
passing over those another daemon holds (``SKIP LOCKED``; SQLite's ``BEGIN IMMEDIATE``
already excludes every other writer): ``(id, name, due_at, game_id, error, kind)``, with
the kind of the deadline's game (what its step input depends on) read in the same
statement; the game's row is locked by its step."""

LockedDeadline = _row_type("LockedDeadline", _LOCK_DEADLINES)
"""A row of :data:`LOCK_DEADLINES` or :data:`LOCK_DEADLINE`."""

LOCK_DEADLINE = _LOCK_DEADLINES.where(step_lock_shared())
""":data:`LOCK_DEADLINES` for a group of one deadline, a single step: it shares the step
lock (:class:`step_lock_shared`)."""

MARK_FIRED = (
    update(_deadlines)
    .where(_deadlines.c.id == bindparam("deadline_id"), _deadlines.c.status == "pending",
           _deadlines.c.paused.is_(False), _deadlines.c.due_at == bindparam("due"))
    .values(status="fired", fired_at=bindparam("new_fired_at"), error=None)
)
"""Mark a locked deadline fired if it is still pending, unpaused and due when it was
locked (an earlier step of the same transaction may have cancelled, moved or paused it):
``deadline_id``, ``due``, ``new_fired_at``; the row count says whether it fired."""

def overdue_deadlines(connection: Connection | Session, before: datetime) -> Sequence[Row[Any]]:
    """Pending, unpaused deadlines due before ``before`` (``game_id``, ``name``, ``due_at``,
    ``error``), earliest first: what a running daemon should have fired by now."""
    return connection.execute(
        select(_deadlines.c.game_id, _deadlines.c.name, _deadlines.c.due_at, _deadlines.c.error)
        .where(_deadlines.c.status == "pending", _deadlines.c.paused.is_(False),
               _deadlines.c.due_at < before)
        .order_by(_deadlines.c.due_at, _deadlines.c.id)
    ).all()


_NEXT_TIMER = (
    select(_deadlines.c.id, _deadlines.c.due_at)
    .where(_deadlines.c.status == "pending", _deadlines.c.paused.is_(False),
           _deadlines.c.due_at > bindparam("after"))
    .order_by(_deadlines.c.due_at, _deadlines.c.id)
    .limit(1)
)


def next_timer_deadline(connection: Connection | Session, after: datetime) -> Row[Any] | None:
    """``(id, due_at)`` of the earliest pending, unpaused deadline due after ``after``
    (one index range read, whatever the number of games)."""
    return connection.execute(_NEXT_TIMER, {"after": after}).first()


def pending_deadlines_of(session: Session, game_id: str, name: str | None = None) -> list[Deadline]:
    """The game's pending deadlines (only those called ``name`` if given), earliest first."""
    query = select(Deadline).where(Deadline.game_id == game_id, Deadline.status == "pending")
    if name is not None:
        query = query.where(Deadline.name == name)
    return list(session.scalars(query.order_by(Deadline.due_at, Deadline.id)))


# -- overrides -----------------------------------------------------------------------------


def overrides(session: Session) -> list[Override]:
    """Every override entry the daemon has seen and applied."""
    return list(session.scalars(select(Override)))


# -- inbound messages ----------------------------------------------------------------------


def insert_message(dialect: str, flush: bool):  # type: ignore[no-untyped-def]
    """INSERT a message unless its (source, external id) is stored; RETURNING its id.

    Without ``flush``, on Postgres, a message inserted also sets ``synchronous_commit``
    off for its transaction (``set_config`` returned with its row, run only for a row
    inserted): its commit does not wait for the flush to disk (see
    :class:`_without_flush_wait`; :func:`dealer.shell.ingest.ingest` says when that is
    allowed)."""
    insert = postgres_insert if dialect == "postgresql" else sqlite_insert
    returned = [_inbound.c.id]
    if dialect == "postgresql" and not flush:
        returned.append(func.set_config("synchronous_commit", "off", True))
    return (
        insert(_inbound)
        .on_conflict_do_nothing(index_elements=["source", "external_id"])
        .returning(*returned)
    )


INSERT_MESSAGE = _inbound.insert()

FLUSH_COMMITTED = select(func.txid_current())
"""Gives the transaction an id, so that its commit writes a record and waits for the flush
to disk, which makes every transaction committed before it durable too (Postgres)."""

CLAIM_MESSAGE = (
    select(
        _inbound.c.id, _inbound.c.sender, _inbound.c.channel, _inbound.c.game_hint,
        _inbound.c.kind, _inbound.c.body, _inbound.c.sent_at, _inbound.c.source,
        _inbound.c.external_id, _inbound.c.target, _inbound.c.emoji, _inbound.c.removed,
    )
    .where(_inbound.c.id == bindparam("id"), _inbound.c.status == "pending", step_lock_shared())
    .with_for_update(skip_locked=True)
)
"""A pending message, locked for processing (``id``), once the step lock is shared
(:class:`step_lock_shared`: a single step); no row if another daemon has it."""

def _claim_messages_of(ids: Any) -> Select[Any]:
    """:func:`claim_messages`, the messages chosen by the condition ``ids``."""
    return (
        select(*CLAIM_MESSAGE.selected_columns)
        .where(ids, unindexed(_inbound.c.status) == "pending", step_lock_alone())
        .with_for_update(skip_locked=True)
    )


@lru_cache(maxsize=64)
def claim_messages(count: int) -> Direct:
    """The pending ones of ``count`` messages (bound as ``m0``, ``m1``, ...), locked for
    processing once the step lock is taken alone (:class:`step_lock_alone`: the group's
    steps lock several games): one statement for a group
    (:func:`dealer.shell.passes.process_messages`), one prebuilt per group size (a group
    has up to 50 messages), run on the driver's cursor (:mod:`dealer.store.direct`)."""
    return Direct(_claim_messages_of(_inbound.c.id.in_([bindparam(f"m{i}") for i in range(count)])))

ClaimedMessage = _row_type("ClaimedMessage", CLAIM_MESSAGE)
"""A row of :data:`CLAIM_MESSAGE` or :func:`claim_messages` (the message's handling reads
its fields again and again)."""

RECORD_OUTCOME = (
    update(_inbound)
    .where(_inbound.c.id == bindparam("inbound_id"))
    .values(
        status=bindparam("new_status"),
        outcome=bindparam("new_outcome"),
        processed_at=bindparam("new_processed_at"),
        game_id=bindparam("new_game_id"),
    )
)


_PENDING_MESSAGES = (
    # Messages count in the order they were sent (SR-6: a later submission replaces an
    # earlier one), to the microsecond; an exact tie goes to the one dealer received first:
    # the row id, which follows ingest order (the directory inbox reads files in arrival
    # order).
    select(_inbound.c.id, _inbound.c.sent_at)
    .where(_inbound.c.status == "pending")
    .order_by(_inbound.c.sent_at, _inbound.c.id)
    .limit(bindparam("messages"))
    .subquery("pending_messages")
)
_DUE_DEADLINES = (
    select(_deadlines.c.id, _deadlines.c.due_at, _deadlines.c.game_id)
    .where(_deadlines.c.status == "pending", _deadlines.c.paused.is_(False),
           _deadlines.c.due_at <= bindparam("now"))
    .order_by(_deadlines.c.due_at, _deadlines.c.id)
    .limit(bindparam("deadlines"))
    .subquery("due_deadlines")
)
_DUE = (
    union_all(
        select(literal_column("'deadline'", String).label("what"), _DUE_DEADLINES.c.id,
               _DUE_DEADLINES.c.due_at.label("due"), _DUE_DEADLINES.c.game_id),
        select(literal_column("'message'", String), _PENDING_MESSAGES.c.id,
               _PENDING_MESSAGES.c.sent_at, null()),
    )
    .order_by("what", "due", "id")
)


DUE = Direct(_DUE)
"""What is due (:func:`due_now`), run on the driver's cursor (:mod:`dealer.store.direct`)."""


@dataclass
class Due:
    """What :func:`due_now` read: pending messages ``(id, sent_at)``, in the order they
    count, and due deadlines ``(id, due_at, game_id)``, in the order they fire."""

    messages: list[tuple[int, datetime]]
    deadlines: list[tuple[int, datetime, str]]


def due_now(
    connection: Connection, now: datetime, skipped_messages: set[int], skipped_deadlines: set[int],
    messages: int, deadlines: int,
) -> Due:
    """Up to ``messages`` pending messages and up to ``deadlines`` pending, unpaused
    deadlines due by ``now``, those in the ``skipped`` sets left out, each earliest first:
    one statement (each an index range read, whatever the number of games)."""
    rows = DUE.rows(connection, {
        "now": now, "messages": messages + len(skipped_messages),
        "deadlines": deadlines + len(skipped_deadlines),
    })
    due = Due([], [])
    for what, row_id, due_at, game_id in rows:
        if what == "message":
            if row_id not in skipped_messages:
                due.messages.append((row_id, due_at))
        elif row_id not in skipped_deadlines:
            due.deadlines.append((row_id, due_at, game_id))
    due.messages = due.messages[:messages]
    due.deadlines = due.deadlines[:deadlines]
    return due


def newest_messages(session: Session, *, failed: bool = False, limit: int = 20) -> list[Inbound]:
    """The newest stored messages (only failed ones with ``failed``), newest first."""
    query = select(Inbound).order_by(Inbound.received_at.desc(), Inbound.id.desc()).limit(limit)
    if failed:
        query = query.where(Inbound.status == "failed")
    return list(session.scalars(query))


def count_failed_messages(session: Session) -> int:
    """How many stored messages are ``failed``."""
    return session.scalar(select(func.count()).select_from(Inbound).where(Inbound.status == "failed")) or 0


def failed_messages(session: Session) -> list[Inbound]:
    """Every failed message, in the order they were sent."""
    return list(session.scalars(
        select(Inbound).where(Inbound.status == "failed").order_by(Inbound.sent_at, Inbound.id)
    ))


def messages_with_external_id(session: Session, external_id: str) -> list[Inbound]:
    """The stored messages whose own id is ``external_id`` (one per source at most)."""
    return list(session.scalars(select(Inbound).where(Inbound.external_id == external_id)))


def messages_sharing_id(connection: Connection, source: str, external_id: str, base: str) -> list[Row[Any]]:
    """The stored messages from ``source`` with the id ``external_id``, and the conflicting
    duplicates kept under it (``BASE#2``, ``BASE#3``...): what they say and who sent them."""
    c = _inbound.c
    return list(connection.execute(
        select(c.external_id, c.sender, c.channel, c.game_hint, c.kind, c.target, c.emoji,
               c.removed, c.body)
        .where(c.source == source,
               (c.external_id == external_id) | c.external_id.startswith(base + "#", autoescape=True))
        .order_by(c.id)
    ))


def retry_failed(ids: list[int]) -> Update:
    """UPDATE the failed messages of ``ids`` back to pending, their error and outcome cleared."""
    return (
        update(Inbound)
        .where(Inbound.id.in_(ids), Inbound.status == "failed")
        .values(status="pending", error=None, outcome=None, processed_at=None)
    )


# -- the outbox ----------------------------------------------------------------------------

INSERT_POSTS = _posts.insert().inline()

DELIVERED = (
    update(_posts)
    .where(_posts.c.id == bindparam("post_id"), _posts.c.status == "pending")
    .values(
        status="delivered",
        attempts=_posts.c.attempts + 1,
        external_id=bindparam("new_external_id"),
        delivered_at=bindparam("new_delivered_at"),
        next_attempt_at=None,
    )
)
"""Mark a post sent, only if it is still pending (``post_id``, ``new_external_id``,
``new_delivered_at``): a post is delivered once, whoever sent it."""


class _without_flush_wait(_postgres_first):
    """A condition, true, that lets the transaction of the statement it is in commit
    without waiting for its WAL to reach the disk, on Postgres: ``SET LOCAL
    synchronous_commit TO off`` in the statement's own round trip (:class:`_postgres_first`).
    The commit is then visible at once but may be lost if the server crashes within a
    fraction of a second; a later commit that waits for the flush (any other) makes it
    durable too, the WAL being written in order. SQLite: a plain true (its WAL commits are
    not flushed either, ``synchronous=NORMAL``)."""

    name = "without_flush_wait"
    inherit_cache = True
    call = "set_config('synchronous_commit', 'off', true)"


DELIVERED_UNFLUSHED = DELIVERED.where(_without_flush_wait())
""":data:`DELIVERED`, and the transaction's commit does not wait for the flush to disk:
for the marks of posts whose transport drops a repeat (:func:`dealer.shell.delivery.deliver`
says why that keeps every guarantee)."""


POST_NOT_DELIVERED = (
    update(_posts)
    .where(_posts.c.id == bindparam("post_id"), _posts.c.status == "pending")
    .values(attempts=bindparam("new_attempts"), last_error=bindparam("new_error"),
            status=bindparam("new_status"), next_attempt_at=bindparam("new_next_attempt_at"))
)
"""Count a failed attempt at a pending post (``post_id``, ``new_attempts``, ``new_error``,
``new_status``, ``new_next_attempt_at``)."""

POST_DROPPED = (
    update(_posts)
    .where(_posts.c.id == bindparam("post_id"), _posts.c.status == "pending")
    .values(status="dropped", last_error=bindparam("new_error"), next_attempt_at=None)
)
"""Drop a stale pending post unsent (``post_id``, ``new_error``)."""

_PARKED = (
    select(_posts.c.channel, _posts.c.recipient).where(_posts.c.status == "failed").distinct()
    .cte("parked").prefix_with("MATERIALIZED", dialect="postgresql")
)
_WINDOW_ROWS = (
    select(_posts)
    .where(_posts.c.status == "pending", _posts.c.id > bindparam("after"),
           # No post of a destination with a parked post: the parked posts are read once
           # (a few at most: index ix_outbox_pending), not probed per pending post.
           ~exists().where(_PARKED.c.channel == _posts.c.channel,
                           _PARKED.c.recipient.is_not_distinct_from(_posts.c.recipient)))
    .order_by(_posts.c.id)
    .limit(bindparam("n"))
)
_WINDOW = _WINDOW_ROWS.with_only_columns(
    _posts.c.id, _posts.c.channel, _posts.c.recipient, _posts.c.next_attempt_at, _posts.c.mentions
)
_LOCK_POSTS = (
    select(
        _posts,
        # The accounts of the batch's players (keys), read with the claim's first post:
        # once for the batch, not once per post.
        case((_posts.c.id == bindparam("first"), select(
            _json_rows(_accounts.c.player, _accounts.c.platform, _accounts.c.account_id)
        ).where(_accounts.c.player == any_(bindparam("players", type_=ARRAY(String)))).scalar_subquery()))
        .label("accounts"),
    )
    .where(_posts.c.id == any_(bindparam("ids", type_=ARRAY(Integer))), _posts.c.status == "pending")
    .order_by(_posts.c.id)
    # A post another daemon holds is skipped, not waited for: its destination is then
    # left out of this claim (see claim_posts).
    .with_for_update(skip_locked=True, of=_posts)
)
"""Postgres: the chosen posts (``ids``) that are still pending, locked; the one whose id
is ``first`` (the claim's first) carries the accounts of ``players`` (``accounts``:
``[player, platform, account_id]`` each, or None for none)."""

def _in_array(column: Any, values: Any) -> Any:
    """Postgres: ``column = ANY`` of the array of a subquery's ``values`` (a column of it).
    Postgres looks each up through ``column``'s index, where ``column IN (SELECT ...)``
    may be joined with the whole table (the claim of a delivery's first page read every
    pending post so) and two such ``IN`` lists are an ``OR`` that reads it whole
    (``tests/integration/test_claim_plans.py``)."""
    return column == any_(cast(select(func.array_agg(values)).scalar_subquery(), ARRAY(column.type)))


_FIRST_PAGE = _WINDOW.cte("page").prefix_with("MATERIALIZED")
_FIRST_TAKEN = (
    # The posts the claim may take: the page's first ``limit`` (not the one more that says
    # whether another claim would find any), none waiting for its backoff.
    select(_FIRST_PAGE.c.id).where(or_(_FIRST_PAGE.c.next_attempt_at.is_(None),
                                       _FIRST_PAGE.c.next_attempt_at <= bindparam("now")))
    .order_by(_FIRST_PAGE.c.id).limit(bindparam("limit"))
    .subquery("taken")
)
_FIRST_LOCKED = (
    select(_posts)
    .where(_in_array(_posts.c.id, _FIRST_TAKEN.c.id), _posts.c.status == "pending")
    .order_by(_posts.c.id)
    .with_for_update(skip_locked=True, of=_posts)
    .cte("locked").prefix_with("MATERIALIZED")
)
_FIRST_NAMES = union_all(
    select(_FIRST_PAGE.c.recipient.label("name")),
    select(func.json_array_elements_text(case(
        (func.json_typeof(_FIRST_PAGE.c.mentions) == "array", _FIRST_PAGE.c.mentions)))),
).subquery("names")
"""The names the first page's posts are addressed to or mention, as written."""
_FIRST_KEYS = union(select(_FIRST_NAMES.c.name), select(func.lower(_FIRST_NAMES.c.name))).subquery("keys")
"""Those names as written and in lower case, looked up as one array (:func:`_in_array`)."""
_FIRST_PAGE_LOCKED = (
    select(
        *_FIRST_PAGE.c,
        *[column.label("locked_" + column.key) for column in _FIRST_LOCKED.c],
        # The accounts of the players the page's posts are addressed to or mention, by
        # each name as written and in lower case (a player's key, for most names: see
        # _FirstPage.looked_up), on its first row.
        case((_FIRST_PAGE.c.id == select(func.min(_FIRST_PAGE.c.id)).scalar_subquery(), select(
            _json_rows(_accounts.c.player, _accounts.c.platform, _accounts.c.account_id)
        ).where(_in_array(_accounts.c.player, _FIRST_KEYS.c.name))
        .scalar_subquery())).label("accounts"),
    )
    .select_from(_FIRST_PAGE.outerjoin(_FIRST_LOCKED, _FIRST_LOCKED.c.id == _FIRST_PAGE.c.id))
    .order_by(_FIRST_PAGE.c.id)
)
"""Postgres: a claim's first page (:data:`_WINDOW`, ``after`` 0: from the first pending
post on, ``n`` posts), each post of it the claim may take (the first ``limit``, none waiting for its
backoff at ``now``) locked in the same statement, if no other daemon holds it and it is
still pending (its columns as ``locked_*``, else None), and the accounts of the page's
recipients and mentions (``accounts``, on the first row: :class:`_FirstPage`): one round trip where a
page, then a lock, took two. The page itself is read without a lock, so a post another
daemon holds still holds its destination's later posts back."""

FIRST_PAGE_LOCKED = Direct(_FIRST_PAGE_LOCKED)
""":data:`_FIRST_PAGE_LOCKED`, run on the driver's cursor (:mod:`dealer.store.direct`)."""

PagePost = _row_type("PagePost", _WINDOW_ROWS)
"""A pending post of a page (SQLite: the posts :func:`claim_posts` takes)."""
_PagePostShort = _row_type("PagePostShort", _WINDOW)
"""Postgres: a pending post of a page, the columns the choice reads (:data:`_WINDOW`)."""
LockedPost = _row_type("LockedPost", _LOCK_POSTS)
"""A post :func:`claim_posts` took on Postgres (:data:`_LOCK_POSTS`)."""

CLAIM_WINDOW = 200
"""Pending posts read per page, after the first, while looking for posts to claim
(:func:`claim_posts`)."""


@dataclass
class Claim:
    """What :func:`claim_posts` took: the posts, locked, in publication order, whether they
    were every post then sendable (``complete``: nothing is left to claim, until a post is
    queued or a backoff ends), and the platform accounts of every player they are
    addressed to or mention (``accounts``: player key -> platform -> account id)."""

    posts: list[PagePost] | list[LockedPost]
    complete: bool
    accounts: dict[str, dict[str, str]] = field(default_factory=dict)


def claim_posts(connection: Connection, now: datetime, limit: int) -> Claim:
    """Up to ``limit`` posts to send in one transaction, in publication order, across
    destinations (a destination is a channel and a PM's recipient), with the accounts of
    their players.

    A post may be sent only when every earlier post of its destination is delivered (or
    dropped): the pending posts are read in publication order, a page (see below) at
    a time, and each destination contributes its posts from the
    first one on, until one waits for its backoff (that one and the rest of its
    destination wait). A destination with a parked post sends nothing: the page leaves
    its posts out. On Postgres the posts it may take are locked (``FOR UPDATE SKIP
    LOCKED``) and read again, with their players' accounts: if one is held by another
    daemon or no longer pending, its destination keeps only the posts before it, so
    another daemon's post in flight is passed over, not doubled or waited for, and no post
    overtakes an earlier one. The first page's posts are locked by the statement that
    reads the page (:data:`_FIRST_PAGE_LOCKED`: those of its first ``limit`` posts not
    waiting for their backoff; the page itself is read without a lock, so that a post
    another daemon holds still holds its destination back), those of later pages by one
    more statement: a claim of one page is one statement. SQLite has one writer at a time:
    the claim's transaction took the write lock when it began, so the pages' rows are the
    posts as they are, and the accounts are read on their own: a claim of one page is two
    statements (the page, then the accounts).

    The first page holds one post more than ``limit``: when no destination waits (the
    usual case) the claim reads only the posts it takes and the one that says whether
    another claim would find any; the pages after it hold :data:`CLAIM_WINDOW` posts.
    On SQLite a page's rows are whole posts, each column converted as it is read (the
    times, the mentions' JSON): a first page of :data:`CLAIM_WINDOW` converted four
    times the posts a batch takes.

    Reading pages of plain rows replaces a per-post "no earlier post pending" probe,
    which on Postgres cost a probe of every pending post per claim, and lets one
    transaction (one commit) deliver the posts of many destinations.
    """
    sqlite = connection.dialect.name == "sqlite"
    blocked: set[tuple[str, str | None]] = set()
    chosen: dict[tuple[str, str | None], list[Any]] = {}
    window, page_row = (_WINDOW_ROWS, PagePost._make) if sqlite else (_WINDOW, _PagePostShort._make)
    count, after, complete = 0, 0, True
    size = limit + 1
    first: _FirstPage | None = None  # Postgres: the first page, read and locked at once
    while count < limit:
        if first is None and not sqlite:
            first = _FirstPage.read(connection, now, limit, size)
            page: Sequence[Any] = first.page
        else:
            page = connection.execute(window, {"after": after, "n": size}).all()
        for row in map(page_row, page):  # only the rows looked at (a claim may stop early)
            where = (row.channel, row.recipient)
            if where in blocked:
                continue
            if row.next_attempt_at is not None and row.next_attempt_at > now:
                blocked.add(where)  # waits for its backoff; the rest of its destination too
                continue
            if count == limit:
                complete = False  # sendable, left for the next claim
                break
            chosen.setdefault(where, []).append(row)
            count += 1
        if len(page) < size or not complete:
            break
        after, size = page[-1].id, CLAIM_WINDOW
        if count == limit:
            complete = False  # the limit fell at the end of a full page: more may follow
    if not chosen:
        return Claim([], complete)
    posts = sorted((row for rows in chosen.values() for row in rows), key=lambda row: row.id)
    players = sorted({player_key(name) for row in posts
                      for name in (*(row.mentions or ()), row.recipient) if name})
    if sqlite:
        # The pages' rows are the posts as they are (the write lock is this transaction's).
        return Claim(posts, complete, accounts_of(connection, players))
    assert first is not None
    locked = dict(first.locked)  # the first page's posts it could take, locked with it
    accounts = first.accounts
    covered = {key for key in players if key in first.looked_up}
    later = [row.id for row in posts if row.id not in first.taken]  # from the pages after it
    if later:
        locked.update((row.id, row) for row in map(LockedPost._make, connection.execute(_LOCK_POSTS, {
            "ids": later, "first": later[0], "players": [key for key in players if key not in covered]})))
        if later[0] in locked:
            accounts = {**accounts, **_by_player(locked[later[0]].accounts or ())}
            covered = set(players)
    claimed = []
    for rows in chosen.values():
        for row in rows:
            if row.id not in locked:
                complete = False  # another daemon's (or gone): this destination stops here
                break
            claimed.append(locked[row.id])
    claimed.sort(key=lambda row: row.id)
    if claimed and len(covered) < len(players):
        accounts = {**accounts, **accounts_of(connection, [key for key in players if key not in covered])}
    return Claim(claimed, complete, {key: accounts[key] for key in players if key in accounts})


@dataclass
class _FirstPage:
    """Postgres: a claim's first page, its posts locked with it (:data:`_FIRST_PAGE_LOCKED`)."""

    page: list[Any]
    """The page's rows (:data:`_PagePostShort`)."""
    taken: set[int]
    """The ids of the posts the statement tried to lock (whether it did or not)."""
    locked: dict[int, Any]
    """The posts it locked, by id (:data:`LockedPost` rows)."""
    accounts: dict[str, dict[str, str]]
    """The accounts it read, by player key (:func:`_by_player`)."""
    looked_up: set[str]
    """The player keys whose accounts it read (all of them, if any): each name a post of
    the page is addressed to or mentions, as written, and in lower case if it is ASCII
    (Postgres's ``lower`` then is Python's). A player key is the name case folded and
    normalised (:func:`dealer.text.player_key`): for most names one of these two; the
    accounts of a key not among them are read apart (:func:`claim_posts`)."""

    @classmethod
    def read(cls, connection: Connection, now: datetime, limit: int, size: int) -> _FirstPage:
        rows = FIRST_PAGE_LOCKED.rows(connection, {"after": 0, "n": size, "limit": limit, "now": now})
        width = len(_WINDOW.selected_columns)
        page = [_PagePostShort._make(row[:width]) for row in rows]
        locked = {row[width]: LockedPost._make(row[width:]) for row in rows if row[width] is not None}
        # What the statement tried to lock, as it chose: the first `limit` not waiting.
        taken = set(sorted(row.id for row in page
                           if row.next_attempt_at is None or row.next_attempt_at <= now)[:limit])
        names = {name for row in page for name in (row.recipient, *(row.mentions or ())) if name is not None}
        looked_up = names | {name.lower() for name in names if name.isascii()}
        accounts = rows[0][-1] if rows else None  # the last column, on the first row
        return cls(page, taken, locked, _by_player(accounts or ()), looked_up)


def count_parked(connection: Connection | Session) -> int:
    """How many posts are parked (``failed``), waiting for ``dealer outbox retry``."""
    return connection.execute(select(func.count()).select_from(_posts).where(_posts.c.status == "failed")).scalar_one()


def outbox_posts(session: Session, *, failed: bool = False, limit: int = 20) -> list[Post]:
    """The newest posts (only the parked ones with ``failed``), newest first."""
    query = select(Post).order_by(Post.id.desc()).limit(limit)
    if failed:
        query = query.where(Post.status == "failed")
    return list(session.scalars(query))


def parked_posts(session: Session, ids: list[int] | None) -> list[Post]:
    """Parked posts, locked: those of ``ids`` (every one with None), in publication order."""
    query = select(Post).where(Post.status == "failed").order_by(Post.id).with_for_update()
    if ids is not None:
        query = query.where(Post.id.in_(ids))
    return list(session.scalars(query))


def post_exists(session: Session, key: str) -> bool:
    """Whether a post with idempotency ``key`` is queued or sent."""
    return session.scalar(select(Post.id).where(Post.key == key)) is not None


# -- read views ----------------------------------------------------------------------------


def game_deadlines(session: Session, game_id: str) -> list[Deadline]:
    """Every deadline row of a game, earliest first."""
    return list(session.scalars(
        select(Deadline).where(Deadline.game_id == game_id).order_by(Deadline.due_at, Deadline.id)
    ))


def game_events(session: Session, game_id: str) -> list[Event]:
    """A game's whole history, in order."""
    return list(session.scalars(select(Event).where(Event.game_id == game_id).order_by(Event.seq)))


def game_seeds(session: Session, game_id: str) -> list[Seed]:
    """Every epoch of a game's fair source, in order."""
    return list(session.scalars(select(Seed).where(Seed.game_id == game_id).order_by(Seed.epoch)))


def games_newest_first(session: Session) -> Sequence[Row[Any]]:
    """``id, kind, status, created_at`` of every game, newest first."""
    return session.execute(
        select(_games.c.id, _games.c.kind, _games.c.status, _games.c.created_at)
        .order_by(_games.c.created_at.desc(), _games.c.id)
    ).all()


def players_by_game(session: Session) -> dict[str, list[str]]:
    """The players of every game, by game id, each list sorted (one query)."""
    result: dict[str, list[str]] = {}
    rows = session.execute(
        select(_game_players.c.game_id, _game_players.c.player)
        .order_by(_game_players.c.game_id, _game_players.c.player)
    )
    for row in rows:
        result.setdefault(row.game_id, []).append(row.player)
    return result


def next_deadline_by_game(session: Session) -> dict[str, datetime]:
    """The earliest pending deadline of every game that has one, by game id (one query)."""
    rows = session.execute(
        select(_deadlines.c.game_id, func.min(_deadlines.c.due_at).label("due_at"))
        .where(_deadlines.c.status == "pending")
        .group_by(_deadlines.c.game_id)
    )
    return {row.game_id: row.due_at for row in rows}


# -- routing -------------------------------------------------------------------------------

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
"""The game of one of dealer's posts by the id its platform gave it (a Discord message id,
of the post or of any of its parts)."""
_REF_OF_PLATFORM_POST = _GAME_OF_PLATFORM_POST.with_only_columns(_posts.c.ref)
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
    """The game's ``kind`` and stored ``state``, as JSON text (``GameState.from_stored``
    has pydantic parse it, as a step's locked read does)."""
    return session.execute(_GAME_STATE, {"game_id": game_id}).one()


def _players_with_games_of(keys: Any) -> Select[Any]:
    """:func:`_players_with_games`, the players' keys matched by ``keys`` (a condition's
    right side)."""
    return (
        select(_players.c.key, _players.c.name, *GAME_REF)
        .select_from(_players)
        .outerjoin(_members, _members.c.player == _players.c.name)
        .outerjoin(_games, and_(_games.c.id == _members.c.game_id, _games.c.status != "finished"))
        .where(keys)
        .order_by(_players.c.key, _games.c.created_at, _games.c.id)
    )


@lru_cache(maxsize=64)
def _players_with_games(count: int) -> Select[Any]:
    """The players of ``count`` keys (bound as ``k0``, ``k1``, ...) with their unfinished
    games: one prebuilt statement per number of keys (a group has up to 50 senders)."""
    return _players_with_games_of(_players.c.key.in_([bindparam(f"k{i}") for i in range(count)]))


PlayerGame = _row_type("PlayerGame", _players_with_games(1))
"""A row of :func:`players_with_games` (routing reads its game's fields again and again)."""


def players_with_games(session: Session, keys: Sequence[str]) -> dict[str, list[PlayerGame]]:
    """Each player of ``keys`` that exists, by key: its rows (``key``, ``name``) with each
    unfinished game it takes part in (the game's routing columns, as
    :func:`player_games`), one row per game; one row whose ``id`` is None, alone, for
    none. One statement for them all."""
    found: dict[str, list[PlayerGame]] = {}
    for row in map(PlayerGame._make, session.execute(
            _players_with_games(len(keys)), {f"k{i}": key for i, key in enumerate(keys)})):
        found.setdefault(row.key, []).append(row)
    return _games_by_player(found)


def _games_by_player(found: dict[str, list[PlayerGame]]) -> dict[str, list[PlayerGame]]:
    """Each player's rows with a game, or its one row without (a player in no game)."""
    return {key: [row for row in rows if row.id is not None] or rows[:1] for key, rows in found.items()}


def _senders_locking_games(keys: Any) -> Select[Any]:
    """:data:`SENDERS_LOCKING_GAMES`, the players' keys matched by ``keys`` (a condition's
    right side)."""
    senders = _players_with_games_of(keys).cte("senders")
    locked = (
        _LOCK_GAMES.where(_games.c.id.in_(select(senders.c.id).where(senders.c.id.is_not(None))))
        .order_by(_games.c.id)
        .cte("locked").prefix_with("MATERIALIZED")
    )
    return (
        select(senders.c.key, senders.c.name, *locked.c)
        .select_from(senders.outerjoin(locked, locked.c.id == senders.c.id))
        .order_by(senders.c.key, senders.c.created_at, senders.c.id)
    )


_SENDERS_LOCKING_GAMES = _senders_locking_games(
    _players.c.key == any_(bindparam("keys", type_=ARRAY(String))))
SENDERS_LOCKING_GAMES = Direct(_SENDERS_LOCKING_GAMES)
"""Postgres: the players of ``keys`` (an array) as :func:`players_with_games` reads them,
each player's games locked and read as :data:`LOCK_GAME` reads a game, in the order of
their ids (the order :func:`lock_games` locks them in): ``key``, ``name``, then the
locked game's columns (None for a player in no unfinished game), one row per player and
game: one statement whatever the number of keys, run on the driver's cursor
(:mod:`dealer.store.direct`)."""

_SENDER_LOCKING_GAMES = _senders_locking_games(_players.c.key == bindparam("key", type_=String))
SENDER_LOCKING_GAMES = Direct(_SENDER_LOCKING_GAMES)
""":data:`SENDERS_LOCKING_GAMES` for one player (``key``, a plain parameter): the group
of nearly every message (one sender), planned once.

Postgres plans a prepared statement anew at each execution while the plan it would keep
for every value (its generic plan) looks costlier than the plans made for the values
given. It cannot know how many keys an array holds, guesses about ten, and so prices the
generic plan of :data:`SENDERS_LOCKING_GAMES` (ten players, their games locked and read
with all their subqueries) at eight times the plan for the one key given: that statement
was planned at every execution, 0.6-0.9 ms of the server's time a one-message pass (more
than its execution). A key compared with ``=`` is one row by the players' primary key
for every value, so after its first five executions Postgres keeps the generic plan
(``tests/integration/test_claim_plans.py`` checks it)."""


def senders_with_games_locked(
    connection: Connection, keys: Sequence[str]
) -> tuple[dict[str, list[PlayerGame]], list[LockedGame]]:
    """Postgres: :func:`players_with_games` and :func:`lock_games` of their games in one
    statement, one round trip: a group of messages reads its senders, routing needs their
    games, and nearly every step of the group goes to one of them
    (:func:`dealer.shell.messages.read_senders_keeping_games`).

    Returns the players as :func:`players_with_games` does (their games' routing columns
    as the lock read them) and the locked games, each once. As :func:`lock_game`: where the
    statement waited for another transaction's lock on a game, it read the rest (the
    players, their games, and what is read beside each game) as it stood before that
    transaction committed, and it is run again, now without waiting."""
    for _ in range(2):  # the second time only after waiting (see above)
        rows = (SENDER_LOCKING_GAMES.rows(connection, {"key": keys[0]}) if len(keys) == 1 else
                SENDERS_LOCKING_GAMES.rows(connection, {"keys": list(keys)}))
        locked = {row[2]: LockedGame._make(row[2:]) for row in rows if row[2] is not None}
        if all(game.seen_seq == game.next_event_seq for game in locked.values()):
            break
    found: dict[str, list[PlayerGame]] = {}
    for row in rows:
        game = locked.get(row[2])
        found.setdefault(row[0], []).append(PlayerGame(
            row[0], row[1], *((game.id, game.kind, game.status, game.channel, game.parent_id,
                               game.created_at) if game is not None else (None,) * 6)))
    return _games_by_player(found), sorted(locked.values(), key=lambda game: game.id)


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
    game_id = session.execute(_GAME_OF_PLATFORM_POST, {"external_id": target}).scalar()
    if game_id is not None:
        return game_id
    if target.isdigit() and len(target) < 19:
        return session.execute(_GAME_OF_POST, {"post_id": int(target)}).scalar()
    return None


def post_ref(session: Session, source: str, target: str) -> str | None:
    """The name the rules gave the post ``target`` (a reaction's target), when the target is
    one of dealer's posts and not a player's message; else None. A post is found by its
    platform id (a Discord message id, of the post or any of its parts) or by its outbox id,
    in the order :func:`game_of_target` reads them."""
    if session.execute(_GAME_OF_MESSAGE, {"source": source, "external_id": target}).first():
        return None  # a player's message of that id comes first (game_of_target)
    found = session.execute(_REF_OF_PLATFORM_POST, {"external_id": target}).first()
    if found is not None:
        return found[0]
    if not target.isdigit() or len(target) >= 19:
        return None
    return session.execute(_REF_OF_POST, {"post_id": int(target)}).scalar()


def first_messages(
    session: Session, game_id: str, since: datetime, until: datetime
) -> dict[str, datetime]:
    """Each sender's first text message to game ``game_id`` or one of its matches, sent
    from ``since`` to ``until`` (both included): ``{sender: sent_at}``."""
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
    """``platform:id`` -> the name of the player its messages are from, for those that are
    a player's (:func:`player_of_sender`)."""
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


def channels_of_game(connection: Connection | Session, game_id: str) -> list[str]:
    """Every channel game ``game_id`` owns, sorted."""
    return list(connection.execute(_CHANNELS_OF_GAME, {"game_id": game_id}).scalars())


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
    """When a game's own time begins: its creation, or the start it was given when that
    is earlier (``dealer game new --start`` may date a game back)."""
    data = session.execute(_GAME_START, {"game_id": game_id}).scalar()
    start = data.get("start") if isinstance(data, dict) else None
    return min(created_at, parse_time(start)) if isinstance(start, str) else created_at


def game_events_with_prefix(session: Session, game_id: str, prefixes: tuple[str, ...]) -> list[Event]:
    """A game's events whose type starts with one of ``prefixes``, in order."""
    return list(session.scalars(
        select(Event).where(Event.game_id == game_id,
                            or_(*(Event.type.startswith(p, autoescape=True) for p in prefixes)))
        .order_by(Event.seq)
    ))


def game_events_of_type(session: Session, game_id: str, type_: str) -> list[Event]:
    """A game's events of one type, in order."""
    return list(session.scalars(
        select(Event).where(Event.game_id == game_id, Event.type == type_).order_by(Event.seq)
    ))


def epoch_draws(session: Session, game_id: str, epoch: int) -> list[Draw]:
    """The recorded draws of one epoch of a game's fair source, by counter."""
    return list(session.scalars(
        select(Draw).where(Draw.game_id == game_id, Draw.epoch == epoch).order_by(Draw.counter)
    ))


# -- the status page -----------------------------------------------------------------------

def child_games(session: Session, parent_id: str) -> Sequence[Row[Any]]:
    """``id, kind, status, created_at`` of the games opened inside ``parent_id`` (its
    Exoptosis matches), oldest first."""
    return session.execute(
        select(_games.c.id, _games.c.kind, _games.c.status, _games.c.created_at)
        .where(_games.c.parent_id == parent_id).order_by(_games.c.created_at, _games.c.id)
    ).all()


def game_rows(session: Session, game_ids: list[str]) -> Sequence[Row[Any]]:
    """``id, kind, status, created_at, parent_id`` of the games named, newest first."""
    if not game_ids:
        return []
    return session.execute(
        select(_games.c.id, _games.c.kind, _games.c.status, _games.c.created_at, _games.c.parent_id)
        .where(_games.c.id.in_(game_ids)).order_by(_games.c.created_at.desc(), _games.c.id)
    ).all()


def events_of_types(session: Session, game_ids: list[str], types: Sequence[str]) -> list[Event]:
    """The events of the types named in the games named, oldest first (one query)."""
    if not game_ids:
        return []
    return list(session.scalars(
        select(Event).where(Event.game_id.in_(game_ids), Event.type.in_(list(types)))
        .order_by(Event.at, Event.game_id, Event.seq)
    ))


def events_newest_first(
    session: Session, game_ids: list[str], types: Sequence[str], batch: int = 1000
) -> Iterator[Row[Any]]:
    """``game_id, seq, at, type, data`` of the events of the types named in the games named,
    newest first, read ``batch`` rows at a time (the caller may stop early)."""
    if not game_ids:
        return
    query = (
        select(_events.c.id, _events.c.game_id, _events.c.seq, _events.c.at, _events.c.type,
               _events.c.data)
        .where(_events.c.game_id.in_(game_ids), _events.c.type.in_(list(types)))
        .order_by(_events.c.at.desc(), _events.c.id.desc())
        .limit(batch)
    )
    after: tuple[Any, Any] | None = None
    while True:
        page = query if after is None else query.where(or_(
            _events.c.at < after[0], and_(_events.c.at == after[0], _events.c.id < after[1])))
        rows = session.execute(page).all()
        yield from rows
        if len(rows) < batch:
            return
        after = (rows[-1].at, rows[-1].id)


def revealed_seeds(session: Session, game_id: str) -> list[Seed]:
    """The game's seeds already revealed, by epoch."""
    return list(session.scalars(
        select(Seed).where(Seed.game_id == game_id, Seed.revealed_at.is_not(None)).order_by(Seed.epoch)
    ))


def change_mark(session: Session) -> str:
    """A short text that changes whenever any game's state, history or deadlines change
    (the status page polls it): the latest update and the total of event counters."""
    row = session.execute(
        select(func.max(_games.c.updated_at), func.sum(_games.c.next_event_seq), func.count())
        .select_from(_games)
    ).one()
    deadlines = session.execute(
        select(func.count(), func.max(_deadlines.c.due_at)).select_from(_deadlines)
        .where(_deadlines.c.status == "pending")
    ).one()
    return f"{row[0]}|{row[1]}|{row[2]}|{deadlines[0]}|{deadlines[1]}"


# -- platforms: linked accounts, parts of split posts, history cursors ------------------------

_parts = PostPart.__table__
_cursors = Cursor.__table__

_PLAYER_OF_ACCOUNT = select(_accounts.c.player).where(
    _accounts.c.platform == bindparam("platform"), _accounts.c.account_id == bindparam("account_id")
)
_ACCOUNTS_OF_PLAYERS = select(_accounts.c.player, _accounts.c.platform, _accounts.c.account_id).where(
    _accounts.c.player.in_(bindparam("players", expanding=True))
)


def player_of_account(connection: Connection | Session, platform: str, account_id: str) -> str | None:
    """The key of the player linked to an account, if any."""
    return connection.execute(_PLAYER_OF_ACCOUNT, {"platform": platform, "account_id": account_id}).scalar()


_NAMESAKE_WITHOUT_DISCOURSE = select(_players.c.key).where(
    _players.c.key == bindparam("key"),
    ~exists().where(_accounts.c.player == _players.c.key, _accounts.c.platform == "discourse"),
)


def player_of_sender(connection: Connection | Session, platform: str, account_id: str) -> str | None:
    """The key of the player a message from an account is from: the player linked to it.

    Interpretation (docs/DISCOURSE.md): a Discourse username linked to nobody is the player
    of that name, as before accounts could be linked, unless that player has linked another
    Discourse account: then a namesake is not them."""
    key = player_of_account(connection, platform, account_id)
    if key is None and platform == "discourse":
        key = connection.execute(_NAMESAKE_WITHOUT_DISCOURSE, {"key": player_key(account_id)}).scalar()
    return key


def accounts_of(connection: Connection | Session, players: Sequence[str]) -> dict[str, dict[str, str]]:
    """Each of ``players`` (keys) with its accounts, platform -> account id (one query)."""
    if not players:
        return {}
    return _by_player(connection.execute(_ACCOUNTS_OF_PLAYERS, {"players": list(players)}))


def _by_player(rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, str]]:
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


_PARTS_OF_POST = select(_parts.c.part, _parts.c.external_id).where(_parts.c.post_id == bindparam("post_id"))


def parts_sent(connection: Connection, post_id: int) -> dict[int, str]:
    """The parts of a post already delivered, by index, with their platform ids."""
    return {row.part: row.external_id for row in connection.execute(_PARTS_OF_POST, {"post_id": post_id})}


def record_part(connection: Connection, post_id: int, part: int, external_id: str, now: datetime) -> None:
    """Record one delivered part of a post (in the claim's transaction)."""
    connection.execute(_parts.insert().values(post_id=post_id, part=part, external_id=external_id, delivered_at=now))


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
    """Set how far ``source`` has read ``place``, never backwards (positions are numeric
    ids that only grow: Discord snowflakes)."""
    current = cursor(connection, source, place)
    if current is None:
        connection.execute(_cursors.insert().values(source=source, place=place, position=position, updated_at=now))
    elif int(position) > int(current):
        connection.execute(
            update(_cursors).where(_cursors.c.source == source, _cursors.c.place == place)
            .values(position=position, updated_at=now)
        )


def cursor_back(connection: Connection, source: str, place: str, position: str, now: datetime) -> None:
    """Put a cursor back to ``position`` if it is past it (a message heard after it could
    be stored while an earlier one could not: the catch-up must read from before it)."""
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
    """True when a private post to ``recipient`` was ever queued (an unlinked account is
    told how to be added once). Read through the destination index."""
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
    """Record a webhook delivery id; False when it was recorded already (a replay).

    Ids received before ``forget_before`` are purged first: a delivery that old is refused
    for its timestamp, so its id need not be kept.
    """
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
           func.lower(_inbound.c.sender) == func.lower(bindparam("sender")))
    .order_by(_inbound.c.id.desc())
    .limit(1)
)
"""The raw text of the latest mail that carried a message of ``sender`` (from ``source``)."""


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
