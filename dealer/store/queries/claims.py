"""What a pass claims for its steps, and the messages it stores: the step lock, what is
due, their claim, a message's insert and its outcome."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Sequence

from sqlalchemy import (
    Row, String, bindparam, func, literal_column, null, select, union_all, update,
)
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.store.direct import Direct
from dealer.store.models import Deadline, Game, Inbound
from dealer.store.queries.sql import postgres_first, row_type, unindexed

_games = Game.__table__
_deadlines = Deadline.__table__
_inbound = Inbound.__table__


# -- the step lock ------------------------------------------------------------------------

STEP_LOCK_KEY = 0x6465616C
"""The Postgres advisory lock that orders steps of several daemons (see :class:`_step_lock`)."""


class _step_lock(postgres_first):
    """A true condition taking the step lock on Postgres before the statement locks any row, at
    no round trip of its own: alone for a group of steps, shared for a single step.

    A single step locks its game, then its balances in sorted order, so single steps never
    wait in a cycle; a group locks rows step after step across games and shared wallets, so
    two groups (or a group and a step) on two daemons could deadlock: groups exclude each
    other and single steps. SQLite needs nothing (one writer). The snapshot predates the
    wait, but ``FOR UPDATE`` re-checks the locked rows, and a claim reads nothing else a step
    changes (``tests/integration/test_step_lock.py``).
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


# -- deadlines due ------------------------------------------------------------------------

def next_due_deadline(connection: Connection, now: datetime,
                      skipped: set[int]) -> tuple[int, datetime] | None:
    """The earliest pending, unpaused deadline due by ``now`` not in ``skipped``: (id, time)."""
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
"""Take the step lock alone, then lock a group's deadlines still pending and unpaused,
passing over another daemon's (``SKIP LOCKED``), with their game's kind."""

LockedDeadline = row_type("LockedDeadline", _LOCK_DEADLINES)
"""A row of :data:`LOCK_DEADLINES` or :data:`LOCK_DEADLINE`."""

LOCK_DEADLINE = _LOCK_DEADLINES.where(step_lock_shared())
""":data:`LOCK_DEADLINES` for a single step, sharing the step lock."""

MARK_FIRED = (
    update(_deadlines)
    .where(_deadlines.c.id == bindparam("deadline_id"), _deadlines.c.status == "pending",
           _deadlines.c.paused.is_(False), _deadlines.c.due_at == bindparam("due"))
    .values(status="fired", fired_at=bindparam("new_fired_at"), error=None)
)
"""Mark a locked deadline fired if it still stands as locked (an earlier step of the same
transaction may have changed it); the row count says whether it fired."""

def overdue_deadlines(connection: Connection | Session, before: datetime) -> Sequence[Row[Any]]:
    """Pending, unpaused deadlines due before ``before``, earliest first: what should have fired."""
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
    """``(id, due_at)`` of the earliest pending, unpaused deadline due after ``after`` (one index read)."""
    return connection.execute(_NEXT_TIMER, {"after": after}).first()


# -- inbound messages: stored, then claimed ------------------------------------------------


@lru_cache(maxsize=None)
def insert_message(dialect: str, flush: bool = True):  # type: ignore[no-untyped-def]
    """INSERT a message unless its (source, external id) is stored; RETURNING its id. Without
    ``flush``, on Postgres, its transaction's commit does not wait for the disk (ingest says
    when that may be). Built once per dialect and ``flush``."""
    insert = postgres_insert if dialect == "postgresql" else sqlite_insert
    returned = [_inbound.c.id]
    if dialect == "postgresql" and not flush:
        returned.append(func.set_config("synchronous_commit", "off", True))
    return (
        insert(_inbound)
        .on_conflict_do_nothing(index_elements=["source", "external_id"])
        .returning(*returned)
    )


FLUSH_COMMITTED = select(func.txid_current())
"""Gives the transaction an id, so its commit waits for the flush and makes every earlier
commit durable too (Postgres)."""

INSERT_MESSAGE = _inbound.insert()

CLAIM_MESSAGE = (
    select(
        _inbound.c.id, _inbound.c.sender, _inbound.c.channel, _inbound.c.game_hint,
        _inbound.c.kind, _inbound.c.body, _inbound.c.sent_at, _inbound.c.source,
        _inbound.c.external_id, _inbound.c.target, _inbound.c.emoji, _inbound.c.removed,
    )
    .where(_inbound.c.id == bindparam("id"), _inbound.c.status == "pending", step_lock_shared())
    .with_for_update(skip_locked=True)
)
"""A pending message locked for a single step (step lock shared); no row if another daemon has it."""

@lru_cache(maxsize=64)
def claim_messages(count: int) -> Direct:
    """Lock the pending ones of ``count`` messages (``m0``, ``m1``, ...) once the step lock is
    taken alone: one statement per group size."""
    return Direct(
        select(*CLAIM_MESSAGE.selected_columns)
        .where(_inbound.c.id.in_([bindparam(f"m{i}") for i in range(count)]),
               unindexed(_inbound.c.status) == "pending", step_lock_alone())
        .with_for_update(skip_locked=True)
    )

ClaimedMessage = row_type("ClaimedMessage", CLAIM_MESSAGE)
"""A claimed message's row (its handling reads the fields again and again)."""


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
    """What :func:`due_now` read: pending messages and due deadlines, each in its order."""

    messages: list[tuple[int, datetime]]
    deadlines: list[tuple[int, datetime, str]]


def due_now(connection: Connection, now: datetime, skipped_messages: set[int],
            skipped_deadlines: set[int], messages: int, deadlines: int) -> Due:
    """Pending messages and due, unpaused deadlines (``skipped`` left out), earliest first, in
    one statement of index range reads."""
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


def messages_sharing_id(connection: Connection, source: str, external_id: str, base: str) -> list[Row[Any]]:
    """The stored messages from ``source`` with this id, and the conflicting duplicates under it."""
    c = _inbound.c
    return list(connection.execute(
        select(c.external_id, c.sender, c.channel, c.game_hint, c.kind, c.target, c.emoji,
               c.removed, c.body)
        .where(c.source == source,
               (c.external_id == external_id) | c.external_id.startswith(base + "#", autoescape=True))
        .order_by(c.id)
    ))
