"""The pass: overrides, ingest, messages and deadlines in time order (a message sent at or
before a deadline counts for it), then delivery; ``dealer run --once`` is one pass.

What dealer cannot handle is never silent: a crashed message is stored ``failed`` and its
sender told; a crashed deadline keeps its error, stays pending and holds its game; either
makes the report not ``ok``. A passing database error (:func:`is_transient`) leaves the
work pending and ends the pass by raising: the loop waits for the store and runs it again.
"""

from __future__ import annotations

import logging
import sys
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
from dealer.shell import delivery, ingest
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
"""``dealer run``'s first group and batch size after a start, doubled each time up to the full size."""
OVERRIDES_RECHECK = 60.0
"""Seconds during which overrides read unchanged are not applied to the store again."""
PARKED_RECHECK = 60.0
"""Seconds between two counts of the parked posts while none is parked."""

class Dealer:
    """The daemon: the store, the inbox and the publisher, and one method per stage of the pass."""

    def __init__(self, settings: Settings, *, inbox: Inbox | None = None,
                 publisher: Publisher | None = None, clock: Callable[[], datetime] = utcnow):
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
        attach_platforms(self.publisher, self.reader, clock)
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

        With ``groups`` (``dealer run``) the pass is bounded to that many groups and batches, each
        committed as it goes, the first of a daemon's life small (:data:`FIRST_GROUP`): a daemon
        killed soon after each start still advances, posts included. ``report.more`` says work is left."""
        now = now or self.clock()
        started = time.monotonic()
        report = PassReport(now=now)
        report.overrides = self.apply_overrides(now)
        # On Postgres the messages are stored without waiting for the flush to disk and
        # acknowledged to the inbox once a later commit of this pass has waited for it: a
        # one-message pass waits for one flush fewer (docs/HOT_PATH.md).
        unflushed: list[Any] | None = [] if self.engine.dialect.name == "postgresql" else None
        self.ingest(now, report, unflushed)
        if unflushed and len(unflushed) > 1:
            # Several: acknowledged before the steps, at the cost of a flushed commit, so that a
            # daemon killed during a long pass does not store them all again in its next life.
            self.acknowledge(unflushed, flushed=False)
        applied = report.messages + report.deadlines
        first = None if groups is None else grown(FIRST_GROUP, self.bounded_groups, MESSAGE_GROUP)
        self.process_due(now, report, groups, first)
        if unflushed:  # a step's or a deadline's commit waited for the flush: it covers them
            self.acknowledge(unflushed, flushed=report.messages + report.deadlines > applied)
        self.deliver(report, batches=groups, first_batch=first)
        if groups is not None:
            self.bounded_groups += groups
        METRICS.pass_took(time.monotonic() - started)
        return report

    def apply_overrides(self, now: datetime) -> list[str]:
        """Apply the overrides (the file read afresh); a malformed one changes nothing and is reported
        once, never fatal; a passing database error is raised."""
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
        """Store every waiting inbox message raw (with ``unflushed``, not yet acknowledged)."""
        return ingest.ingest(self.inbox, self.engine, now, report or PassReport(), unflushed)

    def acknowledge(self, handles: list[Any], *, flushed: bool) -> None:
        """Acknowledge (and forget) the messages stored without waiting for the flush, once a later
        commit has waited for it (``flushed``), else after an empty one: until then the inbox keeps them."""
        if not flushed:
            with self.engine.begin() as connection:
                connection.execute(Q.FLUSH_COMMITTED)
        for handle in handles:
            ingest.acknowledge(self.inbox, handle)
        handles.clear()

    def process_due(self, now: datetime, report: PassReport | None = None, groups: int | None = None,
                    first: int | None = None) -> None:
        """Process stored messages and due deadlines, earliest first (:func:`process_due`)."""
        process_due(self, now, report, groups, first)

    def deliver(self, report: PassReport | None = None, batches: int | None = None,
                first_batch: int | None = None) -> int:
        """Send queued posts in order, then count the parked posts (logged when it changes, a metric)."""
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
        """Close the connections of both of the daemon's pools."""
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


def attach_platforms(publisher: Publisher, reader: Any, clock: Callable[[], datetime]) -> None:
    """Give the publishers that read the store theirs (an SMTP publisher its addressing, a
    Discourse one its reply threads, Discord's its follow-ups); under routes, each
    transport as it is made. A platform's module is imported only for a publisher of it
    (whose own module is then loaded): a daemon's start pays for no other platform."""
    from dealer.publish.routing import RoutingPublisher

    if isinstance(publisher, RoutingPublisher):
        publisher.for_each_transport(lambda transport: attach_platforms(transport, reader, clock))
        return
    if "dealer.publish.smtp" in sys.modules:
        from dealer.shell import mailing

        mailing.attach(publisher, reader)
    if "dealer.publish.discourse" in sys.modules:
        from dealer.shell import discourse

        discourse.attach(publisher, reader)
    if getattr(publisher, "format", "") == "discord":
        from dealer.shell import interactions

        interactions.attach(publisher, reader, clock)


# -- messages and deadlines, in time order ---------------------------------------------------


def grown(first: int, done: int, full: int) -> int:
    """The size of a group after ``done`` others: ``first``, doubled each time, at most ``full``."""
    return min(full, first << min(done, 16))


def process_due(dealer: Dealer, now: datetime, report: PassReport | None = None,
                groups: int | None = None, first: int | None = None) -> None:
    """Process stored messages and due deadlines, earliest first, until none is left (or
    ``groups`` are done); both are read again after each group, as a step may move a deadline."""
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


def deadline_group(deadlines: list[tuple[int, datetime, str]],
                   next_message: datetime | None) -> list[tuple[int, datetime, str]]:
    """The due deadlines to fire together: earliest first, due before the next message, one per
    game (a game's second waits: the first's step may move it)."""
    group: list[tuple[int, datetime, str]] = []
    games: set[str] = set()
    for deadline in deadlines:
        if deadline[2] in games or (next_message is not None and deadline[1] >= next_message):
            break
        games.add(deadline[2])
        group.append(deadline)
    return group
