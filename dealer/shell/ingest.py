"""Ingest: store inbound messages raw, exactly once, before anything reads them.

A pulling inbox (the directory inbox) is drained by :func:`ingest`: its messages are stored
in batches, and each is acknowledged to the inbox only once it is committed. A push adapter
(a webhook, a gateway connection) that already holds parsed messages calls
:func:`store_messages` directly and learns which were new and which were duplicates. Either
way a message is identified by its source and its own id: delivering it again is a no-op.
Nothing here applies a message; the pass does (:mod:`dealer.shell.passes`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, Protocol

from sqlalchemy.engine import Connection, Engine

from dealer.inbox import Inbox
from dealer.inbox.base import Delivery, InboxMessage
from dealer.shell.faults import fault
from dealer.store import queries as Q

log = logging.getLogger(__name__)

INGEST_BATCH = 200
"""Inbox messages stored per transaction."""


class IngestCounts(Protocol):
    """What :func:`ingest` counts into (a :class:`~dealer.shell.passes.PassReport`)."""

    ingested: int
    duplicates: int
    unreadable: int


@dataclass
class Stored:
    """What :func:`store_messages` did with each message it was given."""

    new: list[InboxMessage] = field(default_factory=list)
    duplicates: list[InboxMessage] = field(default_factory=list)
    refused: list[tuple[InboxMessage, str]] = field(default_factory=list)
    """Messages the store refused, each with the error (nothing of them is stored)."""


def store_messages(
    engine: Engine, source: str, messages: Iterable[InboxMessage], now: datetime
) -> Stored:
    """Store parsed messages from ``source`` (e.g. ``discord``), for a push adapter.

    Returns which were new and which were stored already (by ``source`` and message id);
    the pass applies the new ones (an adapter inside ``dealer run`` sets the daemon's
    ``wake`` event to have that done at once). The raw text kept with each is the message
    as JSON.
    Messages are stored in batches of :data:`INGEST_BATCH`, one transaction each.
    """
    result = Stored()
    items = [(message, message.model_dump_json()) for message in messages]
    for start in range(0, len(items), INGEST_BATCH):
        batch = items[start:start + INGEST_BATCH]
        for (message, _), outcome in zip(batch, _store_batch(engine, source, batch, now)):
            if isinstance(outcome, str):
                result.refused.append((message, outcome))
            elif outcome:
                result.new.append(message)
            else:
                result.duplicates.append(message)
    return result


def ingest(inbox: Inbox, engine: Engine, now: datetime, report: IngestCounts) -> int:
    """Store every message waiting in ``inbox``; return how many were new (in ``report``).

    An unreadable message, or one the store refuses, is rejected to the inbox with why; a
    message is acknowledged (``done``) only once it is committed.
    """
    batch: list[Delivery] = []
    for item in inbox.fetch():
        if not isinstance(item, Delivery):
            handle, why = item
            log.warning("unreadable inbox message %s: %s", handle, why)
            inbox.reject(handle, why)
            report.unreadable += 1
            continue
        batch.append(item)
        if len(batch) >= INGEST_BATCH:
            _ingest_batch(inbox, engine, batch, now, report)
            batch = []
    if batch:
        _ingest_batch(inbox, engine, batch, now, report)
    return report.ingested


def _ingest_batch(
    inbox: Inbox, engine: Engine, batch: list[Delivery], now: datetime, report: IngestCounts
) -> None:
    outcomes = _store_batch(engine, inbox.source, [(item.message, item.raw) for item in batch], now)
    fault("after-ingest-commit")
    for item, outcome in zip(batch, outcomes):
        if isinstance(outcome, str):
            inbox.reject(item.handle, f"the store refused the message: {outcome}")
            report.unreadable += 1
            continue
        if outcome:
            report.ingested += 1
        else:
            report.duplicates += 1
            log.info("message %s from %s already stored; ignored", item.message.id, inbox.source)
        inbox.done(item.handle)


def _store_batch(
    engine: Engine, source: str, batch: list[tuple[InboxMessage, str]], now: datetime
) -> list[bool | str]:
    """Insert a batch in one transaction: per message True (new), False (stored already)
    or the error that made the store refuse it."""
    try:
        with engine.begin() as connection:
            return [_insert(connection, source, message, raw, now) for message, raw in batch]
    except Exception:
        pass
    # One message the store refuses must not hold back the others: store one by one.
    outcomes: list[bool | str] = []
    for message, raw in batch:
        try:
            with engine.begin() as connection:
                outcomes.append(_insert(connection, source, message, raw, now))
        except Exception as exc:
            log.exception("message %s could not be stored", message.id)
            outcomes.append(str(exc) or type(exc).__name__)
    return outcomes


_INSERT_STATEMENTS: dict[str, Any] = {}


def _insert(connection: Connection, source: str, message: InboxMessage, raw: str, now: datetime) -> bool:
    """Insert one message unless its (source, id) is stored already; True if new."""
    values = dict(
        source=source,
        external_id=message.id,
        raw=raw,
        sender=message.sender,
        channel=message.channel,
        game_hint=message.game,
        kind=message.kind,
        target=message.target,
        emoji=message.emoji,
        removed=message.removed,
        body=message.body,
        # A message counts when it was sent; one claiming a time still to come counts
        # when it arrived.
        sent_at=min(message.sent_at, now),
        received_at=now,
        status="pending",
    )
    dialect = connection.dialect.name
    statement = _INSERT_STATEMENTS.get(dialect)
    if statement is None:
        statement = _INSERT_STATEMENTS[dialect] = Q.insert_message(dialect)
    return connection.execute(statement, values).first() is not None
