"""Ingest: store inbound messages raw, exactly once (by source and id), before anything
reads them; the pass applies them.

A pulling inbox is acknowledged only once its message is committed; a push adapter calls
:func:`store_messages`. Refused or kept aside, never silently: a ``sent_at`` over
:data:`MAX_AHEAD` ahead; the same id with another text, kept as a *conflicting duplicate*
(docs/OPERATING.md) so a re-sent edit never makes a move twice; an unauthenticated mail,
quarantined. A passing database error is raised, nothing rejected.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Iterable, Literal, Mapping, Protocol

from sqlalchemy.engine import Connection, Engine

from dealer.clock import iso, iso_exact
from dealer.inbox import Inbox
from dealer.inbox.base import Delivery, InboxMessage
from dealer.metrics import METRICS
from dealer.render import render
from dealer.shell.faults import fault
from dealer.shell.senders import quarantine_reasons, redact_new_passphrase, set_from_message
from dealer.store import queries as Q
from dealer.store.direct import direct
from dealer.store.transient import is_transient
from dealer.text import command_lines, escape_post, quote

log = logging.getLogger(__name__)

INGEST_BATCH = 200
"""Inbox messages stored per transaction."""
MAX_AHEAD = timedelta(days=1)
"""How far after its arrival a message's ``sent_at`` may lie."""

Kept = Literal["new", "duplicate", "conflict"]
"""What storing did with a message (else the error that made the store refuse it)."""


class IngestCounts(Protocol):
    """What :func:`ingest` counts into (a :class:`~dealer.shell.passes.PassReport`)."""

    ingested: int
    duplicates: int
    conflicts: int
    unreadable: int


@dataclass
class Stored:
    """What :func:`store_messages` did with each message it was given."""

    new: list[InboxMessage] = field(default_factory=list)
    duplicates: list[InboxMessage] = field(default_factory=list)
    conflicts: list[InboxMessage] = field(default_factory=list)
    """Same id as a stored message, another text: stored apart as rejected, sender told."""
    refused: list[tuple[InboxMessage, str]] = field(default_factory=list)
    """Messages refused (too far ahead, or by the store), each with why; nothing of them is stored."""


def store_messages(engine: Engine, source: str, messages: Iterable[InboxMessage], now: datetime,
                   raws: Mapping[str, str] | None = None) -> Stored:
    """Store a push adapter's parsed messages from ``source`` in batches; return which were new
    and which stored already. ``raws`` gives a raw text other than the JSON (an interaction's
    token). A passing error is raised after the batches before it: the adapter sends them all again."""
    result = Stored()
    items = [(message, (raws or {}).get(message.id) or message.model_dump_json()) for message in messages]
    for start in range(0, len(items), INGEST_BATCH):
        batch = items[start:start + INGEST_BATCH]
        for (message, _), outcome in zip(batch, _store_batch(engine, source, batch, now)):
            if isinstance(outcome, Refused):
                result.refused.append((message, outcome.why))
            elif outcome == "new":
                result.new.append(message)
            elif outcome == "conflict":
                result.conflicts.append(message)
            else:
                result.duplicates.append(message)
    return result


def ingest(inbox: Inbox, engine: Engine, now: datetime, report: IngestCounts,
           unflushed: list[Any] | None = None) -> int:
    """Store every message waiting in ``inbox``, each acknowledged once its commit is done (with
    ``unflushed``, Postgres: commits not waiting for the disk, the handles left there for the
    caller to acknowledge after a commit that waited); return how many were new."""
    batch: list[Delivery] = []
    for item in inbox.fetch(now):
        if not isinstance(item, Delivery):
            handle, why = item
            log.warning("unreadable inbox message %s: %s", handle, why)
            _reject(inbox, handle, why)
            report.unreadable += 1
            continue
        batch.append(item)
        if len(batch) >= INGEST_BATCH:
            _ingest_batch(inbox, engine, batch, now, report, unflushed)
            batch = []
    if batch:
        _ingest_batch(inbox, engine, batch, now, report, unflushed)
    return report.ingested


def acknowledge(inbox: Inbox, handle: Any) -> None:
    """Tell ``inbox`` a message is stored; a failure is logged (it comes again as a duplicate)."""
    try:
        inbox.done(handle)
    except Exception:
        log.exception("inbox message %s is stored but could not be acknowledged", handle)


def _reject(inbox: Inbox, handle: Any, why: str) -> None:
    """Set a message aside; should even that fail, log it and go on (it is tried again)."""
    try:
        inbox.reject(handle, why)
    except Exception:
        log.exception("inbox message %s could not be set aside (%s)", handle, why)


def _ingest_batch(inbox: Inbox, engine: Engine, batch: list[Delivery], now: datetime,
                  report: IngestCounts, unflushed: list[Any] | None) -> None:
    held = quarantine_reasons(engine, batch, now)
    if unflushed is not None:
        engine = engine.execution_options(flush=False)  # read by _insert_statement
    outcomes = _store_batch(engine, inbox.source, [(item.message, item.raw) for item in batch], now,
                            held=held)
    fault("after-ingest-commit")
    for item, outcome, why in zip(batch, outcomes, held):
        if isinstance(outcome, Refused):
            _reject(inbox, item.handle, outcome.why)
            report.unreadable += 1
            continue
        if outcome == "new":
            report.ingested += 1
            if why is not None:
                log.warning("message %s from %s quarantined: %s", item.message.id, item.message.sender, why)
                METRICS.message("quarantined")
        elif outcome == "conflict":
            report.conflicts += 1
        else:
            report.duplicates += 1
            log.info("message %s from %s already stored; ignored", item.message.id, inbox.source)
        if unflushed is None:
            acknowledge(inbox, item.handle)
        else:  # a duplicate too: the copy stored may be another daemon's, not yet flushed
            unflushed.append(item.handle)


@dataclass(frozen=True)
class Refused:
    """A message not stored, and why."""

    why: str


def too_far_ahead(message: InboxMessage, now: datetime) -> str | None:
    """Why ``message`` is refused for a ``sent_at`` beyond :data:`MAX_AHEAD`, else None."""
    if message.sent_at - now <= MAX_AHEAD:
        return None
    return (
        f"sent_at {iso_exact(message.sent_at)} is more than a day after the message arrived "
        f"({iso(now)}); the sender's clock is wrong: write the time it was sent, in UTC or "
        "with its offset"
    )


def _store_batch(engine: Engine, source: str, batch: list[tuple[InboxMessage, str]], now: datetime,
                 held: list[str | None] | None = None) -> list[Kept | Refused]:
    """Insert a batch in one transaction: per message what became of it or why it was refused;
    ``held`` says which are quarantined. A ``set passphrase`` PM is stored on its own."""
    held = held if held is not None else [None] * len(batch)
    redacted = [redact_new_passphrase(message, raw) for message, raw in batch]
    batch = [(message, raw) for message, raw, _ in redacted]
    outcomes: list[Kept | Refused | None] = [
        _store_setting(engine, source, message, raw, phrase, now)
        if phrase is not None and why is None and too_far_ahead(message, now) is None else None
        for (message, raw, phrase), why in zip(redacted, held)
    ]
    rest = [index for index, outcome in enumerate(outcomes) if outcome is None]
    stored = _store_plain(engine, source, [batch[i] for i in rest], now, [held[i] for i in rest])
    for index, outcome in zip(rest, stored):
        outcomes[index] = outcome
    return [outcome for outcome in outcomes if outcome is not None]


def _store_setting(engine: Engine, source: str, message: InboxMessage, raw: str, phrase: str,
                   now: datetime) -> Kept | Refused:
    """Store a ``set passphrase`` PM and, when new, apply it in the same transaction."""
    try:
        with engine.begin() as connection:
            kept = _insert(connection, source, message, raw, now)
            if kept == "new":
                set_from_message(connection, source, message, phrase, now)
            return kept
    except Exception as exc:
        if is_transient(exc):
            raise
        log.exception("message %s could not be stored", message.id)
        return Refused(f"the store refused the message: {str(exc) or type(exc).__name__}")


def _store_plain(engine: Engine, source: str, batch: list[tuple[InboxMessage, str]], now: datetime,
                 held: list[str | None]) -> list[Kept | Refused]:
    """:func:`_store_batch` of messages that set no pass phrase."""
    if not batch:
        return []
    checked: list[Refused | None] = []
    for message, _ in batch:
        why = too_far_ahead(message, now)
        if why is not None:
            log.warning("message %s from %s refused: %s", message.id, source, why)
        checked.append(Refused(why) if why else None)
    try:
        kept = _store_new(engine, source, batch, checked, now, held)
        if kept is not None:
            return kept
        with engine.begin() as connection:
            return [
                refused or _insert(connection, source, message, raw, now, why)
                for (message, raw), refused, why in zip(batch, checked, held)
            ]
    except Exception as exc:
        if is_transient(exc):
            raise
    # One message the store refuses must not hold back the others: store one by one.
    outcomes: list[Kept | Refused] = []
    for (message, raw), refused, why in zip(batch, checked, held):
        if refused:
            outcomes.append(refused)
            continue
        try:
            with engine.begin() as connection:
                outcomes.append(_insert(connection, source, message, raw, now, why))
        except Exception as exc:
            if is_transient(exc):
                raise
            log.exception("message %s could not be stored", message.id)
            outcomes.append(Refused(f"the store refused the message: {str(exc) or type(exc).__name__}"))
    return outcomes


def _store_new(engine: Engine, source: str, batch: list[tuple[InboxMessage, str]],
               checked: list[Refused | None], now: datetime,
               held: list[str | None]) -> list[Kept | Refused] | None:
    """All new messages of a batch in one statement, in its order; None, storing nothing, when
    one was stored before. On Postgres one new message goes in autocommit: no ``BEGIN`` nor ``COMMIT`` round trip."""
    rows = [_values(source, message, raw, now, why)
            for (message, raw), refused, why in zip(batch, checked, held) if refused is None]
    if any(held) and not all(held):
        for row in rows:  # one statement takes rows of the same columns
            row.setdefault("error", None)
    if len(rows) == 1 and engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            if not _insert_new(connection, rows[0]):
                return None
        return [refused or "new" for refused in checked]
    if len(rows) < 2:
        return None
    with engine.connect() as connection:
        with connection.begin() as transaction:
            stored = connection.execute(_insert_statement(connection), rows).all()
            if len(stored) < len(rows):
                transaction.rollback()
                return None
    return [refused or "new" for refused in checked]


def _insert_new(connection: Connection, values: dict[str, Any]) -> bool:
    """Insert one message unless stored already; whether it was new."""
    return direct(_insert_statement(connection)).first(connection, values) is not None


def _insert_statement(connection: Connection) -> Any:
    """The INSERT of a message, its commit waiting for the disk unless ingest said otherwise."""
    flush = connection.get_execution_options().get("flush", True)
    return Q.insert_message(connection.dialect.name, flush)


def _insert(connection: Connection, source: str, message: InboxMessage, raw: str, now: datetime,
            held: str | None = None) -> Kept:
    """Insert one message unless stored already (quarantined when ``held`` says so)."""
    values = _values(source, message, raw, now, held)
    if _insert_new(connection, values):
        return "new"
    base = message.id[:CONFLICT_BASE]
    stored = Q.messages_sharing_id(connection, source, message.id, base)
    said = _said(message)
    if any(tuple(row[1:]) == said for row in stored):
        return "duplicate"
    _keep_conflict(connection, source, message, values, base, stored, now, held)
    return "conflict"


CONFLICT_BASE = 190
"""Characters of an id kept in a conflicting duplicate's id (``BASE#N`` fits 200)."""


def _values(source: str, message: InboxMessage, raw: str, now: datetime,
            held: str | None = None) -> dict[str, Any]:
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
    if held is not None:
        # A quarantined message keeps why in ``error`` (what `dealer inbox list` shows
        # beside it); every other message's columns are left as they were (the hot path).
        values.update(status="quarantined", error=held)
    return values


def _said(message: InboxMessage) -> tuple[Any, ...]:
    """What a message says, compared to tell a re-delivery from another message."""
    return (message.sender, message.channel, message.game, message.kind, message.target,
            message.emoji, message.removed, message.body)


def _keep_conflict(connection: Connection, source: str, message: InboxMessage,
                   values: dict[str, Any], base: str, stored: list[Any], now: datetime,
                   held: str | None = None) -> None:
    """Store a conflicting duplicate as rejected under ``BASE#N`` and tell its sender (quarantined, untold, when ``held``)."""
    taken = {row.external_id for row in stored}
    number = 2
    while f"{base}#{number}" in taken:
        number += 1
    ident = f"{base}#{number}"
    detail = (f"conflicting duplicate: the id {message.id!r} was stored before with a "
              "different text; this one is kept apart and not applied")
    if held is not None:
        connection.execute(Q.INSERT_MESSAGE.values(**{**values, "external_id": ident}))
        log.warning("message %s from %s: %s; quarantined as %s (%s)", message.id, source, detail, ident, held)
        return
    inserted = connection.execute(Q.INSERT_MESSAGE.values(
        **{**values, "external_id": ident, "status": "rejected", "processed_at": now,
           "outcome": [{"result": "rejected", "detail": detail}]},
    ))
    log.warning("message %s from %s: %s; stored as %s, its sender %s is told",
                message.id, source, detail, ident, message.sender)
    lines = command_lines(message.body)
    first = lines[0] if lines else ""
    connection.execute(Q.INSERT_POSTS, dict(
        key=f"in:{inserted.inserted_primary_key[0]}:conflict", game_id=None, channel="pm",
        recipient=message.sender, kind="conflict",
        subject=escape_post(f"Not applied: {quote(first, 60)}" if first else "Not applied"),
        body=render("common/conflict.txt", now, message_id=message.id, line=quote(first) if first else ""),
        created_at=now, status="pending", attempts=0,
    ))
