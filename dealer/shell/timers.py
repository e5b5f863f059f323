"""The long-running daemon: timers, signals, and the loop of passes.

``dealer run`` repeats the pass (:class:`~dealer.shell.passes.Dealer`), woken by APScheduler
timers that mirror the pending deadline rows, by the inbox poll interval, and by SIGHUP
(which also re-reads the deadline overrides). SIGTERM and SIGINT stop it after the step in
progress.
"""

from __future__ import annotations

import logging
import signal
import threading
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session, sessionmaker

from dealer.shell.faults import fault
from dealer.store import queries as Q

if TYPE_CHECKING:
    from dealer.shell.passes import Dealer

log = logging.getLogger(__name__)


def run_forever(dealer: Dealer) -> None:
    """Run passes until SIGTERM/SIGINT; SIGHUP re-reads the overrides."""
    from apscheduler.schedulers.background import BackgroundScheduler

    dealer.check()
    scheduler = BackgroundScheduler(
        timezone=timezone.utc,
        # Never drop a timer missed while the process was busy or asleep: APScheduler's
        # default grace of 1 s would silently skip it.
        job_defaults={"misfire_grace_time": None, "coalesce": True, "max_instances": 1},
    )
    scheduler.start()
    install_signals(dealer)
    log.info("dealer running; store %s", dealer.engine.url.render_as_string(hide_password=True))
    try:
        while not dealer.stopping:
            if dealer.reload_requested:
                dealer.reload_requested = False
                reload_settings(dealer)
            report = dealer.run_pass()
            if not report.ok:
                log.error("pass: %s", report.line())
            elif report.ingested or report.deadlines or report.delivered or report.overrides:
                log.info("pass: %s", report.line())
            sync_timers(scheduler, dealer.sessions, dealer.wake, after=report.now)
            fault("after-timers")
            dealer.wake.wait(timeout=dealer.settings.poll_interval)
            dealer.wake.clear()
    finally:
        scheduler.shutdown(wait=False)
        log.info("dealer stopped")


def sync_timers(
    scheduler: Any, sessions: sessionmaker[Session], wake: threading.Event,
    after: datetime | None = None,
) -> int:
    """Make ``scheduler`` hold exactly one timer per pending, unpaused deadline, each
    setting ``wake``; return how many it holds.

    With ``after`` (the time of the pass just run), deadlines due by then get no timer:
    that pass saw them due, so one still pending failed or is held, and the next poll
    retries it. A timer would wake the loop at once, again and again.
    """
    from apscheduler.triggers.date import DateTrigger

    with sessions() as session:
        rows = Q.timer_deadlines(session, after)
    wanted = {f"deadline-{row.id}": row.due_at for row in rows}
    for job in scheduler.get_jobs():
        if job.id not in wanted:
            job.remove()
    for job_id, due in wanted.items():
        job = scheduler.get_job(job_id)
        if job is not None and getattr(job, "next_run_time", None) == due:
            continue
        scheduler.add_job(wake.set, DateTrigger(run_date=due), id=job_id, replace_existing=True)
    return len(wanted)


def install_signals(dealer: Dealer) -> None:
    """SIGTERM and SIGINT stop ``dealer`` after its current step; SIGHUP asks it to re-read
    the overrides. Only the main thread can install handlers: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum, _frame):  # type: ignore[no-untyped-def]
        log.info("signal %s: stopping after this step", signum)
        dealer.stopping = True
        dealer.wake.set()

    def reload(_signum, _frame):  # type: ignore[no-untyped-def]
        log.info("SIGHUP: re-reading the deadline overrides")
        dealer.reload_requested = True
        dealer.wake.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, reload)


def reload_settings(dealer: Dealer) -> None:
    """Re-read the settings' deadline overrides (on SIGHUP); a settings file that no longer
    validates is logged and the settings in force are kept."""
    try:
        fresh = dealer.settings.reread()
    except ValueError as exc:  # pydantic's ValidationError: keep the settings in force
        log.error("settings not re-read: %s", exc)
        return
    dealer.settings = dealer.settings.model_copy(
        update={"deadline_overrides": fresh.deadline_overrides}
    )
