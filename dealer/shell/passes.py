"""The pass: overrides, ingest, messages and deadlines in time order, then delivery.

One *pass* does, in order: apply the admin overrides, store every new inbox message raw
(:mod:`dealer.shell.ingest`), process stored messages and due deadlines interleaved by time
(a message sent at or before a deadline counts for it, even if it was read later), and
deliver queued posts (:mod:`dealer.shell.delivery`). ``dealer run --once`` is one pass;
``dealer run`` repeats it (:mod:`dealer.shell.timers`). Each message and each deadline is
one step (:mod:`dealer.shell.steps`); consecutive ones share a transaction
(:mod:`dealer.shell.message_groups`, :mod:`dealer.shell.deadline_groups`).

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
from datetime import datetime, timedelta
from typing import Any, Callable

from dealer.clock import utcnow
from dealer.inbox import Inbox, open_inbox
from dealer.metrics import METRICS
from dealer.publish import Publisher, open_publisher
from dealer.detail import set_post_detail
from dealer.render import set_fairness_url, set_timezone
from dealer.routes import post_detail_policy
from dealer.settings import Settings
from dealer.shell import delivery, discourse, ingest, interactions, mailing
from dealer.shell.deadline_groups import fire_deadlines
from dealer.shell.failures import describe
from dealer.shell.message_groups import process_messages
from dealer.shell.overrides import BadOverride, OverrideSpec, apply_overrides, read_overrides
from dealer.shell.report import PassReport
from dealer.store import queries as Q
from dealer.store.db import check_schema, make_engine, reading_engine, session_factory
from dealer.store.transient import is_transient

log = logging.getLogger(__name__)

MESSAGE_BATCH = 200
"""Pending messages read at once by :func:`process_due`."""
MESSAGE_GROUP = 50
"""Messages applied in one transaction by :func:`process_messages`."""
DEADLINE_GROUP = 50
"""Due deadlines fired in one transaction by :func:`fire_deadlines`."""
FIRST_GROUP = 5
"""In ``dealer run``, the size of a daemon's first group of messages or deadlines and of
its first delivery batch after its start; each next one is twice the last, up to the full
size: 5, 10, 20, 40, 50 (:func:`grown`)."""
OVERRIDES_RECHECK = 60.0
"""Seconds during which overrides read unchanged are not applied to the store again."""
PARKED_RECHECK = 60.0
"""Seconds between two counts of the parked posts while none is parked."""

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
        set_post_detail(post_detail_policy(settings.post_detail, settings.routes, settings.publish,
                                           settings.web_url))
        set_timezone(settings.timezone)
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
        interactions.attach(self.publisher, self.reader, clock)
        self.clock = clock
        self.wake = threading.Event()
        self.stopping = False
        self.reload_requested = False
        """SIGHUP asks for the settings to be read again (they were just read: not at start)."""
        self.bounded_groups = 0
        """Groups (and delivery batches) this daemon's bounded passes have had room for: the
        first ones of a life are small (:data:`FIRST_GROUP`)."""
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

    def run_pass(self, now: datetime | None = None, *, groups: int | None = None) -> PassReport:
        """Overrides, ingest, messages and deadlines in time order, then delivery.

        With ``groups`` the pass is bounded (``dealer run``'s): at most that many groups of
        messages or deadlines, then at most that many delivery batches, each committed as
        it goes; ``report.more`` says work is left for the next pass. The first groups and
        batches of the daemon's life are small and grow (:data:`FIRST_GROUP`: 5, 10, 20,
        40, then full). A daemon killed soon after each start (a crash loop) so commits
        early, completes passes and advances on every front, posts included. Without it
        (``--once``, tests) the pass does everything due, in full groups.
        """
        now = now or self.clock()
        started = time.monotonic()
        report = PassReport(now=now)
        report.overrides = self.apply_overrides(now)
        # On Postgres the messages are stored without waiting for the flush to disk, and
        # acknowledged to the inbox after a later commit of this pass waited for it
        # (`acknowledge`): a one-message pass waits for one flush fewer.
        unflushed: list[Any] | None = [] if self.engine.dialect.name == "postgresql" else None
        self.ingest(now, report, unflushed)
        if unflushed and len(unflushed) > 1:
            # More than one message: acknowledge them before the steps, at the cost of one
            # flushed commit, so that a daemon killed during a long pass (a crash loop, a
            # backlog) does not read and store them all again in its next life.
            self.acknowledge(unflushed, flushed=False)
            unflushed.clear()
        applied = report.messages + report.deadlines
        first = None if groups is None else grown(FIRST_GROUP, self.bounded_groups, MESSAGE_GROUP)
        self.process_due(now, report, groups, first)
        if unflushed:
            self.acknowledge(unflushed, flushed=report.messages + report.deadlines > applied)
        self.deliver(report, batches=groups, first_batch=first)
        if groups is not None:
            self.bounded_groups += groups
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

    def process_due(self, now: datetime, report: PassReport | None = None, groups: int | None = None,
                    first: int | None = None) -> None:
        """Process stored messages and due deadlines, earliest first (:func:`process_due`)."""
        process_due(self, now, report, groups, first)

    def deliver(self, report: PassReport | None = None, batches: int | None = None,
                first_batch: int | None = None) -> int:
        """Send queued posts in order (:func:`dealer.shell.delivery.deliver`; at most
        ``batches`` batches, the first of ``first_batch`` posts), then count the parked
        posts: logged when the count changes, exposed as a metric."""
        report = report or PassReport()
        now = report.now or self.clock()
        if self.parked_seen:  # parked posts due again are retried on their own
            delivery.unpark_due(self.engine, now)
        delivered = delivery.deliver(
            self.engine, self.publisher, report,
            retries=self.settings.publish_retries, first_backoff=self.settings.publish_backoff,
            now=now, clock=self.clock, stopping=lambda: self.stopping,
            unrecorded=self.unrecorded_sends,
            park_after=timedelta(hours=self.settings.publish_park_after), batches=batches,
            first_batch=first_batch,
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
                            "--failed` shows them; each is tried again after its backoff, "
                            "`dealer outbox retry` re-queues them now", report.parked)
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


# -- messages and deadlines, in time order ---------------------------------------------------


def grown(first: int, done: int, full: int) -> int:
    """The size of a group after ``done`` others, the first of ``first``, each twice the
    last, at most ``full``."""
    return min(full, first << min(done, 16))


def process_due(dealer: Dealer, now: datetime, report: PassReport | None = None,
                groups: int | None = None, first: int | None = None) -> None:
    """Process stored messages and due deadlines, earliest first, until none is left (or,
    with ``groups``, that many groups are done: ``report.more``). With ``first`` the first
    group holds at most that many, each next one twice as many, up to the full group
    (:func:`grown`).

    A message sent at or before a deadline is handled before it. Messages are read in
    batches, due deadlines too, both with one statement; both are read again after each
    group, as a step may have moved a deadline.
    """
    report = report or PassReport()
    skipped_messages: set[int] = set()  # taken by another daemon
    skipped_deadlines: set[int] = set()  # taken by another daemon, or failing
    done = 0
    while not dealer.stopping:
        with dealer.reader.connect() as connection:
            found = Q.due_now(connection, now, skipped_messages, skipped_deadlines,
                              MESSAGE_BATCH, DEADLINE_GROUP)
        messages, deadlines = found.messages, found.deadlines
        if not messages and not deadlines:
            return
        if groups is not None and done >= groups:
            report.more = True  # each group is committed: the next pass goes on from here
            return
        size = MESSAGE_GROUP if first is None else grown(first, done, MESSAGE_GROUP)
        done += 1
        if deadlines and (not messages or deadlines[0][1] < messages[0][1]):
            group = deadline_group(deadlines[:size], messages[0][1] if messages else None)
            skipped_deadlines |= fire_deadlines(dealer, group, report)
            continue
        due = [m for m in messages if not deadlines or m[1] <= deadlines[0][1]]
        group = due[:size]
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
