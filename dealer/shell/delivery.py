"""Delivery: send queued posts through the publisher, in order, each exactly once.

Each post is marked delivered in its own small transaction right after it is sent, so a
crash in between re-sends exactly that post (publishers are idempotent by key). A post
the publisher refuses is retried on later passes, and parked (``failed``) after the
configured number of attempts; until then it holds back the posts queued after it, so
their order is kept.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Callable, Protocol

from sqlalchemy.engine import Engine

from dealer.publish import DeliveryFailed, Publisher
from dealer.publish.base import OutgoingPost
from dealer.shell.faults import fault
from dealer.store import queries as Q

log = logging.getLogger(__name__)

DELIVERY_BATCH = 200
"""Queued posts read at once."""


class DeliveryCounts(Protocol):
    """What :func:`deliver` counts into (a :class:`~dealer.shell.passes.PassReport`)."""

    delivered: int
    failed: int


def deliver(
    engine: Engine,
    publisher: Publisher,
    report: DeliveryCounts,
    *,
    retries: int,
    clock: Callable[[], datetime],
    stopping: Callable[[], bool] = lambda: False,
) -> int:
    """Send queued posts in order until none is left, one fails, or ``stopping()``; return
    the count delivered (in ``report``). A post that failed ``retries`` times is parked."""
    while not stopping():
        with engine.connect() as connection:
            batch = Q.pending_posts(connection, DELIVERY_BATCH)
        if not batch:
            return report.delivered
        for row in batch:
            if stopping():
                break
            outgoing = OutgoingPost(
                row.id, row.key, row.channel, row.recipient, row.game_id,
                row.kind, row.subject, row.body, row.created_at,
            )
            try:
                external = publisher.send(outgoing)
            except DeliveryFailed as exc:
                attempts = row.attempts + 1
                parked = attempts >= retries
                with engine.begin() as connection:
                    connection.execute(
                        Q.POST_NOT_DELIVERED,
                        {"post_id": row.id, "new_attempts": attempts, "new_error": str(exc),
                         "new_status": "failed" if parked else "pending"},
                    )
                if parked:
                    log.error("post %s parked after %s attempts: %s", row.key, attempts, exc)
                    report.failed += 1
                    continue
                log.warning("post %s not delivered (will retry): %s", row.key, exc)
                return report.delivered
            fault("after-send")
            with engine.begin() as connection:
                connection.execute(
                    Q.DELIVERED,
                    {"post_id": row.id, "new_external_id": external, "new_delivered_at": clock()},
                )
            fault("after-delivered")
            report.delivered += 1
    return report.delivered
