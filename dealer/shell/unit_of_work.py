"""One unit of work: what the steps of one transaction stage, keep and write, and when.

Every transaction that runs steps has one :class:`UnitOfWork` (:func:`of`). Outside a
group it writes each row at once and keeps nothing. A group of steps sharing one
transaction (a group of messages; a group of deadlines fired without savepoints) opens
one with :func:`group`, which stages and keeps:

- **Appended rows** (:meth:`UnitOfWork.add`: history events, ledger entries, fair
  draws, posts, a message's outcome): staged, and written together in the order first
  staged, one ``executemany`` per statement, at the group's end or before anything reads
  such a table during the group (:meth:`UnitOfWork.before_reading_appended`).
- **A step's own writes** (:meth:`UnitOfWork.own`: a game's new row, its new deadline
  rows, a deadline's fired mark), with ``own_writes``: staged too, and written before
  any read of that game's row or deadlines (:meth:`UnitOfWork.before_reading`). A fired
  mark staged must change its row when written, or the group fails
  (:class:`StaleRows`); one whose game a step of the group already wrote is written at
  once, its row count telling whether the deadline still stands.
- **Kept games** (:class:`KeptGame`), with ``keep_games``: a game a step locked and
  read, as the group's steps left it, so that a later step of the group does not lock
  and read it again. It is what a fresh read would return: the group holds the step lock
  alone and the game's row lock, so only its own steps change the game, and each step
  updates it (:meth:`UnitOfWork.follow`) or drops it where it changed what is not
  followed (deadlines, players, the fair source's epoch).
- **Who plays where** (:attr:`UnitOfWork.games_version`): counts the steps that changed
  who plays in a game or a game's status; routing's reads of the senders' games stand
  while it does not change (:mod:`dealer.shell.routing`).

Each of these is kept because a benchmark showed it pays for itself (more than 10 %):
staging, on ``bench/ingest.py`` and ``bench/deadlines.py`` (half the throughput without
it); kept games, on both (a third more of the client's CPU without them); own writes, on
``bench/deadlines.py`` (a fifth more CPU); routing's kept reads, on ``bench/ingest.py``.

A group is rolled back whole when one of its steps fails, and its unit of work with it:
nothing staged or kept outlives the block. On Postgres the staged rows go without waiting
for each other's results (:func:`dealer.store.db.pipelined`), and with ``commit`` the
transaction's ``COMMIT`` goes in their round trip.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Iterable, Iterator

from sqlalchemy import Insert, Update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.records import StepRecords
from dealer.store import queries as Q
from dealer.store.db import pipelined
from dealer.store.direct import direct

Statement = Insert | Update

CHECK_KEPT = False
"""Whether every use of a kept game also reads the game afresh and raises
:class:`KeptGameDiffers` if the two differ in anything a step uses (tests set it)."""

_KEY = "dealer.unit_of_work"
"""The key of a session's unit of work in ``Session.info``."""


class StaleRows(RuntimeError):
    """A staged fired mark changed fewer rows than staged: a deadline changed since it was
    read in the same transaction. Never expected; the group is fired again with a
    savepoint per deadline, which writes each mark at once."""


class KeptGameDiffers(BaseException):
    """A kept game differs from a fresh read of it (:data:`CHECK_KEPT`): a bug. Not an
    ``Exception``, so that no group falls back to one step at a time over it."""


class StagedRows:
    """Rows staged by statement, in the order first staged, and how they are written."""

    def __init__(self) -> None:
        self.rows: dict[Statement, list[dict[str, Any]]] = {}
        self.counted: set[Statement] = set()
        """Updates each of whose rows must change one row (fired marks)."""

    def add(self, statement: Statement, rows: list[dict[str, Any]]) -> None:
        """Stage ``rows`` for ``statement``."""
        self.rows.setdefault(statement, []).extend(rows)

    def write(self, connection: Connection, *, only: set[Statement] | None = None,
              commit: bool = False) -> None:
        """Write the staged rows (with ``only``, those of these statements), statement by
        statement in the order first staged. A counted update goes alone and raises
        :class:`StaleRows` if it changed fewer rows than staged; the others go together in
        one round trip on Postgres (:func:`~dealer.store.db.pipelined`), with the
        ``COMMIT`` if ``commit``."""
        waiting: list[Statement] = []
        for statement in list(self.rows):
            if only is not None and statement not in only:
                continue
            if statement not in self.counted:
                waiting.append(statement)
                continue
            self._write_all(connection, waiting)
            waiting = []
            rows = self.rows.pop(statement)
            changed = direct(statement).execute(connection, rows)
            if changed != len(rows):
                raise StaleRows(f"{len(rows) - changed} of {len(rows)} rows kept for "
                                f"{statement.table} no longer stand as they were read")
        self._write_all(connection, waiting, commit)

    def _write_all(self, connection: Connection, statements: list[Statement],
                   commit: bool = False) -> None:
        if len(statements) == 1 and not commit:
            direct(statements[0]).execute(connection, self.rows.pop(statements[0]))
        elif statements or commit:
            with pipelined(connection, commit=commit):
                for statement in statements:
                    direct(statement).execute(connection, self.rows.pop(statement))


def lock_game(connection: Connection, game_id: str) -> Q.LockedGame:
    """The game's row, locked, with what a step reads beside it (:data:`Q.LOCK_GAME`).

    If the statement waited for another transaction's lock on the row (Postgres), it read
    the epoch, the pause and the pending deadlines as they stood before that transaction
    committed: it is run again, now that the row is this transaction's (no wait)."""
    game = Q.LockedGame._make(connection.execute(Q.LOCK_GAME, {"id": game_id}).one())
    if game.seen_seq != game.next_event_seq:
        game = Q.LockedGame._make(connection.execute(Q.LOCK_GAME, {"id": game_id}).one())
    return game


@dataclass
class KeptGame:
    """What a step reads of its game (:data:`Q.LOCK_GAME`): its row, the currencies of
    its accounts and its pending deadlines."""

    row: Q.LockedGame
    balances: Q.LockedBalances
    pending: list[tuple[int, str, datetime, bool, str | None]]
    accounts: frozenset[str]
    """The accounts whose currencies the read covers: the members', the house, the void
    and the game's pool, in both scopes it looks in."""

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


class UnitOfWork:
    """What the steps of one transaction stage and keep (see the module's doc). Made by
    :func:`of` (writing at once) or :func:`group` (staging)."""

    def __init__(self, session: Session, *, staging: bool = False, own_writes: bool = False,
                 keep_games: bool = False, games_version: int = 0) -> None:
        self.session = session
        self.staging = staging
        self.own_writes = own_writes
        self.staged = StagedRows()
        self.own_statements: set[Statement] = set()
        """The statements of the steps' own writes."""
        self.games: dict[str, int | None] = {}
        """The games with own writes staged: the id of the deadline whose fired mark alone
        is staged for the game, or None once anything else of it is."""
        self.kept: dict[str, KeptGame] | None = {} if keep_games else None
        self.games_version = games_version

    # -- staging and writing --------------------------------------------------------------

    def add(self, statement: Statement, rows: list[dict[str, Any]]) -> None:
        """Append ``rows`` with ``statement`` (rows no step of the group reads back)."""
        if not rows:
            return
        if self.staging:
            self.staged.add(statement, rows)
        else:
            self.session.connection().execute(statement, rows)

    def own(self, game_id: str, statement: Statement, rows: list[dict[str, Any]], *,
            firing: int | None = None) -> int | None:
        """A step's own write of game ``game_id`` (with ``firing``, the fired mark of that
        deadline): staged (None), or written now (the rows it changed) outside a group
        that stages own writes, and for a mark whose game a step of the group wrote."""
        if not self.own_writes or (firing is not None and game_id in self.games):
            return self.session.connection().execute(statement, rows).rowcount
        if firing is not None:
            self.staged.counted.add(statement)
        self.games[game_id] = firing if game_id not in self.games else None
        self.own_statements.add(statement)
        self.staged.add(statement, rows)
        return None

    def write(self, *, own_only: bool = False, commit: bool = False) -> None:
        """Write the staged rows (:meth:`StagedRows.write`); with ``own_only`` only the
        steps' own writes."""
        self.staged.write(self.session.connection(),
                          only=self.own_statements if own_only else None, commit=commit)
        self.games.clear()

    def before_reading_appended(self) -> None:
        """Before a read of what the group may have appended (the outbox, the history, a
        message's outcome): write every staged row."""
        if self.staged.rows:
            self.write()

    def before_reading(self, game_ids: Iterable[str] | None = None, *,
                       firing: int | None = None) -> None:
        """Before a read of games ``game_ids``' rows or deadlines (None: of any game, found
        by player, channel or due time): write the own writes staged for them, unless
        all that is staged of the one game read is the fired mark of ``firing`` (the
        deadline its step fires, which the step leaves out of its pending deadlines)."""
        if not self.games:
            return
        if game_ids is not None:
            wanted = [game_id for game_id in game_ids if game_id in self.games]
            if not wanted or (firing is not None and len(wanted) == 1
                              and self.games[wanted[0]] == firing):
                return
        self.write(own_only=True)

    # -- kept games -----------------------------------------------------------------------

    def game(self, game_id: str, firing: int | None = None) -> KeptGame:
        """Game ``game_id`` as a step reads it: kept, or locked and read now (kept for the
        group's later steps, with ``firing``, the deadline this step fires, no longer
        pending in it)."""
        kept = self.kept
        if kept is not None and game_id in kept:
            if CHECK_KEPT:
                self._check(game_id, firing)
            read = kept[game_id]
        else:
            self.before_reading([game_id], firing=firing)
            # The row's lock: two daemons on one Postgres never step a game at once.
            read = KeptGame.read(lock_game(self.session.connection(), game_id))
        if kept is not None:
            kept[game_id] = read = read.without(firing)
        return read

    def _check(self, game_id: str, firing: int | None) -> None:
        self.before_reading([game_id], firing=firing)
        fresh = KeptGame.read(lock_game(self.session.connection(), game_id)).without(firing)
        kept = self.kept[game_id].without(firing)  # type: ignore[index]
        if not kept.same_as(fresh):
            raise KeptGameDiffers(f"game {game_id}: kept {kept!r}, read {fresh!r}")

    @property
    def keeps_games(self) -> bool:
        """Whether this unit keeps the games its steps lock."""
        return self.kept is not None

    def lock_games(self, game_ids: Iterable[str]) -> None:
        """Lock and read games ``game_ids`` in one statement and keep them (those kept
        already aside); as :func:`lock_game`, run again if it waited for a lock."""
        if self.kept is None:
            return
        wanted = sorted(set(game_ids) - self.kept.keys())
        if not wanted:
            return
        self.before_reading(wanted)
        connection = self.session.connection()
        params = {f"g{i}": game_id for i, game_id in enumerate(wanted)}
        statement = Q.lock_games(len(wanted))
        rows = [Q.LockedGame._make(row) for row in connection.execute(statement, params)]
        if any(row.seen_seq != row.next_event_seq for row in rows):
            rows = [Q.LockedGame._make(row) for row in connection.execute(statement, params)]
        self.keep(rows)

    def keep(self, rows: Iterable[Q.LockedGame]) -> None:
        """Keep games another statement locked and read (:data:`Q.LOCK_GAME`'s columns,
        the wait for another transaction's lock handled); those kept already stay."""
        if self.kept is None:
            return
        for row in rows:
            if row.id not in self.kept:
                self.kept[row.id] = KeptGame.read(row)

    def kept_row(self, game_id: str) -> Q.LockedGame | None:
        """Game ``game_id``'s row as the group's steps left it, or None if not kept."""
        if self.kept is None or game_id not in self.kept:
            return None
        row = self.kept[game_id].row
        if CHECK_KEPT:
            self.before_reading([game_id])
            fresh = Q.game_state_row(self.session, game_id)
            if (fresh.kind, fresh.state) != (row.kind, row.state):
                raise KeptGameDiffers(f"game {game_id}: kept state {row.state!r}, read {fresh.state!r}")
        return row

    def follow(self, game: Q.LockedGame, records: StepRecords, players: list[str],
               moved: dict[tuple[str, str], int], values: dict[str, Any]) -> None:
        """After a step of ``game`` (read with ``players``) wrote ``records``: the
        currencies it ``moved`` in every kept game that read them, its game's new row
        ``values``; or its game dropped where the step changed what is not followed."""
        if records.status != game.status or set(records.players) != set(players):
            self.games_version += 1
        kept = self.kept
        if kept is None:
            return
        for key, delta in moved.items():
            if key[1] in Q.CURRENCIES:
                for each in kept.values():
                    if key[0] in each.accounts:
                        each.balances.amounts[key] = each.balances.amounts.get(key, 0) + delta
        own = kept.get(game.id)
        if own is None:
            return
        fair = records.fair
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


def of(session: Session) -> UnitOfWork:
    """The unit of work of ``session``'s transaction: its group's, else one that writes
    at once and keeps nothing."""
    unit = session.info.get(_KEY)
    if unit is None:
        unit = session.info[_KEY] = UnitOfWork(session)
    return unit


@contextmanager
def group(session: Session, *, own_writes: bool = False, keep_games: bool = False,
          commit: bool = False) -> Iterator[UnitOfWork]:
    """A unit of work that stages the appended rows of the block's steps and writes them
    at its end, in its transaction; with ``own_writes`` the steps' own writes too, with
    ``keep_games`` the games they lock (see the module's doc).

    Only for steps rolled back together: a step rolled back alone to a savepoint would
    leave its rows staged. ``own_writes`` needs every read of a game's row or deadlines
    in the block to go through :meth:`UnitOfWork.before_reading`; ``keep_games`` a block
    whose transaction holds the step lock alone and whose refused steps write nothing.
    With ``commit`` (Postgres) the transaction commits with the last writes: only for a
    block that ends its transaction."""
    previous = session.info.get(_KEY)
    unit = UnitOfWork(session, staging=True, own_writes=own_writes, keep_games=keep_games,
                      games_version=previous.games_version if previous is not None else 0)
    session.info[_KEY] = unit
    try:
        yield unit
        unit.write(commit=commit)
    finally:
        if previous is None:
            session.info.pop(_KEY, None)
        else:
            previous.games_version = unit.games_version
            session.info[_KEY] = previous
