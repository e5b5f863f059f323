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

import contextlib
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
from dealer.shell import delivery, discourse, ingest, mailing, timers
from dealer.shell.failures import describe, failure_reply
from dealer.shell.faults import fault
from dealer.shell.messages import Outcome, process_inbound, read_senders_keeping_games
from dealer.shell.overrides import BadOverride, OverrideSpec, apply_overrides, read_overrides
from dealer.shell.steps import (
    GameHeld, keep_games, run_step, stage_step_write, staged_rows, staging, write_kept_steps,
)
from dealer.store import queries as Q
from dealer.store.db import check_schema, make_engine, reading_engine, session_factory
from dealer.store.models import Deadline, Inbound, Post
from dealer.store.transient import is_transient
from dealer.text import command_lines, escape_post, quote

log = logging.getLogger(__name__)

MESSAGE_BATCH = 200
"""Pending messages read at once by :func:`process_due`."""
MESSAGE_GROUP = 50
"""Messages applied in one transaction by :func:`process_messages`."""
DEADLINE_GROUP = 50
"""Due deadlines fired in one transaction by :func:`fire_deadlines`."""
OVERRIDES_RECHECK = 60.0
"""Seconds during which overrides read unchanged are not applied to the store again."""
PARKED_RECHECK = 60.0
"""Seconds between two counts of the parked posts while none is parked."""


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
        self.reader = reading_engine(self.engine)
        """For reads outside a transaction of their own (what is due, the next timer):
        no write lock on SQLite, in autocommit on Postgres
        (:func:`~dealer.store.db.reading_engine`)."""
        self.inbox = inbox or open_inbox(settings.inbox, settings.max_message_bytes, settings)
        self.publisher = publisher or open_publisher(settings.publish, settings)
        mailing.attach(self.publisher, self.reader)
        discourse.attach(self.publisher, self.reader)
        self.clock = clock
        self.wake = threading.Event()
        self.stopping = False
        self.reload_requested = True
        self.override_error: str | None = None
        """The overrides' error last reported (one is reported once, not every pass)."""
        self.overrides_in_store: tuple[list[OverrideSpec], float] | None = None
        """The overrides this daemon last brought the store in line with, and when
        (``time.monotonic``): the same ones read again within
        :data:`OVERRIDES_RECHECK` seconds need no transaction."""
        self.parked_checked = -PARKED_RECHECK
        """When (``time.monotonic``) the parked posts were last counted."""
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
        # On Postgres the messages are stored without waiting for the flush to disk, and
        # acknowledged to the inbox after a later commit of this pass waited for it
        # (`acknowledge`): a one-message pass waits for one flush fewer.
        unflushed: list[Any] | None = [] if self.engine.dialect.name == "postgresql" else None
        self.ingest(now, report, unflushed)
        applied = report.messages + report.deadlines
        self.process_due(now, report)
        if unflushed:
            self.acknowledge(unflushed, flushed=report.messages + report.deadlines > applied)
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
            applied = self.overrides_in_store
            if applied and applied[0] == specs and time.monotonic() - applied[1] < OVERRIDES_RECHECK:
                # Applying the same overrides again changes nothing (each is applied once,
                # when first seen): skip the store. It is still read now and then, in case
                # another replica, configured differently, changed it.
                self.override_error = None
                return []
            with self.sessions.begin() as session:
                changes = apply_overrides(session, specs, now)
            self.overrides_in_store = (specs, time.monotonic())
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

    def ingest(self, now: datetime, report: PassReport | None = None,
               unflushed: list[Any] | None = None) -> int:
        """Store every waiting inbox message raw (:func:`dealer.shell.ingest.ingest`; with
        ``unflushed``, not yet flushed to disk nor acknowledged: see :meth:`acknowledge`)."""
        return ingest.ingest(self.inbox, self.engine, now, report or PassReport(), unflushed)

    def acknowledge(self, handles: list[Any], *, flushed: bool) -> None:
        """Acknowledge to the inbox the messages :meth:`ingest` stored without waiting for
        the flush to disk, once that flush is done: ``flushed`` if a transaction that
        wrote (a message applied, a deadline fired) has committed since, waiting for its
        own flush, which covers every commit before it; else a transaction that writes
        nothing but its commit is made for them. Until then they stay in the inbox, which
        gives them again should the process die (they are then found stored, or stored
        again if the server lost them)."""
        if not flushed:
            with self.engine.begin() as connection:
                connection.execute(Q.FLUSH_COMMITTED)
        for handle in handles:
            ingest.acknowledge(self.inbox, handle)

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
        if not (report.failed or self.parked_seen
                or time.monotonic() - self.parked_checked >= PARKED_RECHECK):
            # Only this pass parking a post, or `outbox retry` (another process), changes
            # the count: counted after a park, while any is parked, and once a minute.
            report.parked = self.parked_seen
            return delivered
        with self.reader.connect() as connection:
            report.parked = Q.count_parked(connection)
        self.parked_checked = time.monotonic()
        METRICS.parked(report.parked)
        if report.parked != self.parked_seen:
            if report.parked:
                log.warning("%s post(s) parked after failing every attempt: `dealer outbox list "
                            "--failed` shows them, `dealer outbox retry` re-queues them", report.parked)
            else:
                log.info("no parked post any more")
            self.parked_seen = report.parked
        return delivered

    def dispose(self) -> None:
        """Close the connections of both of the daemon's pools (its engine's and its
        reader's): after the store went away, or at the end."""
        self.engine.dispose()
        self.reader.dispose()

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
        """The one timer, at the next pending deadline (:func:`dealer.shell.timers.sync_timers`)."""
        return timers.sync_timers(scheduler, self.reader, self.wake, after)


# -- messages and deadlines, in time order ---------------------------------------------------


def process_due(dealer: Dealer, now: datetime, report: PassReport | None = None) -> None:
    """Process stored messages and due deadlines, earliest first, until none is left.

    A message sent at or before a deadline is handled before it. Messages are read in
    batches, due deadlines too, both with one statement; both are read again after each
    group, as a step may have moved a deadline.
    """
    report = report or PassReport()
    skipped_messages: set[int] = set()  # taken by another daemon
    skipped_deadlines: set[int] = set()  # taken by another daemon, or failing
    while not dealer.stopping:
        with dealer.reader.connect() as connection:
            found = Q.due_now(connection, now, skipped_messages, skipped_deadlines,
                              MESSAGE_BATCH, DEADLINE_GROUP)
        messages, deadlines = found.messages, found.deadlines
        if not messages and not deadlines:
            return
        if deadlines and (not messages or deadlines[0][1] < messages[0][1]):
            group = deadline_group(deadlines, messages[0][1] if messages else None)
            skipped_deadlines |= fire_deadlines(dealer, group, report)
            continue
        due = [m for m in messages if not deadlines or m[1] <= deadlines[0][1]]
        group = due[:MESSAGE_GROUP]
        settled = process_messages(dealer, group, now, skipped_messages, skipped_deadlines, report)
        if settled and not deadlines and len(group) == len(messages) < MESSAGE_BATCH:
            # Every pending message was in the group and none moved a deadline, with none
            # due: reading again would find nothing (a message stored meanwhile by another
            # process wakes the next pass).
            return


def deadline_group(
    deadlines: list[tuple[int, datetime, str]], next_message: datetime | None
) -> list[tuple[int, datetime, str]]:
    """The due deadlines to fire together: the longest run, earliest first, due before the
    next pending message (a message sent at or before a deadline goes first), with at most
    one deadline per game. A game's second deadline waits for the next group, which reads
    it again after the first one's step (that step may have moved or cancelled it), and the
    order of due times is kept across games too."""
    group: list[tuple[int, datetime, str]] = []
    games: set[str] = set()
    for deadline in deadlines:
        if deadline[2] in games or (next_message is not None and deadline[1] >= next_message):
            break
        games.add(deadline[2])
        group.append(deadline)
    return group


@logs.scoped
def process_messages(
    dealer: Dealer,
    messages: list[tuple[int, datetime]],
    now: datetime,
    skipped_messages: set[int],
    skipped_deadlines: set[int],
    report: PassReport,
) -> bool:
    """Apply consecutive messages, all due before the next deadline, in one transaction;
    return whether that settled them all (none moved a deadline, none was another
    daemon's, nothing had to be applied again one by one).

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
    moved = False  # a message moved a deadline
    try:
        with dealer.sessions.begin() as session:
            # The claim takes the step lock alone first (Q.step_lock_alone), in the same
            # round trip.
            rows = Q.claim_messages(len(messages)).rows(
                session.connection(), {f"m{n}": message_id for n, (message_id, _) in enumerate(messages)})
            claimed = {row.id: row for row in map(Q.ClaimedMessage._make, rows)}
            # The group stands or falls as one: its append-only rows (history events,
            # ledger entries, draws, posts and replies, in order), the messages' outcomes
            # and the steps' own writes (the games' new states and deadline rows) are
            # written together before its commit (steps.staging), each kept row of a game
            # before anything reads that game again. A game a step of the group locked is
            # not read again by the next step of it (steps.KeptGame).
            # On Postgres the group commits with its last writes, in their round trip
            # (steps.staging, store.db.pipelined): nothing runs in the transaction after.
            with staging(session, steps=True, reuse=True, commit=True):
                # The senders and their unfinished games, for routing (kept while no step
                # changes whose games they are: a join, a game over), and those games,
                # locked and read at once: on Postgres one statement.
                read_senders_keeping_games(session, [row.sender for row in claimed.values()])
                for reached, (message_id, _) in enumerate(messages):
                    logs.bind(message_id=message_id, game_id=None)
                    inbound = claimed.get(message_id)
                    if inbound is None:
                        skipped_messages.add(message_id)
                        continue
                    outcome = process_inbound(session, inbound)
                    _record(dealer, session, message_id, outcome)
                    outcomes.append(outcome.status)
                    applied += 1
                    moved |= outcome.deadlines_changed
                    if outcome.deadlines_changed and reached + 1 < len(messages):
                        write_kept_steps(session)  # the new deadline rows the steps kept
                        nxt = Q.next_due_deadline(session.connection(), now, skipped_deadlines)
                        if nxt is not None and nxt[1] < messages[reached + 1][1]:
                            break
                fault("before-messages-commit")
        fault("after-messages-commit")
        report.messages += applied
        for status in outcomes:
            METRICS.message(status)
        return not moved and applied == len(messages)
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
        return False


def _stays_pending(what: str, ids: list[int], exc: BaseException) -> None:
    """Log that a passing database error left ``what`` pending (the pass is retried)."""
    log.warning("%s %s left pending: the database failed (%s); retried when it is back",
                what, ", ".join(map(str, ids)), describe(exc))


def _record(dealer: Dealer, session: Session, inbound_id: int, outcome: Outcome) -> None:
    """Store what became of a message (staged with its group's rows in a group)."""
    row = {"inbound_id": inbound_id, "new_status": outcome.status, "new_outcome": outcome.lines,
           "new_processed_at": dealer.clock(), "new_game_id": outcome.game_id}
    staged = staged_rows(session)
    if staged is not None:
        staged.add(Q.RECORD_OUTCOME, [row])
    else:
        session.execute(Q.RECORD_OUTCOME, row)


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
            # The claim shares the step lock first (Q.step_lock_shared).
            row = session.execute(Q.CLAIM_MESSAGE, {"id": inbound_id}).first()
            if row is None:
                return None
            inbound = Q.ClaimedMessage._make(row)
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


def _deadline_input(session: Session, game_id: str, kind: str, name: str, due: datetime) -> DeadlineFired:
    """The step input of a deadline of game ``game_id`` (of ruleset ``kind``): with what
    the ruleset asks to read from the inbox for it (``Rules.message_window``: GH-34's
    first messages of the week)."""
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
    """A step of a group fired without savepoints went wrong: the group is rolled back and
    fired again, each deadline in a savepoint."""


@logs.scoped
def fire_deadlines(
    dealer: Dealer, group: list[tuple[int, datetime, str]], report: PassReport | None = None
) -> set[int]:
    """Fire due deadlines of distinct games (:func:`deadline_group`) in one transaction;
    return the ids of those that did not fire (taken by another daemon, held or failed).

    The group's rows are locked with one statement (``SKIP LOCKED``: another daemon's
    deadline is passed over) and its steps share one commit, which saves a transaction,
    and on Postgres a flush to disk, per deadline. Each deadline is still all-or-nothing.
    The group is first fired without savepoints (two round trips fewer per deadline); if
    any step crashes or finds its game held, the whole group is rolled back and fired
    again with a savepoint per deadline, so that deadline alone is rolled back and the
    others fire. A deadline whose step crashed stays pending with its error kept on its
    row, holds its game, and is tried again on the next pass; a held one waits, pending.
    A crash of the process before the commit leaves every one of them pending, to be fired
    on the next pass; a passing database error rolls the group back and is raised (the
    pass is retried).
    """
    report = report if report is not None else PassReport()
    try:
        try:
            outcome = _fire_group(dealer, group, savepoints=False)
        except _Redo:
            outcome = _fire_group(dealer, group, savepoints=True)
    except Exception as exc:
        if is_transient(exc):
            _stays_pending("deadlines", [deadline_id for deadline_id, _, _ in group], exc)
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
    dealer: Dealer, group: list[tuple[int, datetime, str]], *, savepoints: bool
) -> tuple[set[int], list[tuple[str, str, datetime, datetime, str | None]], list[_Crash], int]:
    """One transaction of :func:`fire_deadlines`: ``(missed, fired, crashes, held)``.
    Without ``savepoints``, a step that crashes or is held raises :class:`_Redo` (the
    transaction is rolled back)."""
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
        # Without savepoints every step stands or falls with the group: their append-only
        # rows are inserted together at the end (steps.staging); if that insert fails, the
        # group is fired again with a savepoint per deadline, as if a step had failed.
        try:
            # A group of several games holds the step lock alone: its steps reuse what an
            # earlier step of it left of a game (steps.KeptGame), its games locked and read
            # in one statement.
            reuse = len(group) > 1
            # On Postgres the group commits with its last writes, in their round trip
            # (steps.staging, store.db.pipelined): nothing runs in the transaction after.
            with contextlib.nullcontext() if savepoints else staging(
                    session, steps=True, reuse=reuse, commit=True):
                if not savepoints and reuse:
                    keep_games(session, [row.game_id for row in locked.values()])
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


def _fire(dealer: Dealer, session: Session, row: Q.LockedDeadline) -> datetime | None:
    """Mark one locked deadline (a row of ``Q.LOCK_DEADLINES``) fired and run its step;
    return when it fired, or None if it no longer stands as it was locked."""
    fired_at = dealer.clock()
    mark = {"deadline_id": row.id, "due": row.due_at, "new_fired_at": fired_at}
    # In a group fired without savepoints the mark is kept with the group's rows and
    # written with theirs (steps.StagedRows), unless an earlier step of the group stepped
    # this game (a child's end stepping its parent) and may have cancelled, paused or
    # moved it: it is written now, and its row count says whether it still stands.
    if not stage_step_write(session, row.game_id, Q.MARK_FIRED, [mark], firing=row.id):
        # The connection is asked for here, not before: in a savepoint, the session emits
        # the SAVEPOINT when its connection is next asked for.
        if not session.connection().execute(Q.MARK_FIRED, mark).rowcount:
            # The next read of the due deadlines sees it as it now stands.
            return None
    run_step(session, row.game_id, row.due_at,
             _deadline_input(session, row.game_id, row.kind, row.name, row.due_at),
             origin=f"deadline:{row.id}", firing=row.id)
    return fired_at


def _deadline_crashed(
    dealer: Dealer, deadline_id: int, name: str | None, game_id: str | None,
    due: datetime | None, exc: BaseException, report: PassReport | None,
) -> None:
    """A deadline's step crashed (rolled back): keep the error on its row, count it in
    ``report`` and log it (with its traceback the first time)."""
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


def deadline_failed(dealer: Dealer, deadline_id: int, error: str) -> str | None:
    """Keep ``error`` on a pending deadline's row; return the error it had before."""
    with dealer.sessions.begin() as session:
        deadline = session.get(Deadline, deadline_id, with_for_update=True)
        if deadline is None or deadline.status != "pending":
            return None
        previous, deadline.error = deadline.error, error
        return previous
