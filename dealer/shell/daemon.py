"""The daemon: ingest the inbox, fire due deadlines in time order, deliver the outbox.

One *pass* does, in order: apply the admin overrides, store every new inbox message raw,
process stored messages and due deadlines interleaved by time (a message sent at or
before a deadline counts for it, even if it was read later), and deliver queued posts.
``dealer run --once`` is one pass; ``dealer run`` repeats it, woken by APScheduler timers
that mirror the pending deadline rows, by the inbox poll interval, and by SIGHUP.

What dealer cannot handle is never silent. A message whose handling crashes (a missing
template, a bug) is logged with its traceback, stored ``failed`` with its error, and its
sender gets one private "could not handle" reply; ``dealer inbox retry`` puts it back to
pending once the cause is fixed. A deadline whose step crashes is logged, keeps its error
on its row and stays pending: it is retried on every pass, and until it fires its game is
held (messages and later deadlines of that game wait, pending). Either makes the pass's
report not ``ok``, so ``dealer run --once`` exits non-zero.
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
from dealer.history import DeadlineFired
from dealer.inbox import Inbox, open_inbox
from dealer.inbox.base import Delivery
from dealer.shell.messages import Outcome, process_inbound
from dealer.shell.overrides import BadOverride, apply_overrides, read_overrides
from dealer.publish import DeliveryFailed, Publisher, open_publisher
from dealer.publish.base import OutgoingPost
from dealer.render import set_fairness_url
from dealer.settings import Settings
from dealer.render import render
from dealer.shell.steps import GameHeld, run_step
from dealer.store.db import check_schema, make_engine, session_factory
from dealer.store.models import Deadline, Inbound, Post
from dealer.text import command_lines, escape_post, quote

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
    failed_messages: list[int] = field(default_factory=list)
    """Store ids of the messages this pass could not handle (now stored ``failed``)."""
    failed_deadlines: list[str] = field(default_factory=list)
    """``GAME:DEADLINE`` of each deadline whose step crashed in this pass (still pending)."""
    held: int = 0
    """Messages and deadlines left pending because their game waits behind a failed deadline."""
    now: datetime | None = None
    """The time the pass acted at."""

    @property
    def ok(self) -> bool:
        """True unless a message or a deadline could not be handled in this pass."""
        return not self.failed_messages and not self.failed_deadlines

    def line(self) -> str:
        """A one-line summary for the log."""
        line = (
            f"ingested {self.ingested} (duplicates {self.duplicates}, unreadable {self.unreadable}), "
            f"messages {self.messages}, deadlines {self.deadlines}, "
            f"posts delivered {self.delivered} (failed {self.failed})"
        )
        if not self.ok or self.held:
            line += (
                f"; NOT HANDLED: messages {len(self.failed_messages)}, "
                f"deadlines {len(self.failed_deadlines)}, held {self.held}"
            )
        return line


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
        report = PassReport(now=now)
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
            removed=message.removed,
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
                result = self.fire_deadline(deadline[0], report)
                if result == "fired":
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
        message. An unexpected error (or a held game) rolls the group back; its messages are
        then applied one by one, so a faulty message is marked failed, and a message of a
        held game left pending, without holding back the others.
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
                    self._record(session, message_id, outcome)
                    applied += 1
                    if outcome.deadlines_changed and reached + 1 < len(messages):
                        nxt = _next_deadline(session.connection(), now, skipped_deadlines)
                        if nxt is not None and nxt[1] < messages[reached + 1][1]:
                            break
            report.messages += applied
        except Exception as exc:
            if not isinstance(exc, GameHeld):  # the faulty message's own log has the traceback
                log.warning("a group of messages failed (%s); applying them one by one", _describe(exc))
            for message_id, _ in messages[: reached + 1]:
                result = self.process_message(message_id, report)
                if result in (None, "held"):
                    skipped_messages.add(message_id)
                elif result != "failed":
                    report.messages += 1

    def _record(self, session: Session, inbound_id: int, outcome: Outcome) -> None:
        session.execute(
            _RECORD_OUTCOME,
            {"inbound_id": inbound_id, "new_status": outcome.status, "new_outcome": outcome.lines,
             "new_processed_at": self.clock(), "new_game_id": outcome.game_id},
        )

    def process_message(self, inbound_id: int, report: PassReport | None = None) -> str | None:
        """Apply one stored message in one transaction.

        Returns None if another daemon has it, else what became of it: its outcome's status
        (``applied``, ``rejected``, ``ignored``), ``held`` (its game waits behind a failed
        deadline: it stays pending) or ``failed`` (see :meth:`message_failed`).
        """
        try:
            with self.sessions.begin() as session:
                inbound = session.execute(_CLAIM_MESSAGE, {"id": inbound_id}).first()
                if inbound is None:
                    return None
                outcome = process_inbound(session, inbound)
                self._record(session, inbound_id, outcome)
            return outcome.status
        except GameHeld as held:
            log.info("message %s waits, pending: %s", inbound_id, held)
            if report is not None:
                report.held += 1
            return "held"
        except Exception as exc:  # a bug must not stop the daemon or lose the message
            log.exception(
                "message %s could NOT be handled (%s); it is stored as failed and its sender "
                "told. Fix the cause, then `dealer inbox retry %s`",
                inbound_id, _describe(exc), inbound_id,
            )
            if report is not None:
                report.failed_messages.append(inbound_id)
            try:
                self.message_failed(inbound_id, exc)
            except Exception:
                log.exception("message %s could not even be marked failed; it stays pending", inbound_id)
            return "failed"

    def message_failed(self, inbound_id: int, exc: BaseException) -> None:
        """Store a message dealer could not handle as ``failed``, with its error, and queue
        its sender's one "could not handle" reply (in one transaction)."""
        now = self.clock()
        with self.sessions.begin() as session:
            inbound = session.get(Inbound, inbound_id, with_for_update=True)
            if inbound is None or inbound.status != "pending":
                return
            error = _describe(exc)
            inbound.status = "failed"
            inbound.error = error
            inbound.outcome = [{"result": "failed", "detail": error}]
            inbound.processed_at = now
            key = f"in:{inbound_id}:failed"
            if session.scalar(select(Post.id).where(Post.key == key)) is not None:
                return  # failed before, retried, failed again: the sender was told once
            lines = command_lines(inbound.body)
            first = lines[0] if lines else ""
            session.add(Post(
                key=key, game_id=None, channel="pm", recipient=inbound.sender, kind="failed",
                subject=escape_post(f"Not handled: {quote(first, 60)}" if first else "Not handled"),
                body=failure_reply(first, now), created_at=now, status="pending", attempts=0,
            ))

    def fire_deadline(self, deadline_id: int, report: PassReport | None = None) -> str:
        """Fire one due deadline in one transaction.

        Returns ``fired``; ``gone`` if it is no longer due here (fired, cancelled, paused or
        taken by another daemon); ``held`` if its game waits behind an earlier failed
        deadline; ``failed`` if its step crashed: it then stays pending with its error kept
        on its row, holds its game, and is tried again on the next pass.
        """
        name = due = game_id = None
        try:
            with self.sessions.begin() as session:
                deadline = session.scalars(
                    select(Deadline)
                    .where(Deadline.id == deadline_id, Deadline.status == "pending",
                           Deadline.paused.is_(False))
                    .with_for_update(skip_locked=True)
                ).first()
                if deadline is None:
                    return "gone"
                name, due, game_id, previous = deadline.name, deadline.due_at, deadline.game_id, deadline.error
                deadline.status = "fired"
                deadline.fired_at = self.clock()
                deadline.error = None
                session.flush()
                run_step(session, game_id, due, DeadlineFired(deadline=name),
                         origin=f"deadline:{deadline.id}", firing=deadline.id)
            _fault("after-deadline-commit")
            if previous is not None:
                log.warning("deadline %s of game %s fired at last; the game goes on", name, game_id)
            return "fired"
        except GameHeld as held:
            log.info("deadline %s waits, pending: %s", deadline_id, held)
            if report is not None:
                report.held += 1
            return "held"
        except Exception as exc:
            error = _describe(exc)
            if report is not None:
                report.failed_deadlines.append(f"{game_id}:{name}" if name else f"deadline {deadline_id}")
            try:
                previous = self._deadline_failed(deadline_id, error)
            except Exception:
                log.exception("the error of deadline %s could not be stored", deadline_id)
                previous = None
            if previous == error:
                # Retried on every pass: its traceback was logged when it first failed.
                log.error("deadline %s of game %s still cannot be fired: %s", name, game_id, error)
            else:
                log.exception(
                    "deadline %s of game %s (due %s) could NOT be fired (%s); it stays pending, "
                    "holds its game and is retried on every pass", name, game_id, due, error,
                )
            return "failed"

    def _deadline_failed(self, deadline_id: int, error: str) -> str | None:
        """Keep ``error`` on a pending deadline's row; return the error it had before."""
        with self.sessions.begin() as session:
            deadline = session.get(Deadline, deadline_id, with_for_update=True)
            if deadline is None or deadline.status != "pending":
                return None
            previous, deadline.error = deadline.error, error
            return previous

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
                if not report.ok:
                    log.error("pass: %s", report.line())
                elif report.ingested or report.deadlines or report.delivered or report.overrides:
                    log.info("pass: %s", report.line())
                self.sync_timers(scheduler, after=report.now)
                self.wake.wait(timeout=self.settings.poll_interval)
                self.wake.clear()
        finally:
            scheduler.shutdown(wait=False)
            log.info("dealer stopped")

    def sync_timers(self, scheduler, after: datetime | None = None) -> int:  # type: ignore[no-untyped-def]
        """Make the scheduler hold exactly one timer per pending, unpaused deadline.

        With ``after`` (the time of the pass just run), deadlines due by then get no timer:
        that pass saw them due, so one still pending failed or is held, and the next poll
        retries it. A timer would wake the loop at once, again and again.
        """
        from apscheduler.triggers.date import DateTrigger

        query = select(Deadline.id, Deadline.due_at).where(
            Deadline.status == "pending", Deadline.paused.is_(False)
        )
        if after is not None:
            query = query.where(Deadline.due_at > after)
        with self.sessions() as session:
            rows = session.execute(query).all()
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
        _inbound.c.kind, _inbound.c.body, _inbound.c.sent_at, _inbound.c.source,
        _inbound.c.external_id, _inbound.c.target, _inbound.c.emoji, _inbound.c.removed,
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
        game_id=bindparam("new_game_id"),
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


FAILURE_REPLY = (
    "dealer could not handle this message; the host has been told.\n\n"
    "Nothing in it was applied. The host can replay it once the problem is fixed, and you "
    "will get the usual reply then: there is no need to send it again.\n"
)
"""The "could not handle" reply as plain text, for when even its template cannot render."""


def failure_reply(line: str, now: datetime) -> str:
    """The body of the reply to a message dealer could not handle, quoting its first line.

    It is rendered from ``common/failed.txt``, which ships with every install; should even
    that fail (the fault may be in rendering itself), the reply is the plain
    :data:`FAILURE_REPLY`.
    """
    try:
        return render("common/failed.txt", now, line=quote(line) if line else "")
    except Exception:
        log.exception("common/failed.txt could not be rendered; replying in plain text")
        return FAILURE_REPLY


def _describe(exc: BaseException) -> str:
    """``Type: message`` of an error, as stored with what it stopped."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
