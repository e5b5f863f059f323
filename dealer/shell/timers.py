"""The long-running daemon: timers, signals, and the loop of passes, woken by one APScheduler
timer, the poll interval and SIGHUP; SIGTERM and SIGINT stop it after the step in progress.
Nothing a pass raises stops the loop: it is logged and retried after a growing backoff."""

from __future__ import annotations

import logging
import os
import signal
import threading
from contextlib import suppress
from datetime import datetime, timezone
from typing import Any, Callable, TypeVar

from sqlalchemy import Engine

from dealer.shell.failures import describe
from dealer.shell.faults import fault
from dealer.shell.passes import Dealer, grown
from dealer.store import queries as Q
from dealer.store.transient import StoreUnavailable, cannot_write, is_transient

log = logging.getLogger(__name__)

BACKOFF = 1.0
"""Seconds waited after the first failed attempt; doubled after each further one."""
MAX_BACKOFF = 60.0
"""The longest wait between two attempts."""
PASS_GROUPS = 2
"""Groups of messages or deadlines (and delivery batches) in a daemon's first pass; doubled
from pass to pass, as the groups grow, up to :data:`FULL_PASS_GROUPS`."""
FULL_PASS_GROUPS = 20
"""Groups in a pass of a daemon that has run a few: a burst of 1,000 deadlines fires before
its posts are delivered, not interleaved with them (``bench/firing.py``)."""
ONCE_ATTEMPTS = 5
"""Attempts ``dealer run --once`` makes while the store is unreachable (about 15 s)."""

T = TypeVar("T")


def backoff(failures: int) -> float:
    """Seconds to wait after ``failures`` failed attempts in a row: 1, 2, 4, ... 60."""
    return min(MAX_BACKOFF, BACKOFF * 2 ** min(failures - 1, 16))


def keep_trying(dealer: Dealer, work: Callable[[], T], *, attempts: int | None = None,
                any_error: bool = False) -> T:
    """``work()``, retried after a backoff while the store is unreachable (``any_error``: every
    error); ``attempts`` bounds it (:class:`StoreUnavailable`). Raises at once if asked to stop."""
    failures = 0
    while True:
        try:
            result = work()
        except Exception as exc:
            transient = is_transient(exc)
            if not (transient or any_error) or dealer.stopping:
                raise
            failures += 1
            if attempts is not None and failures >= attempts:
                raise StoreUnavailable(
                    f"the database is unreachable after {failures} attempts: {describe(exc)}"
                ) from exc
            wait = backoff(failures)
            if transient and cannot_write(exc):
                # Nothing was acknowledged to the inbox: the messages wait there until the
                # store can take them (`dealer health` says so meanwhile).
                log.error("the store cannot write (%s): ingest stopped, messages stay in the "
                          "inbox; free space on the store's disk. Attempt %d failed, next in %g s",
                          describe(exc), failures, wait)
            elif transient:
                log.warning("database unreachable (%s); attempt %d failed, next in %g s",
                            describe(exc), failures, wait)
                # Connections of a server that went away are no use: open fresh ones.
                dealer.dispose()
            else:
                log.exception("the pass failed (%s); attempt %d, next in %g s",
                              describe(exc), failures, wait)
            dealer.sleep(wait)
            continue
        if failures:
            log.info("back after %d failed attempt%s", failures, "" if failures == 1 else "s")
        return result


class Timers:
    """APScheduler's scheduler, its thread started with the first timer, after the first pass
    that leaves no work: a crash-looping daemon never pays for it before its first commit."""

    def __init__(self) -> None:
        self.scheduler: Any = None

    def get_job(self, ident: str) -> Any:
        return None if self.scheduler is None else self.scheduler.get_job(ident)

    def add_job(self, *args: Any, **kwargs: Any) -> Any:
        if self.scheduler is None:
            from apscheduler.schedulers.background import BackgroundScheduler

            self.scheduler = BackgroundScheduler(
                timezone=timezone.utc,
                # Never drop a timer missed while the process was busy or asleep:
                # APScheduler's default grace of 1 s would silently skip it.
                job_defaults={"misfire_grace_time": None, "coalesce": True, "max_instances": 1},
            )
            self.scheduler.start()
        return self.scheduler.add_job(*args, **kwargs)

    def shutdown(self) -> None:
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)


def run_forever(dealer: Dealer) -> None:
    """Run passes until SIGTERM/SIGINT; SIGHUP re-reads the overrides."""
    install_signals(dealer)
    try:
        keep_trying(dealer, dealer.check)
    except Exception:
        if dealer.stopping:  # asked to stop while it waited for the store: a clean end
            log.info("dealer stopped before the store could be reached")
            return
        raise
    timers = Timers()
    log.info("dealer running; store %s", dealer.engine.url.render_as_string(hide_password=True))
    try:
        while not dealer.stopping:
            try:
                keep_trying(dealer, lambda: one_turn(dealer, timers), any_error=True)
            except Exception:
                if dealer.stopping:
                    break
                raise
            dealer.wake.wait(timeout=dealer.settings.poll_interval)
            dealer.wake.clear()
    finally:
        timers.shutdown()
        log.info("dealer stopped")


def one_turn(dealer: Dealer, scheduler: Any) -> None:
    """One turn of the loop: re-read the settings if asked, a pass, then the timers."""
    if dealer.reload_requested:
        dealer.reload_requested = False
        reload_settings(dealer)
    # A bounded pass (PASS_GROUPS groups, then as many delivery batches, more in later
    # passes), run again at once while work is left: a life's first passes are short, so a
    # daemon that keeps being killed soon after its start still completes passes and delivers.
    report = dealer.run_pass(groups=grown(PASS_GROUPS, dealer.bounded_groups, FULL_PASS_GROUPS))
    if not report.ok:
        log.error("pass: %s", report.line())
    elif report.ingested or report.deadlines or report.delivered or report.overrides:
        log.info("pass: %s", report.line())
    if report.more:
        # The next pass runs at once and takes every deadline due by then: no timer is
        # needed (nor read) until the work is done.
        dealer.wake.set()
    else:
        sync_timers(scheduler, dealer.reader, dealer.wake, after=report.now)
    fault("after-timers")


TIMER_ID = "next-deadline"
"""The id of the one timer :func:`sync_timers` keeps."""


def sync_timers(scheduler: Any, reader: Engine, wake: threading.Event,
                after: datetime | None = None) -> int:
    """Make ``scheduler`` hold one timer at the earliest pending, unpaused deadline; return how
    many it holds. One index read whatever the number of games; an earlier move is seen at the
    next poll. Deadlines due by ``after`` (failed or held) get none: it would wake the loop again and again."""
    from apscheduler.jobstores.base import JobLookupError
    from apscheduler.triggers.date import DateTrigger

    with reader.connect() as connection:
        row = Q.next_timer_deadline(connection, after or _DAWN)
    job = scheduler.get_job(TIMER_ID)
    if row is None:
        if job is not None:
            with suppress(JobLookupError):  # it may have fired, and gone, since get_job
                job.remove()
        return 0
    if job is None or getattr(job, "next_run_time", None) != row.due_at:
        scheduler.add_job(wake.set, DateTrigger(run_date=row.due_at), id=TIMER_ID, replace_existing=True)
    return 1


_DAWN = datetime(1, 1, 2, tzinfo=timezone.utc)
"""Before any deadline: ``sync_timers`` without ``after`` considers every pending one."""


def install_signals(dealer: Dealer) -> None:
    """SIGTERM and SIGINT stop ``dealer`` after its step; SIGHUP re-reads the overrides (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    global _relay
    if _relay is None:
        _relay = _SignalRelay()
    _relay.dealer = dealer
    signal.signal(signal.SIGTERM, _relay.handle)
    signal.signal(signal.SIGINT, _relay.handle)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _relay.handle)


class _SignalRelay:
    """A signal handler runs in the main thread between two of its bytecodes, maybe while it
    holds the lock of ``dealer.wake`` (in ``wait`` or ``clear``) or of a logging handler:
    a handler taking either would wait for itself. So the handler only sets the flag and
    writes the signal's number to a pipe; a thread of its own logs it and wakes the loop."""

    def __init__(self) -> None:
        self.dealer: Dealer | None = None
        self.reader, self.writer = os.pipe()
        os.set_blocking(self.writer, False)
        threading.Thread(target=self.relay, name="signal-relay", daemon=True).start()

    def handle(self, signum: int, _frame: Any) -> None:
        assert self.dealer is not None
        if signum == getattr(signal, "SIGHUP", None):
            self.dealer.reload_requested = True
        else:
            self.dealer.stopping = True
        try:
            os.write(self.writer, bytes([signum]))
        except BlockingIOError:  # the pipe is full: the thread has a wake-up to relay anyway
            pass

    def relay(self) -> None:
        while True:
            signum = os.read(self.reader, 1)[0]
            if signum == getattr(signal, "SIGHUP", None):
                log.info("SIGHUP: re-reading the deadline overrides")
            else:
                log.info("signal %s: stopping after this step", signum)
            if self.dealer is not None:
                self.dealer.wake.set()


_relay: _SignalRelay | None = None
"""The process's signal relay, made by the first :func:`install_signals`."""


def reload_settings(dealer: Dealer) -> None:
    """Re-read the deadline overrides on SIGHUP; settings that no longer validate are logged and kept."""
    try:
        fresh = dealer.settings.reread()
    except ValueError as exc:  # pydantic's ValidationError: keep the settings in force
        log.error("settings not re-read: %s", exc)
        return
    dealer.settings = dealer.settings.model_copy(
        update={"deadline_overrides": fresh.deadline_overrides}
    )
