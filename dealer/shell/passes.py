"""The pass: overrides, ingest, messages and deadlines in time order, then delivery.

One *pass* does, in order: apply the admin overrides, store every new inbox message raw
(:mod:`dealer.shell.ingest`), process stored messages and due deadlines interleaved by time
(a message sent at or before a deadline counts for it, even if it was read later), and
deliver queued posts (:mod:`dealer.shell.delivery`). ``dealer run --once`` is one pass;
``dealer run`` repeats it (:mod:`dealer.shell.timers`). Each message and each deadline is
one step (:mod:`dealer.shell.steps`) in one transaction.

What dealer cannot handle is never silent. A message whose handling crashes (a missing
template, a bug) is logged with its traceback, stored ``failed`` with its error, and its
sender gets one private "could not handle" reply; ``dealer inbox retry`` puts it back to
pending once the cause is fixed. A deadline whose step crashes is logged, keeps its error
on its row and stays pending: it is retried on every pass, and until it fires its game is
held (messages and later deadlines of that game wait, pending). Either makes the pass's
report not ``ok``, so ``dealer run --once`` exits non-zero.

Only an error in dealer's own code does that. A database error that passes (a lost
connection, a lock timeout, a deadlock, a serialization failure:
:func:`dealer.store.transient.is_transient`) rolls back the step, leaves the message or
the deadline pending with nothing recorded against it, and ends the pass by raising: the
daemon waits for the store and runs the pass again (:mod:`dealer.shell.timers`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from sqlalchemy.orm import Session

from dealer.clock import utcnow
from dealer.history import DeadlineFired
from dealer import logs
from dealer.games import rules_for
from dealer.inbox import Inbox, open_inbox
from dealer.metrics import METRICS
from dealer.publish import Publisher, open_publisher
from dealer.render import set_fairness_url
from dealer.settings import Settings
from dealer.shell import delivery, ingest, timers
from dealer.shell.failures import describe, failure_reply
from dealer.shell.faults import fault
from dealer.shell.messages import Outcome, process_inbound
from dealer.shell.overrides import BadOverride, apply_overrides, read_overrides
from dealer.shell.steps import GameHeld, run_step
from dealer.store import queries as Q
from dealer.store.db import check_schema, make_engine, session_factory
from dealer.store.models import Deadline, Inbound, Post
from dealer.store.transient import is_transient
from dealer.text import command_lines, escape_post, quote

log = logging.getLogger(__name__)

MESSAGE_BATCH = 200
"""Pending messages read at once by :func:`process_due`."""
MESSAGE_GROUP = 50
"""Messages applied in one transaction by :func:`process_messages`."""


@dataclass
class PassReport:
    """What one pass did."""

    ingested: int = 0
    duplicates: int = 0
    conflicts: int = 0
    """Messages with a stored message's id and another text (kept apart, not applied)."""
    unreadable: int = 0
    messages: int = 0
    deadlines: int = 0
    delivered: int = 0
    failed: int = 0
    """Posts parked in this pass (failed ``DEALER_PUBLISH_RETRIES`` times)."""
    retried: int = 0
    """Posts refused by the transport in this pass, to be tried again after a backoff."""
    dropped: int = 0
    """Stale posts dropped unsent (a reminder of a deadline already passed)."""
    parked: int = 0
    """Posts parked in the store after this pass (this pass's and earlier ones)."""
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
            f"ingested {self.ingested} (duplicates {self.duplicates}, "
            + (f"conflicting {self.conflicts}, " if self.conflicts else "")
            + f"unreadable {self.unreadable}), "
            f"messages {self.messages}, deadlines {self.deadlines}, "
            f"posts delivered {self.delivered} (failed {self.failed})"
        )
        if self.retried or self.dropped:
            line += f", retried later {self.retried}, dropped as stale {self.dropped}"
        if self.parked:
            line += f"; {self.parked} parked post(s) wait for `dealer outbox retry`"
        if not self.ok or self.held:
            line += (
                f"; NOT HANDLED: messages {len(self.failed_messages)}, "
                f"deadlines {len(self.failed_deadlines)}, held {self.held}"
            )
        return line


class Dealer:
    """The daemon: the store, the inbox and the publisher, and one method per stage of the
    pass. Each stage lives in its own module; this class only holds what they share."""

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
        self.override_error: str | None = None
        """The overrides' error last reported (one is reported once, not every pass)."""
        self.sleep: Callable[[float], None] = self._sleep
        """How the daemon waits between attempts while the store is unreachable."""
        self.parked_seen = 0
        """The parked-post count last logged (a change is logged, not every pass)."""
        self.unrecorded_sends: dict[str, str | None] = {}
        """Posts sent whose "delivered" mark was lost with the connection (by key): marked,
        not sent again, on the next pass (:func:`dealer.shell.delivery.deliver`)."""

    def run_pass(self, now: datetime | None = None) -> PassReport:
        """Overrides, ingest, messages and deadlines in time order, then delivery."""
        now = now or self.clock()
        started = time.monotonic()
        report = PassReport(now=now)
        report.overrides = self.apply_overrides(now)
        self.ingest(now, report)
        self.process_due(now, report)
        self.deliver(report)
        METRICS.pass_took(time.monotonic() - started)
        return report

    def apply_overrides(self, now: datetime) -> list[str]:
        """Apply ``DEALER_DEADLINE_OVERRIDES`` and the overrides file (read afresh on every
        pass). A malformed one changes nothing and is reported once (again only when the
        error changes), never fatal; a database error that passes is raised (the loop
        waits for the store)."""
        try:
            specs = read_overrides(self.settings.deadline_overrides, self.settings.overrides_file)
            with self.sessions.begin() as session:
                changes = apply_overrides(session, specs, now)
        except Exception as exc:
            if is_transient(exc):
                raise
            error = str(exc) if isinstance(exc, BadOverride) else describe(exc)
            if error == self.override_error:
                return []
            self.override_error = error
            if isinstance(exc, BadOverride):
                log.error("deadline overrides not applied: %s", error)
            else:
                log.exception("deadline overrides not applied: %s", error)
            return [f"error: {error}"]
        self.override_error = None
        for change in changes:
            log.info("override: %s", change)
        return changes

    def ingest(self, now: datetime, report: PassReport | None = None) -> int:
        """Store every waiting inbox message raw (:func:`dealer.shell.ingest.ingest`)."""
        return ingest.ingest(self.inbox, self.engine, now, report or PassReport())

    def process_due(self, now: datetime, report: PassReport | None = None) -> None:
        """Process stored messages and due deadlines, earliest first (:func:`process_due`)."""
        process_due(self, now, report)

    def deliver(self, report: PassReport | None = None) -> int:
        """Send queued posts in order (:func:`dealer.shell.delivery.deliver`), then count the
        parked posts: logged when the count changes, exposed as a metric."""
        report = report or PassReport()
        delivered = delivery.deliver(
            self.engine, self.publisher, report,
            retries=self.settings.publish_retries, first_backoff=self.settings.publish_backoff,
            now=report.now or self.clock(), clock=self.clock, stopping=lambda: self.stopping,
            unrecorded=self.unrecorded_sends,
        )
        with self.engine.connect() as connection:
            report.parked = Q.count_parked(connection)
        METRICS.parked(report.parked)
        if report.parked != self.parked_seen:
            if report.parked:
                log.warning("%s post(s) parked after failing every attempt: `dealer outbox list "
                            "--failed` shows them, `dealer outbox retry` re-queues them", report.parked)
            else:
                log.info("no parked post any more")
            self.parked_seen = report.parked
        return delivered

    def check(self) -> None:
        """Refuse to run on an out-of-date schema (raises ``SchemaOutOfDate``)."""
        check_schema(self.engine)

    def _sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less if the daemon is asked to stop."""
        deadline = time.monotonic() + seconds
        while not self.stopping and (left := deadline - time.monotonic()) > 0:
            self.wake.wait(timeout=left)
            self.wake.clear()

    def run_forever(self) -> None:
        """Run passes until SIGTERM/SIGINT (:func:`dealer.shell.timers.run_forever`)."""
        timers.run_forever(self)

    def sync_timers(self, scheduler: Any, after: datetime | None = None) -> int:
        """One timer per pending deadline (:func:`dealer.shell.timers.sync_timers`)."""
        return timers.sync_timers(scheduler, self.sessions, self.wake, after)


# -- messages and deadlines, in time order ---------------------------------------------------


def process_due(dealer: Dealer, now: datetime, report: PassReport | None = None) -> None:
    """Process stored messages and due deadlines, earliest first, until none is left.

    A message sent at or before a deadline is handled before it. Messages are read in
    batches; the next due deadline is read again whenever a step may have moved it.
    """
    report = report or PassReport()
    skipped_messages: set[int] = set()  # taken by another daemon
    skipped_deadlines: set[int] = set()  # taken by another daemon, or failing
    while not dealer.stopping:
        with dealer.engine.connect() as connection:
            messages = Q.pending_messages(connection, skipped_messages, MESSAGE_BATCH)
            deadline = Q.next_due_deadline(connection, now, skipped_deadlines)
        if not messages and deadline is None:
            return
        if deadline is not None and (not messages or deadline[1] < messages[0][1]):
            result = fire_deadline(dealer, deadline[0], report)
            if result == "fired":
                report.deadlines += 1
            else:
                skipped_deadlines.add(deadline[0])
            continue
        due = [m for m in messages if deadline is None or m[1] <= deadline[1]]
        process_messages(dealer, due[:MESSAGE_GROUP], now, skipped_messages, skipped_deadlines, report)


@logs.scoped
def process_messages(
    dealer: Dealer,
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
    outcomes: list[str] = []
    try:
        with dealer.sessions.begin() as session:
            Q.step_lock(session, group=True)
            for reached, (message_id, _) in enumerate(messages):
                logs.bind(message_id=message_id, game_id=None)
                inbound = session.execute(Q.CLAIM_MESSAGE, {"id": message_id}).first()
                if inbound is None:
                    skipped_messages.add(message_id)
                    continue
                outcome = process_inbound(session, inbound)
                _record(dealer, session, message_id, outcome)
                outcomes.append(outcome.status)
                applied += 1
                if outcome.deadlines_changed and reached + 1 < len(messages):
                    nxt = Q.next_due_deadline(session.connection(), now, skipped_deadlines)
                    if nxt is not None and nxt[1] < messages[reached + 1][1]:
                        break
            fault("before-messages-commit")
        fault("after-messages-commit")
        report.messages += applied
        for status in outcomes:
            METRICS.message(status)
    except Exception as exc:
        if is_transient(exc):
            _stays_pending("messages", [m for m, _ in messages[: reached + 1]], exc)
            raise
        if not isinstance(exc, GameHeld):  # the faulty message's own log has the traceback
            log.warning("a group of messages failed (%s); applying them one by one", describe(exc))
        for message_id, _ in messages[: reached + 1]:
            result = process_message(dealer, message_id, report)
            if result in (None, "held"):
                skipped_messages.add(message_id)
            elif result != "failed":
                report.messages += 1


def _stays_pending(what: str, ids: list[int], exc: BaseException) -> None:
    """Log that a passing database error left ``what`` pending (the pass is retried)."""
    log.warning("%s %s left pending: the database failed (%s); retried when it is back",
                what, ", ".join(map(str, ids)), describe(exc))


def _record(dealer: Dealer, session: Session, inbound_id: int, outcome: Outcome) -> None:
    session.execute(
        Q.RECORD_OUTCOME,
        {"inbound_id": inbound_id, "new_status": outcome.status, "new_outcome": outcome.lines,
         "new_processed_at": dealer.clock(), "new_game_id": outcome.game_id},
    )


@logs.scoped
def process_message(dealer: Dealer, inbound_id: int, report: PassReport | None = None) -> str | None:
    """Apply one stored message in one transaction.

    Returns None if another daemon has it, else what became of it: its outcome's status
    (``applied``, ``rejected``, ``ignored``), ``held`` (its game waits behind a failed
    deadline: it stays pending) or ``failed`` (see :func:`message_failed`).
    """
    logs.bind(message_id=inbound_id)
    try:
        with dealer.sessions.begin() as session:
            Q.step_lock(session, group=False)
            inbound = session.execute(Q.CLAIM_MESSAGE, {"id": inbound_id}).first()
            if inbound is None:
                return None
            outcome = process_inbound(session, inbound)
            _record(dealer, session, inbound_id, outcome)
        METRICS.message(outcome.status)
        return outcome.status
    except GameHeld as held:
        log.info("message %s waits, pending: %s", inbound_id, held)
        METRICS.message("held")
        if report is not None:
            report.held += 1
        return "held"
    except Exception as exc:  # a bug must not stop the daemon or lose the message
        if is_transient(exc):
            _stays_pending("message", [inbound_id], exc)
            raise
        log.exception(
            "message %s could NOT be handled (%s); it is stored as failed and its sender "
            "told. Fix the cause, then `dealer inbox retry %s`",
            inbound_id, describe(exc), inbound_id,
        )
        METRICS.message("failed")
        if report is not None:
            report.failed_messages.append(inbound_id)
        try:
            message_failed(dealer, inbound_id, exc)
        except Exception:
            log.exception("message %s could not even be marked failed; it stays pending", inbound_id)
        return "failed"


def message_failed(dealer: Dealer, inbound_id: int, exc: BaseException) -> None:
    """Store a message dealer could not handle as ``failed``, with its error, and queue
    its sender's one "could not handle" reply (in one transaction)."""
    now = dealer.clock()
    with dealer.sessions.begin() as session:
        inbound = session.get(Inbound, inbound_id, with_for_update=True)
        if inbound is None or inbound.status != "pending":
            return
        error = describe(exc)
        inbound.status = "failed"
        inbound.error = error
        inbound.outcome = [{"result": "failed", "detail": error}]
        inbound.processed_at = now
        key = f"in:{inbound_id}:failed"
        if Q.post_exists(session, key):
            return  # failed before, retried, failed again: the sender was told once
        lines = command_lines(inbound.body)
        first = lines[0] if lines else ""
        session.add(Post(
            key=key, game_id=None, channel="pm", recipient=inbound.sender, kind="failed",
            subject=escape_post(f"Not handled: {quote(first, 60)}" if first else "Not handled"),
            body=failure_reply(first, now), created_at=now, status="pending", attempts=0,
        ))


def _deadline_input(session: Session, game_id: str, name: str, due: datetime) -> DeadlineFired:
    """The step input of a deadline: with what the game's ruleset asks to read from the
    inbox for it (``Rules.message_window``: GH-34's first messages of the week)."""
    game = Q.game_by_id(session, game_id)
    since = rules_for(game.kind).message_window(name) if game is not None else None
    if since is None:
        return DeadlineFired(deadline=name)
    return DeadlineFired(deadline=name, first_messages=Q.first_messages(session, game_id, since, due))


@logs.scoped
def fire_deadline(dealer: Dealer, deadline_id: int, report: PassReport | None = None) -> str:
    """Fire one due deadline in one transaction.

    Returns ``fired``; ``gone`` if it is no longer due here (fired, cancelled, paused or
    taken by another daemon); ``held`` if its game waits behind an earlier failed
    deadline; ``failed`` if its step crashed: it then stays pending with its error kept
    on its row, holds its game, and is tried again on the next pass.
    """
    name = due = game_id = None
    try:
        with dealer.sessions.begin() as session:
            Q.step_lock(session, group=False)
            deadline = Q.claim_deadline(session, deadline_id)
            if deadline is None:
                return "gone"
            name, due, game_id, previous = deadline.name, deadline.due_at, deadline.game_id, deadline.error
            logs.bind(game_id=game_id, deadline=name)
            fired_at = deadline.fired_at = dealer.clock()
            deadline.status = "fired"
            deadline.error = None
            session.flush()
            run_step(session, game_id, due, _deadline_input(session, game_id, name, due),
                     origin=f"deadline:{deadline.id}", firing=deadline.id)
            fault("before-deadline-commit")
        METRICS.deadline_fired((fired_at - due).total_seconds())
        fault("after-deadline-commit")
        if previous is not None:
            log.warning("deadline %s of game %s fired at last; the game goes on", name, game_id)
        return "fired"
    except GameHeld as held:
        log.info("deadline %s waits, pending: %s", deadline_id, held)
        if report is not None:
            report.held += 1
        return "held"
    except Exception as exc:
        if is_transient(exc):
            _stays_pending("deadline", [deadline_id], exc)
            raise
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
            log.exception(
                "deadline %s of game %s (due %s) could NOT be fired (%s); it stays pending, "
                "holds its game and is retried on every pass", name, game_id, due, error,
            )
        return "failed"


def deadline_failed(dealer: Dealer, deadline_id: int, error: str) -> str | None:
    """Keep ``error`` on a pending deadline's row; return the error it had before."""
    with dealer.sessions.begin() as session:
        deadline = session.get(Deadline, deadline_id, with_for_update=True)
        if deadline is None or deadline.status != "pending":
            return None
        previous, deadline.error = deadline.error, error
        return previous
