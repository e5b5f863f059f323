"""A group of messages applied in one transaction, and one message alone when the group
cannot be (a faulty message, a held game): what becomes of each is recorded with it.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.orm import Session

from dealer import logs
from dealer.metrics import METRICS
from dealer.shell.failures import describe, failure_reply
from dealer.shell.faults import fault
from dealer.shell.messages import process_inbound
from dealer.shell.replies import Outcome
from dealer.shell.report import Daemon, PassReport, stays_pending
from dealer.shell.routing import read_senders_keeping_games
from dealer.shell.steps import GameHeld
from dealer.shell import unit_of_work
from dealer.store import queries as Q
from dealer.store.models import Inbound, Post
from dealer.store.transient import is_transient
from dealer.text import command_lines, escape_post, quote

log = logging.getLogger(__name__)


@logs.scoped
def process_messages(dealer: Daemon, messages: list[tuple[int, datetime]], now: datetime,
                     skipped_messages: set[int], skipped_deadlines: set[int],
                     report: PassReport) -> bool:
    """Apply consecutive messages, due before the next deadline, in one transaction; return
    whether that settled them all. A message moving a deadline before the next ends the
    group; an error or a held game rolls it back, to be applied one by one."""
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
            # The group stands or falls as one (unit_of_work.group); its rows go with the commit.
            with unit_of_work.group(session, own_writes=True, keep_games=True, commit=True) as unit:
                # The senders and their unfinished games, for routing, those games locked.
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
                        unit.before_reading()  # the new deadline rows the steps staged
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
            stays_pending("messages", [m for m, _ in messages[: reached + 1]], exc)
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


def _record(dealer: Daemon, session: Session, inbound_id: int, outcome: Outcome) -> None:
    """Store what became of a message (staged with its group's rows in a group)."""
    row = {"inbound_id": inbound_id, "new_status": outcome.status, "new_outcome": outcome.lines,
           "new_processed_at": dealer.clock(), "new_game_id": outcome.game_id}
    unit_of_work.of(session).add(Q.RECORD_OUTCOME, [row])


@logs.scoped
def process_message(dealer: Daemon, inbound_id: int, report: PassReport | None = None) -> str | None:
    """Apply one stored message in one transaction; return None if another daemon has it, else
    its status (``applied``, ``rejected``, ``ignored``, ``held`` or ``failed``)."""
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
            stays_pending("message", [inbound_id], exc)
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


def message_failed(dealer: Daemon, inbound_id: int, exc: BaseException) -> None:
    """Store a message dealer could not handle as ``failed`` and queue its sender's one reply."""
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
