"""What a pass reports, and what its groups use of the daemon."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Protocol

from sqlalchemy.orm import Session, sessionmaker

from dealer.shell.failures import describe

log = logging.getLogger(__name__)


class Daemon(Protocol):
    """What a group of messages or deadlines uses of the daemon: its sessions and its clock."""

    sessions: sessionmaker[Session]
    clock: Callable[[], datetime]


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
    """Posts parked in this pass (failed ``DEALER_PUBLISH_RETRIES`` times over ``DEALER_PUBLISH_PARK_AFTER`` hours)."""
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
    more: bool = False
    """A bounded pass stopped with work left: the loop runs the next one at once."""

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


def stays_pending(what: str, ids: list[int], exc: BaseException) -> None:
    """Log that a passing database error left ``what`` pending (the pass is retried)."""
    log.warning("%s %s left pending: the database failed (%s); retried when it is back",
                what, ", ".join(map(str, ids)), describe(exc))
