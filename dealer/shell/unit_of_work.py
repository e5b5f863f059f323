"""What a group of steps stages and keeps in its one transaction.

A group of messages, or of deadlines fired without savepoints, runs its steps in one
transaction: the rows its steps append (history events, ledger entries, draws, posts,
replies, outcomes) are staged and written together before it commits
(:class:`StagedRows`); so are the steps' own writes of their games (new states, new
deadline rows, fired marks) where the group keeps them; and a game a step locked is kept as
the group's steps left it, so that a later step of the group does not read it again
(:class:`KeptGame`).
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


def read_parents(session: Session) -> None:
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


def games_changed(session: Session) -> None:
    """Count a step that changed who plays in a game or a game's status (:func:`games_version`)."""
    session.info[_GAMES_VERSION] = games_version(session) + 1


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


def locked_game(session: Session, conn: Connection, game_id: str, firing: int | None) -> KeptGame:
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
