"""Quarantined messages: mails whose sender could not be authenticated (docs/EMAIL.md).

A quarantined message is a row of ``inbound`` with the status ``quarantined`` and why in its
``error``; the pass never claims it (it claims ``pending`` ones), and no reply is sent.
The host releases one back to ``pending``: the next pass applies it at its own ``sent_at``.
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from dealer.store.models import Inbound

QUARANTINED = "quarantined"


def quarantined_messages(session: Session, limit: int = 20) -> list[Inbound]:
    """The newest quarantined messages, newest first."""
    return list(session.scalars(
        select(Inbound).where(Inbound.status == QUARANTINED)
        .order_by(Inbound.received_at.desc(), Inbound.id.desc()).limit(limit)
    ))


def count_quarantined(connection: Connection | Session) -> int:
    """How many stored messages are quarantined."""
    return connection.execute(
        select(func.count()).select_from(Inbound).where(Inbound.status == QUARANTINED)
    ).scalar() or 0


def release(session: Session, ids: list[int]) -> None:
    """Put the quarantined messages of ``ids`` back to pending (their quarantine note
    cleared): the next pass applies each at its own ``sent_at``."""
    session.execute(
        update(Inbound).where(Inbound.id.in_(ids), Inbound.status == QUARANTINED)
        .values(status="pending", error=None)
    )
