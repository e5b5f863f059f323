"""The daemon: ingest the inbox, fire due deadlines in time order, deliver the outbox.

One *pass* does, in order: apply the admin overrides, store every new inbox message raw,
process stored messages and due deadlines interleaved by time (a message sent at or
before a deadline counts for it, even if it was read later), and deliver queued posts.
``dealer run --once`` is one pass; ``dealer run`` repeats it, woken by APScheduler timers
that mirror the pending deadline rows, by the inbox poll interval, and by SIGHUP.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.clock import utcnow
from dealer.inbox import Inbox, open_inbox
from dealer.inbox.base import Delivery
from dealer.messages import process_inbound
from dealer.overrides import BadOverride, apply_overrides, read_overrides
from dealer.publish import DeliveryFailed, Publisher, open_publisher
from dealer.publish.base import OutgoingPost
from dealer.render import set_fairness_url
from dealer.settings import Settings
from dealer.steps import run_step
from dealer.store.db import check_schema, make_engine, session_factory
from dealer.store.models import Deadline, Inbound, Post

log = logging.getLogger(__name__)

INGEST_BATCH = 200
"""Inbox messages stored per transaction."""


@dataclass
class PassReport:
    """What one pass did."""

    ingested: int = 0
    duplicates: int = 0
    unreadable: int = 0
    messages: int = 0
    deadlines: int = 0
    delivered: int = 0
    failed: int = 0
    overrides: list[str] = field(default_factory=list)

    def line(self) -> str:
        """A one-line summary for the log."""
        return (
            f"ingested {self.ingested} (duplicates {self.duplicates}, unreadable {self.unreadable}), "
            f"messages {self.messages}, deadlines {self.deadlines}, "
            f"posts delivered {self.delivered} (failed {self.failed})"
        )


def _fault(point: str) -> None:
    """Fault injection for crash tests: ``DEALER_FAULT=<point>`` kills the process there."""
    if os.environ.get("DEALER_FAULT") == point:
        os.kill(os.getpid(), signal.SIGKILL)


class Dealer:
    """The daemon's shell around the store, the inbox and the publisher."""

    def __init__(
        self,
        settings: Settings,
        *,
        inbox: Inbox | None = None,
        publisher: Publisher | None = None,
        clock: Callable[[], datetime] = utcnow,
    ):
        self.settings = settings
        set_fairness_url(settings.fairness_url)
        self.engine = make_engine(settings.database_url)
        self.sessions = session_factory(self.engine)
        self.inbox = inbox or open_inbox(settings.inbox, settings.max_message_bytes)
        self.publisher = publisher or open_publisher(settings.publish)
        self.clock = clock
        self.wake = threading.Event()
        self.stopping = False
        self.reload_requested = True
        self._insert_statements: dict[str, Any] = {}

    # -- one pass ---------------------------------------------------------------------

    def run_pass(self, now: datetime | None = None) -> PassReport:
        """Overrides, ingest, messages and deadlines in time order, then delivery."""
        now = now or self.clock()
        report = PassReport()
        report.overrides = self.apply_overrides(now)
        self.ingest(now, report)
        self.process_due(now, report)
        self.deliver(report)
        return report

    def apply_overrides(self, now: datetime) -> list[str]:
        """Apply ``DEALER_DEADLINE_OVERRIDES`` and the overrides file (read afresh on every
        pass); a malformed one is logged, not fatal, and changes nothing."""
        try:
            specs = read_overrides(self.settings.deadline_overrides, self.settings.overrides_file)
        except BadOverride as exc:
            log.error("deadline overrides not applied: %s", exc)
            return [f"error: {exc}"]
        with self.sessions.begin() as session:
            changes = apply_overrides(session, specs, now)
        for change in changes:
            log.info("override: %s", change)
        return changes

    def ingest(self, now: datetime, report: PassReport | None = None) -> int:
        """Store every waiting inbox message raw; re-delivery of an id is a no-op.

        Messages are stored in batches (one transaction each); a file is acknowledged to
        the inbox only once its message is committed.
        """
        report = report or PassReport()
        batch: list[Delivery] = []
        for item in self.inbox.fetch():
            if not isinstance(item, Delivery):
                handle, why = item
                log.warning("unreadable inbox message %s: %s", handle, why)
                self.inbox.reject(handle, why)
                report.unreadable += 1
                continue
            batch.append(item)
            if len(batch) >= INGEST_BATCH:
                self._store(batch, now, report)
                batch = []
        if batch:
            self._store(batch, now, report)
        return report.ingested

    def _store(self, batch: list[Delivery], now: datetime, report: PassReport) -> None:
        try:
            with self.engine.begin() as connection:
                stored = [self._insert(connection, item, now) for item in batch]
        except Exception:
            # One message the store refuses must not hold back the others: store one by one.
            stored = []
            for item in batch:
                try:
                    with self.engine.begin() as connection:
                        stored.append(self._insert(connection, item, now))
                except Exception as exc:
                    log.exception("message %s could not be stored", item.message.id)
                    self.inbox.reject(item.handle, f"the store refused the message: {exc}")
                    report.unreadable += 1
                    stored.append(None)
        for item, new in zip(batch, stored):
            if new is None:
                continue
            if new:
                report.ingested += 1
            else:
                report.duplicates += 1
                log.info("message %s from %s already stored; ignored", item.message.id, self.inbox.source)
            self.inbox.done(item.handle)

    def _insert(self, connection: Connection, item: Delivery, now: datetime) -> bool:
        """Insert one message unless its (source, id) is stored already; True if new."""
        message = item.message
        values = dict(
            source=self.inbox.source,
            external_id=message.id,
            raw=item.raw,
            sender=message.sender,
            channel=message.channel,
            game_hint=message.game,
            kind=message.kind,
            target=message.target,
            emoji=message.emoji,
            body=message.body,
            # A message counts when it was sent; one claiming a time still to come counts
            # when it arrived.
            sent_at=min(message.sent_at, now),
            received_at=now,
            status="pending",
        )
        statement = self._insert_statements.get(connection.dialect.name)
        if statement is None:
            statement = self._insert_statements[connection.dialect.name] = _insert_message(
                connection.dialect.name
            )
        return connection.execute(statement, values).first() is not None

    def process_due(self, now: datetime, report: PassReport | None = None) -> None:
        """Process stored messages and due deadlines, earliest first, until none is left.

        A message sent at or before a deadline is handled before it. Messages are read in
        batches; the next due deadline is read again whenever a step may have moved it.
        """
        report = report or PassReport()
        skipped_messages: set[int] = set()  # taken by another daemon
        skipped_deadlines: set[int] = set()  # taken by another daemon, or failing
        while not self.stopping:
            with self.engine.connect() as connection:
                messages = _pending_messages(connection, skipped_messages)
                deadline = _next_deadline(connection, now, skipped_deadlines)
            if not messages and deadline is None:
                return
            if deadline is not None and (not messages or deadline[1] < messages[0][1]):
                if self.fire_deadline(deadline[0]):
                    report.deadlines += 1
                else:
                    skipped_deadlines.add(deadline[0])
                continue
            due = [m for m in messages if deadline is None or m[1] <= deadline[1]]
            self.process_messages(due[:MESSAGE_GROUP], now, skipped_messages, skipped_deadlines, report)

    def process_messages(
        self,
        messages: list[tuple[int, datetime]],
        now: datetime,
        skipped_messages: set[int],
        skipped_deadlines: set[int],
        report: PassReport,
    ) -> None:
        """Apply consecutive messages, all due before the next deadline, in one transaction.

        Each message is still all-or-nothing (its rules step writes only once it is
        accepted), and a crash before the commit leaves every one of them pending, to be
        applied again. Grouping saves a transaction per message on the hot path. A message
        that moves a deadline ends the group if that deadline now falls before the next
        message. An unexpected error rolls the group back; its messages are then applied
        one by one, so a faulty message is marked failed without holding back the others.
        """
        reached = applied = 0
        try:
            with self.sessions.begin() as session:
                for reached, (message_id, _) in enumerate(messages):
                    inbound = session.execute(_CLAIM_MESSAGE, {"id": message_id}).first()
                    if inbound is None:
                        skipped_messages.add(message_id)
                        continue
                    outcome = process_inbound(session, inbound)
                    self._record(session, message_id, outcome.status, outcome.lines)
                    applied += 1
                    if outcome.deadlines_changed and reached + 1 < len(messages):
                        nxt = _next_deadline(session.connection(), now, skipped_deadlines)
                        if nxt is not None and nxt[1] < messages[reached + 1][1]:
                            break
            report.messages += applied
        except Exception:
            log.warning("a group of messages failed; applying them one by one", exc_info=True)
            for message_id, _ in messages[: reached + 1]:
                result = self.process_message(message_id)
                if result is None:
                    skipped_messages.add(message_id)
                else:
                    report.messages += 1

    def _record(self, session: Session, inbound_id: int, status: str, lines: list[Any]) -> None:
        session.execute(
            _RECORD_OUTCOME,
            {"inbound_id": inbound_id, "new_status": status, "new_outcome": lines,
             "new_processed_at": self.clock()},
        )

    def process_message(self, inbound_id: int) -> bool | None:
        """Apply one stored message in one transaction.

        Returns None if another daemon has it, else whether its steps changed deadlines.
        """
        try:
            with self.sessions.begin() as session:
                inbound = session.execute(_CLAIM_MESSAGE, {"id": inbound_id}).first()
                if inbound is None:
                    return None
                outcome = process_inbound(session, inbound)
                self._record(session, inbound_id, outcome.status, outcome.lines)
            return outcome.deadlines_changed
        except Exception as exc:  # a bug must not stop the daemon or lose the message
            log.exception("message %s could not be processed", inbound_id)
            with self.sessions.begin() as session:
                inbound = session.get(Inbound, inbound_id)
                if inbound is not None and inbound.status == "pending":
                    inbound.status = "failed"
                    inbound.outcome = [{"result": "failed", "detail": f"{type(exc).__name__}: {exc}"}]
                    inbound.processed_at = self.clock()
            return False

    def fire_deadline(self, deadline_id: int) -> bool:
        """Fire one due deadline in one transaction; False if it is no longer due here."""
        try:
            with self.sessions.begin() as session:
                deadline = session.scalars(
                    select(Deadline)
                    .where(Deadline.id == deadline_id, Deadline.status == "pending",
                           Deadline.paused.is_(False))
                    .with_for_update(skip_locked=True)
                ).first()
                if deadline is None:
                    return False
                deadline.status = "fired"
                deadline.fired_at = self.clock()
                session.flush()
                name, due = deadline.name, deadline.due_at

                def fire(rules, ctx, state):  # type: ignore[no-untyped-def]
                    ctx.record("deadline.fired", deadline=name)
                    return rules.on_deadline(ctx, state, name)

                run_step(session, deadline.game_id, due, fire, origin=f"deadline:{deadline.id}")
            _fault("after-deadline-commit")
            return True
        except Exception:
            log.exception("deadline %s could not be fired; it stays pending", deadline_id)
            return False

    def deliver(self, report: PassReport | None = None) -> int:
        """Send queued posts in order; a failure stops this round (order is kept).

        Each post is marked delivered in its own small transaction right after it is sent,
        so a crash in between re-sends exactly that post (publishers are idempotent by key).
        """
        report = report or PassReport()
        posts = Post.__table__
        while not self.stopping:
            with self.engine.connect() as connection:
                batch = connection.execute(
                    select(posts).where(posts.c.status == "pending").order_by(posts.c.id).limit(200)
                ).all()
            if not batch:
                return report.delivered
            for row in batch:
                if self.stopping:
                    break
                outgoing = OutgoingPost(
                    row.id, row.key, row.channel, row.recipient, row.game_id,
                    row.kind, row.subject, row.body, row.created_at,
                )
                try:
                    external = self.publisher.send(outgoing)
                except DeliveryFailed as exc:
                    attempts = row.attempts + 1
                    parked = attempts >= self.settings.publish_retries
                    with self.engine.begin() as connection:
                        connection.execute(
                            update(posts).where(posts.c.id == row.id).values(
                                attempts=attempts, last_error=str(exc),
                                status="failed" if parked else "pending",
                            )
                        )
                    if parked:
                        log.error("post %s parked after %s attempts: %s", row.key, attempts, exc)
                        report.failed += 1
                        continue
                    log.warning("post %s not delivered (will retry): %s", row.key, exc)
                    return report.delivered
                _fault("after-send")
                with self.engine.begin() as connection:
                    connection.execute(
                        _DELIVERED,
                        {"post_id": row.id, "new_external_id": external, "new_delivered_at": self.clock()},
                    )
                report.delivered += 1
        return report.delivered

    # -- the long-running daemon --------------------------------------------------------

    def check(self) -> None:
        """Refuse to run on an out-of-date schema (raises ``SchemaOutOfDate``)."""
        check_schema(self.engine)

    def run_forever(self) -> None:
        """Run passes until SIGTERM/SIGINT; SIGHUP re-reads the overrides."""
        from apscheduler.schedulers.background import BackgroundScheduler

        self.check()
        scheduler = BackgroundScheduler(
            timezone=timezone.utc,
            # Never drop a timer missed while the process was busy or asleep: APScheduler's
            # default grace of 1 s would silently skip it.
            job_defaults={"misfire_grace_time": None, "coalesce": True, "max_instances": 1},
        )
        scheduler.start()
        self._install_signals()
        log.info("dealer running; store %s", self.engine.url.render_as_string(hide_password=True))
        try:
            while not self.stopping:
                if self.reload_requested:
                    self.reload_requested = False
                    self._reload_settings()
                report = self.run_pass()
                if report.ingested or report.deadlines or report.delivered or report.overrides:
                    log.info("pass: %s", report.line())
                self.sync_timers(scheduler)
                self.wake.wait(timeout=self.settings.poll_interval)
                self.wake.clear()
        finally:
            scheduler.shutdown(wait=False)
            log.info("dealer stopped")

    def sync_timers(self, scheduler) -> int:  # type: ignore[no-untyped-def]
        """Make the scheduler hold exactly one timer per pending, unpaused deadline."""
        from apscheduler.triggers.date import DateTrigger

        with self.sessions() as session:
            rows = session.execute(
                select(Deadline.id, Deadline.due_at).where(
                    Deadline.status == "pending", Deadline.paused.is_(False)
                )
            ).all()
        wanted = {f"deadline-{row.id}": row.due_at for row in rows}
        for job in scheduler.get_jobs():
            if job.id not in wanted:
                job.remove()
        for job_id, due in wanted.items():
            job = scheduler.get_job(job_id)
            if job is not None and getattr(job, "next_run_time", None) == due:
                continue
            scheduler.add_job(
                self.wake.set, DateTrigger(run_date=due), id=job_id, replace_existing=True
            )
        return len(wanted)

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def stop(signum, _frame):  # type: ignore[no-untyped-def]
            log.info("signal %s: stopping after this step", signum)
            self.stopping = True
            self.wake.set()

        def reload(_signum, _frame):  # type: ignore[no-untyped-def]
            log.info("SIGHUP: re-reading the deadline overrides")
            self.reload_requested = True
            self.wake.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        if hasattr(signal, "SIGHUP"):
            signal.signal(signal.SIGHUP, reload)

    def _reload_settings(self) -> None:
        try:
            fresh = self.settings.reread()
        except ValueError as exc:  # pydantic's ValidationError: keep the settings in force
            log.error("settings not re-read: %s", exc)
            return
        self.settings = self.settings.model_copy(
            update={"deadline_overrides": fresh.deadline_overrides}
        )


_inbound = Inbound.__table__
_CLAIM_MESSAGE = (
    select(
        _inbound.c.id, _inbound.c.sender, _inbound.c.channel, _inbound.c.game_hint,
        _inbound.c.kind, _inbound.c.body, _inbound.c.sent_at,
    )
    .where(_inbound.c.id == bindparam("id"), _inbound.c.status == "pending")
    .with_for_update(skip_locked=True)
)

_RECORD_OUTCOME = (
    update(_inbound)
    .where(_inbound.c.id == bindparam("inbound_id"))
    .values(
        status=bindparam("new_status"),
        outcome=bindparam("new_outcome"),
        processed_at=bindparam("new_processed_at"),
    )
)
_posts = Post.__table__
_DELIVERED = (
    update(_posts)
    .where(_posts.c.id == bindparam("post_id"))
    .values(
        status="delivered",
        attempts=_posts.c.attempts + 1,
        external_id=bindparam("new_external_id"),
        delivered_at=bindparam("new_delivered_at"),
    )
)


def _insert_message(dialect: str):  # type: ignore[no-untyped-def]
    """INSERT a message unless its (source, external id) is stored; RETURNING its id."""
    insert = postgres_insert if dialect == "postgresql" else sqlite_insert
    return (
        insert(_inbound)
        .on_conflict_do_nothing(index_elements=["source", "external_id"])
        .returning(_inbound.c.id)
    )


MESSAGE_BATCH = 200
"""Pending messages read at once by :meth:`Dealer.process_due`."""
MESSAGE_GROUP = 50
"""Messages applied in one transaction by :meth:`Dealer.process_messages`."""


def _pending_messages(connection: Connection, skipped: set[int]) -> list[tuple[int, datetime]]:
    # Messages count in the order they were sent (SR-6: a later submission replaces an
    # earlier one), to the microsecond; an exact tie goes to the one dealer received first:
    # the row id, which follows ingest order (the directory inbox reads files in arrival
    # order).
    rows = connection.execute(
        select(Inbound.id, Inbound.sent_at)
        .where(Inbound.status == "pending")
        .order_by(Inbound.sent_at, Inbound.id)
        .limit(len(skipped) + MESSAGE_BATCH)
    ).all()
    return [(row.id, row.sent_at) for row in rows if row.id not in skipped]


def _next_deadline(
    connection: Connection, now: datetime, skipped: set[int]
) -> tuple[int, datetime] | None:
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
