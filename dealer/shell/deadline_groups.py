"""Due deadlines fired in one transaction, a group of several games at once; fired again
with a savepoint each when a step of the group crashes or finds its game held.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from dealer import logs
from dealer.games import rules_for
from dealer.history import DeadlineFired
from dealer.metrics import METRICS
from dealer.shell.failures import describe
from dealer.shell.faults import fault
from dealer.shell.report import Daemon, PassReport, stays_pending
from dealer.shell.steps import GameHeld, run_step
from dealer.shell import unit_of_work
from dealer.store import queries as Q
from dealer.store.models import Deadline
from dealer.store.transient import is_transient

log = logging.getLogger(__name__)


def _deadline_input(session: Session, game_id: str, kind: str, name: str, due: datetime) -> DeadlineFired:
    """A deadline's step input, with what the ruleset reads from the inbox for it (GH-34)."""
    since = rules_for(kind).message_window(name)
    if since is None:
        return DeadlineFired(deadline=name)
    return DeadlineFired(deadline=name, first_messages=Q.first_messages(session, game_id, since, due))


@dataclass
class _Crash:
    """A deadline of a group whose step crashed (its savepoint rolled back)."""

    deadline_id: int
    name: str | None
    game_id: str | None
    due: datetime | None
    exc: BaseException


class _Redo(Exception):
    """A step of a group without savepoints went wrong: fire the group again with savepoints."""


@logs.scoped
def fire_deadlines(dealer: Daemon, group: list[tuple[int, datetime, str]],
                   report: PassReport | None = None) -> set[int]:
    """Fire due deadlines of distinct games in one transaction; return those that did not fire.

    The group goes first without savepoints (two round trips fewer a deadline); a crash or a
    held game sends it again with a savepoint each, so that deadline alone stays pending,
    with its error kept, and holds its game."""
    report = report if report is not None else PassReport()
    try:
        try:
            outcome = _fire_group(dealer, group, savepoints=False)
        except _Redo:
            outcome = _fire_group(dealer, group, savepoints=True)
    except Exception as exc:
        if is_transient(exc):
            stays_pending("deadlines", [deadline_id for deadline_id, _, _ in group], exc)
        raise
    missed, fired, crashes, held = outcome
    report.deadlines += len(fired)
    report.held += held
    for name, game_id, due, fired_at, previous in fired:
        METRICS.deadline_fired((fired_at - due).total_seconds())
        if previous is not None:
            log.warning("deadline %s of game %s fired at last; the game goes on", name, game_id)
    fault("after-deadline-commit")
    for crash in crashes:
        with logs.context(game_id=crash.game_id, deadline=crash.name):
            _deadline_crashed(dealer, crash.deadline_id, crash.name, crash.game_id, crash.due,
                              crash.exc, report)
    return missed


def _fire_group(
    dealer: Daemon, group: list[tuple[int, datetime, str]], *, savepoints: bool
) -> tuple[set[int], list[tuple[str, str, datetime, datetime, str | None]], list[_Crash], int]:
    """One transaction of :func:`fire_deadlines`: ``(missed, fired, crashes, held)``."""
    missed: set[int] = set()
    fired: list[tuple[str, str, datetime, datetime, str | None]] = []
    crashes: list[_Crash] = []
    held = 0
    ids = [deadline_id for deadline_id, _, _ in group]
    with dealer.sessions.begin() as session:
        # The lock takes the step lock first: alone for several games, shared for one.
        lock = Q.LOCK_DEADLINES if len(group) > 1 else Q.LOCK_DEADLINE
        locked = {row.id: row for row in map(
            Q.LockedDeadline._make, session.connection().execute(lock, {"ids": ids}))}
        # Without savepoints every step stands or falls with the group (unit_of_work.group);
        # a group of several games holds the step lock alone, so it keeps its games.
        try:
            keep = len(group) > 1
            with contextlib.nullcontext() if savepoints else unit_of_work.group(
                    session, own_writes=True, keep_games=keep) as unit:
                if unit is not None:
                    unit.lock_games([row.game_id for row in locked.values()])
                for deadline_id, _, _ in group:
                    row = locked.get(deadline_id)
                    if row is None:
                        missed.add(deadline_id)  # fired, cancelled, paused, or another daemon's
                        continue
                    logs.bind(game_id=row.game_id, deadline=row.name)
                    try:
                        with session.begin_nested() if savepoints else contextlib.nullcontext():
                            fired_at = _fire(dealer, session, row)
                        if fired_at is not None:
                            fired.append((row.name, row.game_id, row.due_at, fired_at, row.error))
                    except GameHeld as exc:
                        if not savepoints:
                            raise _Redo() from exc
                        log.info("deadline %s waits, pending: %s", deadline_id, exc)
                        held += 1
                        missed.add(deadline_id)
                    except Exception as exc:
                        if is_transient(exc):
                            raise
                        if not savepoints:
                            raise _Redo() from exc
                        crashes.append(_Crash(deadline_id, row.name, row.game_id, row.due_at, exc))
                        missed.add(deadline_id)
                    finally:
                        logs.bind(game_id=None, deadline=None)
                fault("before-deadline-commit")
        except Exception as exc:
            if savepoints or is_transient(exc) or isinstance(exc, _Redo):
                raise
            raise _Redo() from exc
    return missed, fired, crashes, held


def _fire(dealer: Daemon, session: Session, row: Q.LockedDeadline) -> datetime | None:
    """Mark a locked deadline fired and run its step; return when it fired, or None if it changed."""
    fired_at = dealer.clock()
    mark = {"deadline_id": row.id, "due": row.due_at, "new_fired_at": fired_at}
    # In a group the mark is staged with the group's rows, unless an earlier step of the
    # group stepped this game (a child's end stepping its parent) and may have cancelled,
    # paused or moved it: it is written now, and its row count says whether it still
    # stands (the next read of the due deadlines sees it as it now stands).
    if unit_of_work.of(session).own(row.game_id, Q.MARK_FIRED, [mark], firing=row.id) == 0:
        return None
    run_step(session, row.game_id, row.due_at,
             _deadline_input(session, row.game_id, row.kind, row.name, row.due_at),
             origin=f"deadline:{row.id}", firing=row.id)
    return fired_at


def _deadline_crashed(dealer: Daemon, deadline_id: int, name: str | None, game_id: str | None,
                      due: datetime | None, exc: BaseException, report: PassReport | None) -> None:
    """Keep a crashed step's error on its deadline's row, count it and log it."""
    error = describe(exc)
    if report is not None:
        report.failed_deadlines.append(f"{game_id}:{name}" if name else f"deadline {deadline_id}")
    try:
        previous = deadline_failed(dealer, deadline_id, error)
    except Exception:
        log.exception("the error of deadline %s could not be stored", deadline_id)
        previous = None
    if previous == error:
        # Retried on every pass: its traceback was logged when it first failed.
        log.error("deadline %s of game %s still cannot be fired: %s", name, game_id, error)
    else:
        log.error(
            "deadline %s of game %s (due %s) could NOT be fired (%s); it stays pending, "
            "holds its game and is retried on every pass", name, game_id, due, error,
            exc_info=exc,
        )


def deadline_failed(dealer: Daemon, deadline_id: int, error: str) -> str | None:
    """Keep ``error`` on a pending deadline's row; return the error it had before."""
    with dealer.sessions.begin() as session:
        deadline = session.get(Deadline, deadline_id, with_for_update=True)
        if deadline is None or deadline.status != "pending":
            return None
        previous, deadline.error = deadline.error, error
        return previous
