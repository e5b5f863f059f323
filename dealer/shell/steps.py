"""One step of a game against the store: load, run the pure rules, commit every effect.

A step is a player's command, a deadline, the creation of a game or a client seed: its
input (:mod:`dealer.history`). It reads the game's state, a ledger snapshot, the fair
source and the pending deadlines, runs the input through the ruleset
(:func:`dealer.records.perform`), turns the effects into records
(:func:`dealer.records.collect`, shared with the in-memory shell and the replay) and
writes them, in the caller's transaction: the new state, the ledger entries and balances,
the events (the input first), the deadline rows, the fair source's counter and draws, and
the rendered posts in the outbox. If the rules raise
:class:`~dealer.games.base.Rejected` (or anything else), nothing is written.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Callable, Iterable, Iterator

from pydantic import ValidationError
from sqlalchemy import Insert, Row, Update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from dealer import ledger as L, logs
from dealer.clock import iso
from dealer.fairness import FairSource, commitment, new_server_seed
from dealer.games import rules_for
from dealer.games.base import (
    ChildDraft, Context, GameSettings, GameState, PostDraft, Rejected, Rules, Summary,
)
from dealer.history import ChildActed, ChildFinished, GameCreated, HistoryEvent, StepInput
from dealer.records import DeadlineChange, FairChanges, FairMark, StepRecords, collect, perform
from dealer.store import queries as Q
from dealer.store.db import pipelined
from dealer.store.direct import direct
from dealer.render import render_post
from dealer.text import escape_post
from dealer.views import ledger_scope
from dealer.store.models import Game, JsonText

log = logging.getLogger(__name__)

Executor = Session | Connection
"""Where a step's statements run: the session, or (on the hot path) its connection, which
skips the ORM's per-statement work (autoflush, ORM compile state): about 0.1 ms a statement."""


class StagedRows:
    """Rows the steps of a group add that no step reads back (history events, ledger
    entries, fair draws, outbox posts; a message group's replies and outcomes too), kept
    to be written together before the group commits: one ``executemany`` per table for the
    group instead of one statement per step and table. Rows keep their order, so posts get
    their ids (their order of delivery) as if each step had inserted its own. What reads
    such a table during the group writes them first (:func:`write_staged`).

    With ``steps`` (a group of deadlines fired without savepoints, a group of messages)
    the steps' own writes are kept too: each deadline's "fired" mark, each game's new
    state (``UPDATE games``) and its new deadline rows. ``games`` names the games they
    concern; a step that reads one of those games (its locked row, a parent's scope)
    writes the kept step rows first (:func:`_read_game`), so it sees the game as the
    steps before it left it, and so does any other read of a game's row or deadlines
    during the group (:func:`write_kept_steps`: routing reads a game's status or state)."""

    def __init__(self, *, steps: bool = False, reuse: bool = False) -> None:
        self.rows: dict[Insert | Update, list[dict[str, Any]]] = {}
        self.steps = steps
        self.kept: dict[str, KeptGame] | None = {} if reuse else None
        """With ``reuse`` (a group of messages, or of several deadlines fired without
        savepoints): each game a step of the group locked, as the group's steps left it
        (:class:`KeptGame`)."""
        self.games: dict[str, int | None] = {}
        """The games with rows kept (``steps``): the id of the deadline whose fired mark
        alone is kept for the game, or None once anything else of it is."""
        self.counted: set[Insert | Update] = set()
        """Updates that must change one row each (a deadline's fired mark)."""
        self.own: set[Insert | Update] = set()
        """The statements of the steps' own writes (``steps``)."""

    def add(self, statement: Insert | Update, rows: list[dict[str, Any]]) -> None:
        """Keep ``rows`` for ``statement``."""
        self.rows.setdefault(statement, []).extend(rows)

    def write(self, connection: Connection, *, own: bool = False, commit: bool = False) -> None:
        """Write every row kept, table by table in the order first staged; with ``own``,
        only the steps' own writes (what a read of a game's row or deadlines needs: the
        append-only rows, which no step reads, stay kept).

        On Postgres the statements go without waiting for each other's results
        (:func:`dealer.store.db.pipelined`): one round trip for them all, where each was
        one (a message's step writes four). A counted update, whose row count is read,
        waits for the statements before it and is sent alone. With ``commit`` (Postgres),
        the transaction's ``COMMIT`` goes in the same round trip as the last of them
        (:func:`dealer.store.db.pipelined`)."""
        uncounted: list[Insert | Update] = []
        for statement in list(self.rows):
            if own and statement not in self.own:
                continue
            if statement not in self.counted:
                uncounted.append(statement)
                continue
            self._write_all(connection, uncounted)
            uncounted = []
            rows = self.rows.pop(statement)
            changed = direct(statement).execute(connection, rows)
            if changed != len(rows):
                raise StaleRows(f"{len(rows) - changed} of {len(rows)} rows kept for "
                                f"{statement.table} no longer stand as they were read")
        self._write_all(connection, uncounted, commit)
        self.games.clear()

    def _write_all(self, connection: Connection, statements: list[Insert | Update],
                   commit: bool = False) -> None:
        """Write the rows kept for ``statements`` (none of them counted), in order, in one
        round trip on Postgres; with ``commit``, the transaction's commit with them."""
        if len(statements) == 1 and not commit:
            direct(statements[0]).execute(connection, self.rows.pop(statements[0]))
        elif statements or commit:
            with pipelined(connection, commit=commit):
                for statement in statements:
                    direct(statement).execute(connection, self.rows.pop(statement))

    def keep_step(self, game: Q.LockedGame, records: StepRecords, players: list[str],
                  moved: dict[tuple[str, str], int], values: dict[str, Any]) -> None:
        """Follow in what the group keeps (:class:`KeptGame`) what a step of game
        ``game.id`` (read as ``game``, with ``players``) just wrote: the balances it
        ``moved``, in every kept game that read them, and its game's new row ``values``
        (:func:`commit_effects`); or drop its game where it changed what is not followed."""
        kept = self.kept
        assert kept is not None
        for key, delta in moved.items():
            if key[1] in Q.CURRENCIES:
                for each in kept.values():
                    if key[0] in each.accounts:
                        each.balances.amounts[key] = each.balances.amounts.get(key, 0) + delta
        own = kept.get(game.id)
        fair = records.fair
        if own is None:
            return
        if (records.deadlines or set(records.players) != set(players) or fair.retired
                or fair.new_epoch is not None or fair.reveal is not None
                or (fair.current is not None and fair.current[0] != game.epoch)):
            del kept[game.id]  # its deadlines, members or epoch: read again
            return
        row = own.row._replace(state=values["state"].text, status=values["status"],
                               updated_at=values["updated_at"],
                               next_event_seq=values["next_event_seq"])
        if fair.current is not None:
            _, counter, client_seeds = fair.current
            row = row._replace(counter=counter, client_seeds=list(client_seeds))
        kept[game.id] = KeptGame(row, own.balances, own.pending, own.accounts)


class StaleRows(RuntimeError):
    """A kept update changed fewer rows than kept (:class:`StagedRows`): a row changed
    since it was read in the same transaction. Never expected; the group is fired again
    with a savepoint per deadline, which writes each mark at once."""


_STAGED = "dealer.staged_rows"
"""The key of a session's :class:`StagedRows` in ``Session.info`` while :func:`staging`."""


@contextmanager
def staging(session: Session, *, steps: bool = False, reuse: bool = False,
            commit: bool = False) -> Iterator[None]:
    """Stage the append-only rows of the steps run in the block (:class:`StagedRows`) and
    insert them at its end, in the block's transaction.

    Only for a block whose steps are rolled back together (a group of deadlines fired
    without savepoints, a group of messages): a step rolled back alone to its savepoint
    would leave its rows staged. With ``steps``, the steps' own writes are kept too
    (:class:`StagedRows`): only for a group whose every read of a game's row or deadlines
    outside :func:`run_step` writes them first (:func:`write_kept_steps`). With ``reuse``
    as well, a game's locked row is read once for the block (:class:`KeptGame`): only for
    a block rolled back whole when a step fails, whose refused steps write nothing (a
    group of messages) or roll it back too (a group of deadlines fired without
    savepoints), in a transaction that holds the step lock alone. With ``commit``, on
    Postgres, the transaction commits with the block's last writes, in their round trip
    (:func:`dealer.store.db.pipelined`): only for a block that ends its transaction, which
    nothing reads or writes in after it.
    """
    staged = StagedRows(steps=steps, reuse=reuse)
    session.info[_STAGED] = staged
    try:
        yield
        staged.write(session.connection(), commit=commit)
    finally:
        session.info.pop(_STAGED, None)


def staged_rows(session: Session) -> StagedRows | None:
    """The rows staged in ``session`` (:func:`staging`), or None outside a staging block."""
    return session.info.get(_STAGED)


def write_staged(session: Session) -> None:
    """Insert what the steps of a staging block kept so far, in order (the block goes on
    staging what follows). A statement that reads what a step of the block may have
    staged (the outbox, the history, an inbound message's outcome) comes after this."""
    staged = session.info.get(_STAGED)
    if staged is not None and staged.rows:
        staged.write(session.connection())


def stage_step_write(session: Session, game_id: str, statement: Insert | Update,
                     rows: list[dict[str, Any]], *, firing: int | None = None) -> bool:
    """Keep a step's own write of game ``game_id`` (its state, its new deadlines, with
    ``firing`` the fired mark of that deadline) with the group's rows, if the group keeps
    them (:class:`StagedRows` ``steps``) and, for a mark, nothing else of the game is kept
    (an earlier step of the group stepped it: the mark is written at once, to see whether
    the deadline still stands). Returns False if the caller is to write it now."""
    staged = session.info.get(_STAGED)
    if staged is None or not staged.steps:
        return False
    if firing is not None:
        if game_id in staged.games:
            return False
        staged.counted.add(statement)
        staged.games[game_id] = firing
    else:
        staged.games[game_id] = None
    staged.own.add(statement)
    staged.add(statement, rows)
    return True


def _read_game(session: Session, game_id: str, firing: int | None) -> None:
    """Before a step reads game ``game_id``'s row and deadlines: write the group's kept
    step rows if some concern that game, unless only the fired mark of ``firing`` (the
    deadline this step fires, which the step leaves out of its pending deadlines)."""
    staged = session.info.get(_STAGED)
    if staged is None or game_id not in staged.games:
        return
    if firing is not None and staged.games[game_id] == firing:
        return
    staged.write(session.connection(), own=True)


def _read_parents(session: Session) -> None:
    """Before a child game's step reads its parent's scope (their rows): write the kept
    step rows of the group, if any."""
    write_kept_steps(session)


def write_kept_steps(session: Session, game_id: str | None = None) -> None:
    """Before a read of games' rows or deadlines that may see what a step of a group kept
    (:class:`StagedRows` ``steps``): write the kept step rows, if some concern game
    ``game_id`` (its state read again), or with None any game (a read of games by player,
    channel or id: their status; of the next due deadline)."""
    staged = session.info.get(_STAGED)
    if staged is not None and staged.games and (game_id is None or game_id in staged.games):
        staged.write(session.connection(), own=True)


_GAMES_VERSION = "dealer.games_version"
"""The key of a session's count of steps that changed who plays in a game or a game's
status (:func:`games_version`) in ``Session.info``."""


def games_version(session: Session) -> int:
    """How many steps run in ``session`` changed who plays in a game (``game_players``) or
    a game's status (a game opened, started or over): what was read before of a player's
    unfinished games (routing's reads) stands while this stays the same."""
    return session.info.get(_GAMES_VERSION, 0)


def _insert(executor: Executor, statement: Insert, rows: list[dict[str, Any]],
            staged: StagedRows | None) -> None:
    """Insert ``rows`` now, or stage them with the group's (:func:`staging`)."""
    if staged is not None:
        staged.add(statement, rows)
    else:
        executor.execute(statement, rows)


@dataclass
class StepResult:
    """What a committed step changed, for the caller's bookkeeping and replies."""

    summary: Summary
    posts: int
    deadlines_changed: bool


def load_state(game: Game | Row[Any] | Q.LockedGame) -> tuple[Rules, GameState]:
    """The ruleset of ``game`` (a Game or a games row) and its state, parsed."""
    rules = rules_for(game.kind)
    return rules, rules.State.from_stored(game.state)


def _state_or_none(game: Game | Q.LockedGame) -> tuple[Rules, GameState | None]:
    """Like :func:`load_state`, but a game being created has no state yet (``{}``, or its
    text: :data:`Q.LOCK_GAME` reads the state as text)."""
    if not game.state or game.state == "{}":
        return rules_for(game.kind), None
    return load_state(game)


def ledger_snapshot(session: Executor, accounts: Iterable[str],
                    locked: Q.LockedBalances | None = None) -> L.Ledger:
    """The ledger a step works with, over ``accounts`` (the only ones it may touch).

    The currencies of every account are read at once (nearly every step looks at some):
    taken from ``locked``, those read with the game's locked row, if they cover every
    account (:meth:`~dealer.store.queries.LockedBalances.covers` said so), else read now.
    Any other balance (a card, a pack) is read from the store the first time the rules
    look at it, so a step's cost does not grow with what the members have collected.
    """
    wanted = sorted(set(accounts))
    ledger = L.Ledger({(account, item): 0 for account in wanted for item in Q.CURRENCIES})
    if locked is not None:
        ledger.balances.update((key, amount) for key, amount in locked.amounts.items()
                               if key in ledger.balances)
    else:
        ledger.balances.update(
            ((row.account, row.item), row.amount)
            for row in session.execute(Q.currency_holdings(len(wanted)),
                                       {f"a{i}": a for i, a in enumerate(wanted)})
        )
    ledger.source = StoreBalances(session, wanted)
    return ledger


class StoreBalances:
    """Balances read from the store on first use, for the accounts a step may touch (any
    other reads as empty, as if it held nothing)."""

    def __init__(self, session: Executor, accounts: Iterable[str]) -> None:
        self.session = session
        self.accounts = frozenset(accounts)

    def balance(self, account: str, item: str) -> int:
        """What ``account`` holds of ``item``."""
        if account not in self.accounts:
            return 0
        amount = self.session.execute(Q.BALANCE, {"account": account, "item": item}).scalar()
        return amount or 0

    def holdings(self, account: str) -> dict[str, int]:
        """Every item ``account`` holds."""
        if account not in self.accounts:
            return {}
        return {row.item: row.amount for row in self.session.execute(Q.ACCOUNT_HOLDINGS, {"account": account})}


@dataclass
class SeedRow:
    """The fields of a game's current epoch that a step reads."""

    epoch: int
    server_seed: str
    client_seeds: list[str]
    counter: int
    revealed: bool


def current_seed(game: Q.LockedGame) -> SeedRow:
    """The game's newest epoch (its fair source's seed), read with its locked row
    (:data:`dealer.store.queries.LOCK_GAME`)."""
    if game.epoch is None:
        raise LookupError(f"game {game.id} has no fair source")
    return SeedRow(game.epoch, game.server_seed, list(game.client_seeds), game.counter,
                   game.revealed_at is not None)


def new_seed_row(game_id: str, epoch: int, server_seed: str | None = None) -> dict[str, Any]:
    """A fresh epoch with a new secret server seed (made here, in the shell)."""
    server_seed = server_seed or new_server_seed()
    return {
        "game_id": game_id,
        "epoch": epoch,
        "server_seed": server_seed,
        "commitment": commitment(server_seed),
        "client_seeds": [],
        "counter": 0,
        "revealed_at": None,
    }


@dataclass
class PendingDeadline:
    """A pending deadline row, as a step sees it."""

    id: int
    due_at: datetime
    paused: bool = False
    error: str | None = None  # why its step last crashed


def lock_game(connection: Connection, game_id: str) -> Q.LockedGame:
    """The game's row, locked, with what a step reads beside it (:data:`Q.LOCK_GAME`).

    If the statement waited for another transaction's lock on the row (Postgres), it read
    the epoch, the pause and the pending deadlines as they stood before that transaction
    committed: it is run again, now that the row is this transaction's (no wait)."""
    game = Q.LockedGame._make(connection.execute(Q.LOCK_GAME, {"id": game_id}).one())
    if game.seen_seq != game.next_event_seq:
        game = Q.LockedGame._make(connection.execute(Q.LOCK_GAME, {"id": game_id}).one())
    return game


CHECK_KEPT = False
"""Whether every reuse of a kept game (:class:`KeptGame`) reads the game afresh too and
fails if the two differ in anything a step uses (tests set it)."""


@dataclass
class KeptGame:
    """What a step read of its game (:data:`Q.LOCK_GAME`), as the steps of a group (of
    messages, or of deadlines fired without savepoints) left it: a later step of the group on the same game uses it instead of
    locking and reading the game again (its transaction holds the row's lock already).

    It is exactly what a fresh read would return. The group holds the step lock alone
    (Postgres; SQLite's one writer), so no other step changes what it holds, and its row's
    lock keeps every other writer of the row waiting: only the group's own steps change
    it, and each step updates or drops it as it writes (:meth:`StagedRows.keep_step`): the
    row's state, status, time and event number, the epoch's counter and client seeds, the
    currencies of every kept game an entry of the ledger moved. What it does not follow
    (deadlines created, moved or cancelled; players joining or leaving; an epoch rotated
    or revealed) drops it, to be read again. A refused step writes nothing and changes
    nothing kept; a step that fails rolls its whole group back, and what it kept with it.
    An admin command of another transaction that changes a balance (a grant) or a pause
    without the step lock is ordered after the group, as if it came a moment later; a
    fresh read could have seen it."""

    row: Q.LockedGame
    balances: Q.LockedBalances
    """:func:`Q.balances_of_locked` of the row, kept up to date."""
    pending: list[tuple[int, str, datetime, bool, str | None]]
    """:func:`Q.pending_of_locked` of the row."""
    accounts: frozenset[str]
    """The accounts whose currencies the row's read covers (:data:`Q.LOCK_GAME`): the
    members', the house, the void and the game's pool, in both scopes it looks in."""

    @classmethod
    def read(cls, row: Q.LockedGame) -> KeptGame:
        """What a step uses of a locked row."""
        balances = Q.balances_of_locked(row)
        accounts = set()
        for prefix in ("" if row.parent_id is None else row.parent_id + "/", row.id + "/"):
            accounts.update((prefix + "house", prefix + "void", prefix + "pool:" + row.id))
            accounts.update(prefix + "player:" + name for name in balances.members)
        return cls(row, balances, Q.pending_of_locked(row), frozenset(accounts))

    def without(self, firing: int | None) -> KeptGame:
        """This, with deadline ``firing`` (being fired) out of the pending deadlines."""
        if firing is None or all(row[0] != firing for row in self.pending):
            return self
        return replace(self, pending=[row for row in self.pending if row[0] != firing])

    def same_as(self, fresh: KeptGame) -> bool:
        """Whether ``fresh`` (read again) holds what this holds, in all a step uses."""
        ignored = {"seen_seq", "pending", "member_balances", "own_balances", "updated_at"}
        fields = [name for name in Q.LockedGame._fields if name not in ignored]
        return ([getattr(self.row, name) for name in fields]
                == [getattr(fresh.row, name) for name in fields]
                and self.balances == fresh.balances and self.pending == fresh.pending)


class KeptGameDiffers(BaseException):
    """A kept game differs from a fresh read of it (:data:`CHECK_KEPT`): a bug. Not an
    ``Exception``, so that no group falls back to one message at a time over it: the
    check stops the run (a test) that found it."""


def _kept_games(session: Session) -> dict[str, KeptGame] | None:
    """The games the current group keeps (:class:`KeptGame`), or None outside a group
    that keeps them (``staging(reuse=True)``)."""
    staged = session.info.get(_STAGED)
    return staged.kept if staged is not None else None


def _locked_game(session: Session, conn: Connection, game_id: str, firing: int | None) -> KeptGame:
    """The game's locked row, read now or, in a group that keeps games, as an earlier
    step of the group left it (:class:`KeptGame`)."""
    kept = _kept_games(session)
    if kept is not None and game_id in kept:
        if CHECK_KEPT:
            _read_game(session, game_id, firing)
            fresh = KeptGame.read(lock_game(conn, game_id)).without(firing)
            if not kept[game_id].without(firing).same_as(fresh):
                raise KeptGameDiffers(f"game {game_id}: kept {kept[game_id]!r}, read {fresh!r}")
        read = kept[game_id]
    else:
        _read_game(session, game_id, firing)  # an earlier step of a group may have kept its rows
        # Lock the game's row and read it afresh: two daemons on one Postgres never step the
        # same game at once (SQLite takes its write lock at BEGIN IMMEDIATE instead).
        read = KeptGame.read(lock_game(conn, game_id))
    if kept is not None:
        # The deadline this step fires (a group of deadlines) is no longer pending for a
        # later step of the group on the same game, as a fresh read would see once its
        # fired mark is written (steps before it leave it out: run_step).
        kept[game_id] = read = read.without(firing)
    return read


def keep_games(session: Session, game_ids: Iterable[str]) -> None:
    """Lock and read games ``game_ids`` in one statement, for the steps of the current
    group (:class:`KeptGame`), those it kept already aside: a group of messages reads
    the games of its senders at once (its messages' steps mostly go to them), a group of
    deadlines the games of its deadlines.

    As :func:`lock_game`: where the statement waited for another transaction's lock on a
    row (Postgres), what it read beside the rows predates that transaction, and it is run
    again, now without waiting."""
    kept = _kept_games(session)
    if kept is None:
        return
    wanted = sorted(set(game_ids) - kept.keys())
    if not wanted:
        return
    _read_games(session, wanted)
    conn = session.connection()
    params = {f"g{i}": game_id for i, game_id in enumerate(wanted)}
    rows = [Q.LockedGame._make(row) for row in conn.execute(Q.lock_games(len(wanted)), params)]
    if any(row.seen_seq != row.next_event_seq for row in rows):
        rows = [Q.LockedGame._make(row) for row in conn.execute(Q.lock_games(len(wanted)), params)]
    for row in rows:
        kept[row.id] = KeptGame.read(row)


def keeps_games(session: Session) -> bool:
    """Whether the current group keeps the games its steps lock (``staging(reuse=True)``)."""
    return _kept_games(session) is not None


def keep_locked(session: Session, rows: Iterable[Q.LockedGame]) -> None:
    """Keep games another statement locked and read as :func:`keep_games` does (its
    :data:`Q.LOCK_GAME` columns, the wait for another transaction's lock handled), for the
    steps of the current group: those it kept already stay as they are."""
    kept = _kept_games(session)
    if kept is None:
        return
    for row in rows:
        if row.id not in kept:
            kept[row.id] = KeptGame.read(row)


def _read_games(session: Session, game_ids: list[str]) -> None:
    """Before games ``game_ids`` are read (:func:`keep_games`): write the group's kept step
    rows if some concern them."""
    staged = session.info.get(_STAGED)
    if staged is not None and not staged.games.keys().isdisjoint(game_ids):
        staged.write(session.connection(), own=True)


def kept_game(session: Session, game_id: str) -> Q.LockedGame | None:
    """Game ``game_id``'s row as a step of the current group left it (its
    ``kind`` and ``state`` as text among the rest), or None if no step of it kept one."""
    kept = _kept_games(session)
    if kept is None or game_id not in kept:
        return None
    row = kept[game_id].row
    if CHECK_KEPT:
        write_kept_steps(session, game_id)
        fresh = Q.game_state_row(session, game_id)
        if (fresh.kind, fresh.state) != (row.kind, row.state):
            raise KeptGameDiffers(f"game {game_id}: kept state {row.state!r}, read {fresh.state!r}")
    return row


class GameHeld(RuntimeError):
    """The game waits behind one of its deadlines whose step crashed.

    Nothing that comes after that deadline is applied to the game until it fires: a bet
    sent after a round's end must not land in a round that never closed. The daemon leaves
    such messages and later deadlines pending and retries them on every pass.
    """


def check_not_held(
    game_id: str, pending: dict[str, PendingDeadline], now: datetime, firing: int | None = None
) -> None:
    """Raise :class:`GameHeld` if a failed, unpaused deadline of the game is due before ``now``.

    ``firing`` is the deadline being fired, which never holds itself. A message sent at a
    deadline's very time counts before it (as in the pass), so only deadlines due strictly
    before ``now`` hold.
    """
    for name, row in pending.items():
        if row.error is not None and not row.paused and row.due_at < now and row.id != firing:
            raise GameHeld(
                f"game {game_id} waits behind its deadline {name} (due {iso(row.due_at)}), "
                f"which could not be fired: {row.error}"
            )


def run_step(
    session: Session,
    game: Game | str,
    now: datetime,
    step: StepInput,
    *,
    origin: str,
    actor: str | None = None,
    extra_players: Iterable[str] = (),
    firing: int | None = None,
    command: Any = None,
    after: Callable[[Context], None] | None = None,
) -> StepResult:
    """Run ``step`` on ``game`` at ``now`` and stage every effect in ``session``.

    ``step`` is what the history keeps as the step's input (:mod:`dealer.history`): the
    game's creation, an accepted command line, a fired deadline or a client seed;
    :func:`dealer.records.perform` runs it (with ``command`` already parsed, if given);
    ``after`` then sees the step's context before its records are made (the message
    handling takes the sender's replies out of the posts, to answer once per message).
    ``origin`` names the cause (``in:12:0``, ``deadline:7``, ``create``); it makes the
    posts' idempotency keys. ``game`` may be given by id; ``firing`` is the id of the
    deadline this step fires. The caller commits. Raises :class:`GameHeld` (writing
    nothing) while a deadline of the game that is due before ``now`` cannot be fired.
    """
    game_id = game if isinstance(game, str) else game.id
    logs.bind(game_id=game_id)  # every line logged about this step names its game
    # The step's statements run on the session's connection (the hot path); what the
    # caller staged as ORM objects is written first, as a session statement would.
    session.flush()
    conn = session.connection()
    kept = _locked_game(session, conn, game_id, firing)
    game = kept.row
    rules, state = _state_or_none(game)
    # Who takes part is the ruleset's to say; game_players mirrors it for routing.
    players = rules.summary(state).players if state is not None else []
    # GH-1: a Hall cycle's accounts live in its own scope, apart from the global wallets;
    # a child game's (a match of the cycle) in its parent's.
    if game.parent_id:
        _read_parents(session)
    parent_scope = ledger_scope(session, game.parent_id) if game.parent_id else None
    scope = L.Scope(rules.ledger_scope(game.id, state, parent_scope))
    accounts = [scope.player(p) for p in [*players, *extra_players]]
    if actor:
        accounts.append(scope.player(actor))
    accounts += [scope.house, scope.void, scope.pool(game.id)]
    # The currencies of the members, the house, the void and the pool, read with the
    # locked row: used if they cover every account (a join's new player is not yet a
    # member; a game being created has none).
    locked = kept.balances
    seed = current_seed(game)
    rng = FairSource(
        seed.server_seed,
        client_seeds=list(seed.client_seeds),
        counter=seed.counter,
        epoch=seed.epoch,
        seed_factory=new_server_seed,
    )
    # The deadline being fired is no longer pending (its fired mark may be kept with its
    # group's rows, not yet written).
    pending = {name: PendingDeadline(deadline_id, due_at, paused, error)
               for deadline_id, name, due_at, paused, error in kept.pending
               if deadline_id != firing}
    check_not_held(game.id, pending, now, firing)
    ctx = Context(
        game_id=game.id,
        kind=game.kind,
        channel=game.channel,
        now=now,
        rng=rng,
        ledger=ledger_snapshot(conn, accounts, locked if locked.covers(
            game.id, game.parent_id, scope.name, accounts) else None),
        deadlines={name: row.due_at for name, row in pending.items()},
        scope=scope,
        parent_id=game.parent_id,
    )
    new_state = perform(rules, ctx, state, step, command)
    if after is not None:
        after(ctx)
    summary = rules.summary(new_state)
    children = [_check_child(conn, child) for child in ctx.children]  # may refuse the step
    records = collect(
        step, ctx, new_state, summary, {name: row.due_at for name, row in pending.items()},
        FairMark(seed.epoch, seed.counter, tuple(seed.client_seeds), seed.revealed),
    )
    commit_effects(session, game, records, now, origin, players, pending)
    for draft, (child_rules, settings) in zip(ctx.children, children):
        open_game(
            session, child_rules, draft.game_id, now, players=draft.players, settings=settings,
            start=draft.start, channel=draft.channel or game.channel, parent_id=game.id,
            origin=f"{origin}:child:{draft.game_id}",
        )
    for index, player in enumerate(ctx.parent_actions if game.parent_id else []):
        # GH-6: an action in a match is an action in its Hall, in the same transaction.
        acted = ChildActed(game=game.id, player=player)
        try:
            run_step(session, game.parent_id, now, acted, origin=f"{origin}:acted:{index}")
        except Rejected as exc:
            raise ChildRefused(f"game {game.parent_id} refused an action in its child game "
                               f"{game.id}: {exc.what}") from exc
    if game.parent_id and summary.status == "finished" and game.status != "finished":
        _tell_parent(session, game.parent_id, game.id, summary, now, origin)
    # Deadlines changed: the game's own, or those of a game this step opened (a child's) or
    # stepped (the parent told of a child's action or end).
    told_parent = bool(game.parent_id and (ctx.parent_actions or summary.status == "finished"))
    moved = bool(records.deadlines or ctx.children or told_parent)
    return StepResult(summary, len(records.posts), moved)


class ChildRefused(RuntimeError):
    """A child game's ruleset or its parent refused what a step of the other asked, after
    the step's effects were staged: a fault of the rules, never a player's error. The
    whole transaction is rolled back and the message or deadline fails loudly."""


def _check_child(session: Executor, draft: ChildDraft) -> tuple[Rules, GameSettings]:
    """A child game a step opens, checked before the step writes anything: its ruleset and
    settings (raise :class:`Rejected` if it cannot be opened)."""
    try:
        rules = rules_for(draft.kind)
    except KeyError as exc:
        raise Rejected(str(exc.args[0])) from None
    if session.execute(Q.GAME_EXISTS, {"game_id": draft.game_id}).first() is not None:
        raise Rejected(f"a game {draft.game_id!r} already exists")
    try:
        settings = rules.Settings.model_validate(draft.settings)
    except ValidationError as exc:
        raise Rejected(f"the settings of {draft.kind} game {draft.game_id} are wrong: {exc}") from None
    return rules, settings


def _tell_parent(
    session: Session, parent_id: str, child_id: str, summary: Summary, now: datetime, origin: str
) -> None:
    """Run the parent's :meth:`~dealer.games.base.Rules.on_child_finished` as its own step,
    right after the child's finishing step and in the same transaction: the parent's
    rewards land with the match's end, or neither does."""
    heard = ChildFinished(game=child_id, status=summary.status, players=list(summary.players),
                          scores=summary.scores, winner=summary.winner, detail=summary.detail)
    try:
        run_step(session, parent_id, now, heard, origin=f"{origin}:parent")
    except Rejected as exc:
        raise ChildRefused(
            f"game {parent_id} refused the end of its child game {child_id}: {exc.what}"
        ) from exc


def open_game(
    session: Session,
    rules: Rules,
    game_id: str,
    now: datetime,
    *,
    players: list[str],
    settings: GameSettings,
    start: datetime,
    channel: str | None = None,
    parent_id: str | None = None,
    server_seed: str | None = None,
    origin: str | None = None,
) -> None:
    """Create game ``game_id`` (its row, channels and first fair-source epoch) and run its
    ruleset's :meth:`~dealer.games.base.Rules.start` as its first step.

    A top-level game owns its main channel and those its ruleset declares. A child game
    (``parent_id``) owns none: it posts in ``channel`` (its parent's by default) and is
    reached by ``game ID`` or as its players' game. Raises :class:`Rejected` if the rules
    refuse to start a top-level game; a child that refuses raises :class:`ChildRefused`.
    """
    main = channel or rules.default_channel
    session.execute(Q.INSERT_GAME, {
        "id": game_id, "kind": rules.kind, "status": "pending", "channel": main,
        "settings": settings.model_dump(mode="json"), "state": {}, "created_at": now,
        "updated_at": now, "next_event_seq": 1, "parent_id": parent_id,
    })
    if parent_id is None:
        Q.own_channels(session, game_id, [main, *rules.channels])
    session.execute(Q.INSERT_SEED.values(**new_seed_row(game_id, 0, server_seed)))
    try:
        run_step(
            session, game_id, now,
            GameCreated(players=players, settings=settings.model_dump(mode="json"), start=start),
            origin=origin or f"create:{game_id}", extra_players=players,
        )
    except Rejected as exc:
        if parent_id is None:
            raise
        raise ChildRefused(f"child game {game_id} of {parent_id} could not start: {exc.what}") from exc


def commit_effects(
    session: Session,
    game: Q.LockedGame,
    records: StepRecords,
    now: datetime,
    origin: str,
    players: list[str],
    pending: dict[str, PendingDeadline],
) -> None:
    """Write what one step produced (the caller's transaction commits it).

    Everything is written with Core statements (a step is on the daemon's hot path: a
    thousand games may share one deadline); a Game object loaded in the session is then
    told its new committed values, so the session stays consistent without a flush.
    """
    conn = session.connection()
    staged = session.info.get(_STAGED)
    sync_players(conn, game.id, players, records.players)
    if records.status != game.status or set(records.players) != set(players):
        session.info[_GAMES_VERSION] = games_version(session) + 1
    moved = apply_transfers(conn, records.transfers, now, game.id, staged=staged)
    write_deadlines(conn, game, records.deadlines, pending, owner=session)
    write_fair_source(conn, game, records.fair, now, staged=staged)
    first_seq = game.next_event_seq or 1
    events = [records.input, *((event.type, _event_data(event)) for event in records.history)]
    append_events(conn, game.id, first_seq, now, events, staged=staged)
    values = {
        "state": JsonText(records.new_state.model_dump_json()),
        "status": records.status,
        "updated_at": now,
        "next_event_seq": first_seq + len(events),
    }
    update = {"game_id": game.id, **{f"new_{k}": v for k, v in values.items()}}
    if not stage_step_write(session, game.id, Q.UPDATE_GAME, [update]):
        conn.execute(Q.UPDATE_GAME, update)
    if staged is not None and staged.kept is not None:
        staged.keep_step(game, records, players, moved, values)
    loaded = session.identity_map.get(identity_key(Game, game.id))
    if loaded is not None:  # keep a Game object the caller holds up to date
        for key, value in values.items():
            set_committed_value(loaded, key, records.state if key == "state" else value)
    queue_posts(conn, records.posts, now, game.id, origin, staged=staged)


def _event_data(event: HistoryEvent) -> Any:
    """An event's data as the store keeps it: pydantic's JSON text of it (a third of the
    cost of dumping it and encoding the dump), unless its class writes its data itself."""
    if type(event).data is HistoryEvent.data:
        return JsonText(event.model_dump_json(by_alias=True))
    return event.data()


def sync_players(session: Executor, game_id: str, before: list[str], after: list[str]) -> None:
    """Make ``game_players`` list exactly ``after`` (it listed ``before``)."""
    current = set(before)
    wanted = set(after)
    if wanted - current:
        session.execute(
            Q.INSERT_GAME_PLAYERS, [{"game_id": game_id, "player": name} for name in sorted(wanted - current)]
        )
    if current - wanted:
        session.execute(Q.remove_game_players(game_id, current - wanted))


def apply_transfers(
    session: Executor, transfers: list[L.Transfer], now: datetime, game_id: str | None,
    *, staged: StagedRows | None = None,
) -> dict[tuple[str, str], int]:
    """Record ledger entries and change balances by their net effect; return it, by
    ``(account, item)`` (the balances that changed).

    Balances change with ``amount = amount + delta`` in SQL, so two steps touching the
    same wallet never lose an update; the table's check constraint refuses a negative
    balance, which rolls the whole step back.
    """
    if not transfers:
        return {}
    deltas: dict[tuple[str, str], int] = defaultdict(int)
    for t in transfers:
        deltas[(t.source, t.item)] -= t.amount
        deltas[(t.target, t.item)] += t.amount
    _insert(
        session, Q.INSERT_LEDGER_ENTRIES,
        [
            {"at": now, "game_id": game_id, "source": t.source, "target": t.target,
             "item": t.item, "amount": t.amount, "memo": t.memo}
            for t in transfers
        ],
        staged,
    )
    changes = [{"a": account, "i": item, "d": delta}
               for (account, item), delta in sorted(deltas.items()) if delta]
    if not changes:
        return {}
    # Every balance in one statement, in sorted order (the order rows are locked in). It
    # changes fewer rows than asked only where an account gets its first of an item:
    # those rows are then created, one by one.
    if session.execute(Q.CHANGE_BALANCE, changes).rowcount < len(changes):
        for change in changes:
            if session.execute(Q.BALANCE, {"account": change["a"], "item": change["i"]}).first() is None:
                session.execute(Q.INSERT_HOLDING,
                                {"account": change["a"], "item": change["i"], "amount": change["d"]})
    return {key: delta for key, delta in deltas.items() if delta}


def append_event(session: Session, game: Game, at: datetime, event: HistoryEvent) -> None:
    """Append one event to the game's history (outside a step: overrides, admin)."""
    first = game.next_event_seq or 1
    game.next_event_seq = first + 1
    append_events(session, game.id, first, at, [event.stored()])


def append_events(
    session: Executor,
    game_id: str,
    first_seq: int,
    at: datetime,
    events: list[tuple[str, dict[str, Any] | JsonText]],
    *,
    staged: StagedRows | None = None,
) -> None:
    """Insert events numbered from ``first_seq`` into the game's history (``(type,
    data)``, the data as a dict or as its JSON text)."""
    if not events:
        return
    _insert(
        session, Q.INSERT_EVENTS,
        [
            {"game_id": game_id, "seq": first_seq + i, "at": at, "type": type_, "data": data}
            for i, (type_, data) in enumerate(events)
        ],
        staged,
    )


def write_deadlines(
    session: Executor,
    game: Q.LockedGame,
    changes: list[DeadlineChange],
    pending: dict[str, PendingDeadline],
    *,
    owner: Session | None = None,
) -> None:
    """Create, move or cancel the game's deadline rows as the step's records say (the new
    rows in one statement, or kept with a group's rows: :func:`stage_step_write` in
    ``owner``, the step's session)."""
    created = []
    for change in changes:
        if change.action == "cancelled":
            session.execute(Q.CANCEL_DEADLINE, {"deadline_id": pending[change.name].id})
        elif change.action == "moved":
            session.execute(Q.MOVE_DEADLINE, {"deadline_id": pending[change.name].id, "when": change.due_at})
        else:
            created.append(change)
    if created:
        paused = game.paused  # read with the game's row (Q.LOCK_GAME): no query of its own
        rows = [
            {"game_id": game.id, "name": change.name, "due_at": change.due_at,
             "set_due_at": change.due_at, "status": "pending", "paused": paused}
            for change in created
        ]
        if owner is None or not stage_step_write(owner, game.id, Q.INSERT_DEADLINE, rows):
            session.execute(Q.INSERT_DEADLINE, rows)


def write_fair_source(
    session: Executor, game: Q.LockedGame, fair: FairChanges, now: datetime,
    *, staged: StagedRows | None = None,
) -> None:
    """Persist the fair source: its draws, counter and client seeds, rotations and reveals."""
    if fair.draws:
        _insert(
            session, Q.INSERT_DRAWS,
            [
                {"game_id": game.id, "epoch": d.epoch, "counter": d.counter, "n": d.n,
                 "result": d.result, "client": d.client, "purpose": d.purpose[:120]}
                for d in fair.draws
            ],
            staged,
        )

    def epoch_row(epoch: int):  # type: ignore[no-untyped-def]
        return Q.update_epoch(game.id, epoch)

    for epoch, _server_seed, counter in fair.retired:
        session.execute(epoch_row(epoch).values(revealed_at=now, counter=counter))
    if fair.new_epoch is not None:
        row = new_seed_row(game.id, fair.new_epoch.epoch, fair.new_epoch.server_seed)
        row.update(client_seeds=list(fair.new_epoch.client_seeds), counter=fair.new_epoch.counter)
        session.execute(Q.INSERT_SEED.values(**row))
    elif fair.current is not None:
        epoch, counter, client_seeds = fair.current
        session.execute(epoch_row(epoch).values(counter=counter, client_seeds=client_seeds))
    if fair.reveal is not None:
        session.execute(epoch_row(fair.reveal).values(revealed_at=now))


def queue_posts(
    session: Executor, drafts: list[PostDraft], now: datetime, game_id: str | None, origin: str,
    *, staged: StagedRows | None = None,
) -> None:
    """Render each draft and queue it in the outbox (exactly once per origin and index)."""
    if not drafts:
        return
    _insert(
        session, Q.INSERT_POSTS,
        [
            {
                "key": f"{origin}:{index}",
                "game_id": game_id,
                "channel": draft.channel,
                "recipient": draft.recipient,
                "kind": draft.kind,
                # Subjects can quote player text (an error quotes the line): escape them too.
                "subject": escape_post(draft.subject),
                "body": render_post(draft, now, game_id),
                "created_at": now,
                "status": "pending",
                "attempts": 0,
                "stale_after": draft.stale_after,
                "ref": draft.ref,
                "mentions": list(draft.mentions) or None,
            }
            for index, draft in enumerate(drafts)
        ],
        staged,
    )
