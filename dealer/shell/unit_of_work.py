"""One unit of work: what the steps of one transaction stage, keep and write, and when
(docs/HOT_PATH.md says what each earns; tests/integration/test_unit_of_work.py holds the
invariants).

Outside a group (:func:`of`) each row is written at once and nothing is kept. A group
(:func:`group`) stages appended rows until the group's end or a read of such a table,
stages a step's own writes until a read of that game, and keeps the games it locked: the
group holds the step lock alone and the game's row lock, so only its own steps change a
kept game, and each step follows it or drops it. A failed group is rolled back whole,
its unit of work with it.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Iterable, Iterator

from sqlalchemy import Insert, Update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.records import StepRecords
from dealer.store import queries as Q
from dealer.store.direct import Direct, committed_at_once, direct

Statement = Insert | Update

CHECK_KEPT = False
"""Tests set it: every use of a kept game also reads it afresh and compares (:class:`KeptGameDiffers`)."""

_KEY = "dealer.unit_of_work"
"""The key of a session's unit of work in ``Session.info``."""


class StaleRows(RuntimeError):
    """A staged fired mark changed fewer rows than staged; the group is fired again with savepoints."""


class KeptGameDiffers(BaseException):
    """A kept game differs from a fresh read: a bug, so no ``Exception`` (no group falls back over it)."""


class StagedRows:
    """Rows staged by statement, in the order first staged, and how they are written."""

    def __init__(self) -> None:
        self.rows: dict[Statement, list[dict[str, Any]]] = {}
        self.counted: set[Statement] = set()
        """Updates each of whose rows must change one row (fired marks)."""

    def add(self, statement: Statement, rows: list[dict[str, Any]]) -> None:
        """Stage ``rows`` for ``statement``."""
        self.rows.setdefault(statement, []).extend(rows)

    def write(self, connection: Connection, *, only: set[Statement] | None = None) -> None:
        """Write the staged rows (``only`` these statements) in the order first staged; a counted
        update raises :class:`StaleRows` if it changed fewer rows than staged."""
        for statement in list(self.rows):
            if only is not None and statement not in only:
                continue
            rows = self.rows.pop(statement)
            changed = direct(statement).execute(connection, rows)
            if statement in self.counted and changed != len(rows):
                raise StaleRows(f"{len(rows) - changed} of {len(rows)} rows kept for "
                                f"{statement.table} no longer stand as they were read")


def lock_game(connection: Connection, game_id: str) -> Q.LockedGame:
    """The game's row, locked, with what a step reads beside it; read again if the lock waited
    (Postgres read the epoch, pause and deadlines as they stood before the other commit)."""
    game = Q.LockedGame._make(connection.execute(Q.LOCK_GAME, {"id": game_id}).one())
    if game.seen_seq != game.next_event_seq:
        game = Q.LockedGame._make(connection.execute(Q.LOCK_GAME, {"id": game_id}).one())
    return game


@dataclass
class KeptGame:
    """What a step reads of its game (:data:`Q.LOCK_GAME`)."""

    row: Q.LockedGame
    balances: Q.LockedBalances
    pending: list[tuple[int, str, datetime, bool, str | None]]
    accounts: frozenset[str]
    """The members', house, void and pool accounts, in both scopes the read looks in."""

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
    """What the steps of one transaction stage and keep: :func:`of` or :func:`group`."""

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
        """A step's own write: staged (None), or written now (the rows it changed) when own writes
        are not staged or a step of the group already wrote the mark's game."""
        if not self.own_writes or (firing is not None and game_id in self.games):
            return self.session.connection().execute(statement, rows).rowcount
        if firing is not None:
            self.staged.counted.add(statement)
        self.games[game_id] = firing if game_id not in self.games else None
        self.own_statements.add(statement)
        self.staged.add(statement, rows)
        return None

    def write(self, *, own_only: bool = False) -> None:
        """Write the staged rows; with ``own_only`` only the steps' own writes."""
        self.staged.write(self.session.connection(),
                          only=self.own_statements if own_only else None)
        self.games.clear()

    def before_reading_appended(self) -> None:
        """Before a read of the outbox, the history or an outcome: write every staged row."""
        if self.staged.rows:
            self.write()

    def before_reading(self, game_ids: Iterable[str] | None = None, *,
                       firing: int | None = None) -> None:
        """Before a read of these games' rows or deadlines (None: any game), write their own
        writes, unless all that is staged is the mark of the deadline being fired."""
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
        """The game as a step reads it: kept, or locked, read and kept without ``firing`` pending."""
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

    def lock_games(self, game_ids: Iterable[str]) -> None:
        """Lock, read and keep these games in one statement (:meth:`read_locked`)."""
        if self.kept is None:
            return
        wanted = sorted(set(game_ids) - self.kept.keys())
        if not wanted:
            return
        self.before_reading(wanted)
        self.read_locked(direct(Q.lock_games(len(wanted))), {f"g{i}": game_id for i, game_id in enumerate(wanted)})

    def read_locked(self, statement: Direct, values: dict[str, Any], at: int = 0) -> list[tuple[Any, ...]]:
        """The rows of ``statement``, which locks games and reads each as :data:`Q.LOCK_GAME` does
        in its columns from ``at`` on (None: no game), run again if it waited for a lock (see
        :func:`lock_game`); the games it read are kept, unless kept already."""
        connection = self.session.connection()
        for _ in range(2):
            rows = statement.rows(connection, values)
            games = [Q.LockedGame._make(row[at:]) for row in rows if row[at] is not None]
            if all(game.seen_seq == game.next_event_seq for game in games):
                break
        if self.kept is not None:
            self.kept.update((game.id, KeptGame.read(game)) for game in games if game.id not in self.kept)
        return rows

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
        """Follow a step's ``records`` in the kept games (currencies, its game's row), or drop its
        game where the step changed what is not followed."""
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
    """The unit of work of ``session``'s transaction: its group's, else one that writes at once."""
    unit = session.info.get(_KEY)
    if unit is None:
        unit = session.info[_KEY] = UnitOfWork(session)
    return unit


@contextmanager
def group(session: Session, *, own_writes: bool = False, keep_games: bool = False,
          commit: bool = False) -> Iterator[UnitOfWork]:
    """Stage the block's appended rows (``own_writes``: its own writes, ``keep_games``: keep its
    games) and write them at its end; with ``commit`` (a block ending its transaction) and no
    counted update, on Postgres in one round trip with the ``COMMIT`` (:func:`committed_at_once`).

    Only for steps rolled back together (a savepoint would leave rows staged); ``own_writes``
    needs every read of a game through :meth:`UnitOfWork.before_reading`; ``keep_games`` the
    step lock held alone."""
    previous = session.info.get(_KEY)
    unit = UnitOfWork(session, staging=True, own_writes=own_writes, keep_games=keep_games,
                      games_version=previous.games_version if previous is not None else 0)
    session.info[_KEY] = unit
    try:
        yield unit
        commit = commit and not unit.staged.counted
        if commit:
            session.flush()  # nothing of the transaction left for the session's commit
        with committed_at_once(session.connection()) if commit else nullcontext():
            unit.write()
    finally:
        if previous is None:
            session.info.pop(_KEY, None)
        else:
            previous.games_version = unit.games_version
            session.info[_KEY] = previous
