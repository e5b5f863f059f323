"""Delivery: send queued posts through the publisher, each exactly once, each
destination's posts in order (docs/OPERATING.md tells the retries, parking and crashes).

Posts are claimed (``SKIP LOCKED``: a second daemon passes over a post in flight and its
destination's later posts), sent and marked delivered in batches; a crash re-sends at most
a batch, each post with its idempotency key. A send whose mark did not commit while the
daemon lived is remembered (``unrecorded``) and recorded, not sent again, when claimed.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta
from typing import Any, Callable, Protocol

from sqlalchemy import Row
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session

from dealer import logs
from dealer.clock import format_utc
from dealer.metrics import METRICS
from dealer.publish import DeliveryFailed, Publisher
from dealer.publish.base import OutgoingPost
from dealer.shell.faults import fault
from dealer.store import queries as Q
from dealer.store.direct import committed_at_once, direct
from dealer.store.models import Post
from dealer.store.transient import is_transient
from dealer.text import player_key

log = logging.getLogger(__name__)

DELIVERY_BATCH = 50
"""Posts sent and marked in one transaction; a post whose transport cannot drop a repeat
(:meth:`Publisher.dedupes` False) ends its batch, committed right after its send."""

SENT, SENT_NOT_DEDUPED, REFUSED, MARKED = "sent", "sent, not deduped", "refused", "marked"
"""What :func:`_attempt` did with a post (``MARKED``: an earlier send's lost mark, recorded now)."""

BACKOFF_CAP = 3600.0
"""The longest wait, in seconds, between two attempts at a post (before any "retry after")."""


class DeliveryCounts(Protocol):
    """What :func:`deliver` counts into (a :class:`~dealer.shell.passes.PassReport`)."""

    delivered: int
    failed: int
    retried: int
    dropped: int
    more: bool


def backoff(key: str, attempts: int, first: float, retry_after: float | None = None) -> float:
    """Seconds before the next attempt at post ``key``: ``first`` doubled per failure, at most
    :data:`BACKOFF_CAP`, never under ``retry_after``, with equal jitter read from a hash of the
    key and attempt (no random source outside the fair one, GH-40; the same on every replica)."""
    delay = min(BACKOFF_CAP, first * 2 ** max(attempts - 1, 0))
    digest = hashlib.blake2b(f"{key}:{attempts}".encode("utf-8"), digest_size=8).digest()
    fraction = int.from_bytes(digest, "big") / 2**64
    delay = delay / 2 + delay / 2 * fraction
    return max(delay, retry_after or 0.0)


def unpark_due(engine: Engine, now: datetime) -> int:
    """Put the parked posts whose next attempt is due back in the queue; return how many."""
    with engine.begin() as connection:
        count = connection.execute(Q.UNPARK_DUE, {"now": now}).rowcount or 0
    if count:
        log.info("%s parked post(s) tried again after their backoff", count)
        for _ in range(count):
            METRICS.post("unparked")
    return count


@logs.scoped
def deliver(engine: Engine, publisher: Publisher, report: DeliveryCounts, *, retries: int,
            first_backoff: float, now: datetime, clock: Callable[[], datetime],
            stopping: Callable[[], bool] = lambda: False,
            unrecorded: dict[str, str | None] | None = None, park_after: timedelta = timedelta(0),
            batches: int | None = None, first_batch: int | None = None) -> int:
    """Send every post due at ``now`` until none is left or ``stopping()``; return how many
    were delivered (``report`` counts the rest; ``batches`` caps the batches sent; with
    ``first_batch`` the first holds that many posts, each next one twice as many)."""
    if unrecorded is None:
        unrecorded = {}
    done = 0
    while not stopping():
        if batches is not None and done >= batches:
            report.more = True
            break
        size = DELIVERY_BATCH if first_batch is None else min(DELIVERY_BATCH, first_batch << min(done, 16))
        done += 1
        with engine.begin() as connection:
            claim = Q.claim_posts(connection, now, size)
            rows = claim.posts
            if not rows:
                return report.delivered
            accounts = claim.accounts  # every player's the batch's posts name, read with it
            held: set[tuple[str, str | None]] = set()  # destinations refused in this batch
            sent: list[tuple[str, dict[str, Any]]] = []  # each sent post's key, its mark
            cut = False  # the batch ends early: the rest of the claim is claimed again
            flush = False  # the commit must wait for the flush to disk (see below)
            for row in rows:
                where = (row.channel, row.recipient)
                if where in held:
                    continue  # waits behind its refused predecessor, as in the next batch
                if stopping():
                    break  # the rest stays pending, for the next pass
                with logs.context(game_id=row.game_id, post_id=row.id, post_key=row.key):
                    outcome = _attempt(connection, publisher, row, report, (retries, park_after),
                                       first_backoff, now, clock, sent, unrecorded, accounts)
                flush |= outcome != SENT
                if outcome == REFUSED:
                    held.add(where)
                elif outcome == SENT_NOT_DEDUPED:
                    # Its transport cannot drop a repeat: commit now, so that a crash
                    # re-sends at most this post, never the batch's earlier ones.
                    cut = True
                    break
            if sent:
                # One statement marks the batch's sent posts delivered, each only if still
                # pending (the rows are this transaction's: it always is), sent with the COMMIT.
                # Marks of sends the platform drops if repeated need not wait for the disk
                # (Postgres): a crash losing them re-sends those posts, as a crash between
                # the sends and the commit does anyway. Anything else waits for the flush.
                with committed_at_once(connection, wait_for_disk=flush):
                    direct(Q.DELIVERED).execute(connection, [mark for _, mark in sent])
                report.delivered += len(sent)
                for _ in sent:
                    METRICS.post("delivered")
        for key, _ in sent:
            unrecorded.pop(key, None)  # its mark committed
        fault("after-delivered")  # committed: marked delivered (or its retry recorded)
        if claim.complete and not cut:
            break  # the claim took every post then sendable: another claim would find none
    return report.delivered


def _attempt(connection: Connection, publisher: Publisher, row: Row[Any], report: DeliveryCounts,
             parking: tuple[int, timedelta], first_backoff: float, now: datetime,
             clock: Callable[[], datetime], sent: list[tuple[str, dict[str, Any]]],
             unrecorded: dict[str, str | None], accounts: dict[str, dict[str, str]]) -> str:
    """Send one claimed post and record what became of it in the claim's transaction (a send
    is appended to ``sent``, marked with its batch)."""
    if row.key in unrecorded:
        # Sent by this process already; only its mark was lost with the connection.
        log.info("post %s was sent before the store blinked: marked delivered, not re-sent",
                 row.key)
        sent.append((row.key, _mark(row, unrecorded[row.key], clock)))
        return MARKED
    if row.stale_after is not None and row.stale_after <= now:
        why = f"stale: it had to go out before {format_utc(row.stale_after)}"
        connection.execute(Q.POST_DROPPED, {"post_id": row.id, "new_error": why})
        log.info("post %s dropped unsent: its deadline had passed", row.key)
        report.dropped += 1
        METRICS.post("dropped")
        return SENT
    mentions = tuple(row.mentions or ())
    wanted = {player_key(name): name for name in (*mentions, *([row.recipient] if row.recipient else []))}
    # Parts are recorded in the transaction that counts the post's failed attempt (or
    # marks it delivered), with its error: a post that never failed has none (`outbox
    # retry` counts attempts afresh but keeps the last error).
    sent_parts = Q.parts_sent(connection, row.id) if row.attempts or row.last_error else {}

    def record_part(index: int, external_id: str) -> None:
        # In the claim's own transaction: a part that went out stays recorded even if a
        # later part is refused (the refusal is committed with it), so a re-send skips it.
        Q.record_part(connection, row.id, index, external_id, clock())

    outgoing = OutgoingPost(
        row.id, row.key, row.channel, row.recipient, row.game_id,
        row.kind, row.subject, row.body, row.created_at,
        mentions=mentions,
        accounts={name: accounts[key] for key, name in wanted.items() if key in accounts},
        parts_sent=sent_parts,
        record_part=record_part,
    )
    try:
        external = publisher.send(outgoing)
    except Exception as exc:
        if is_transient(exc):
            raise  # the store blinked while the publisher read it (mail's addressing): not the post's failure
        if not isinstance(exc, DeliveryFailed):
            # A bug in an adapter must not stop the daemon: counted as a failed attempt.
            log.exception("post %s: the publisher failed unexpectedly", row.key)
        retry_after = exc.retry_after if isinstance(exc, DeliveryFailed) else None
        attempts = row.attempts + 1
        retries, park_after = parking
        # A transport's "retry after" (a rate limit) is waited for, never a reason to park;
        # nor is an outage shorter than park_after, however many attempts it refused.
        failing = now - (row.failing_since or now)
        parked = attempts >= retries and retry_after is None and failing >= park_after
        wait = backoff(row.key, attempts, first_backoff, retry_after)
        connection.execute(
            Q.POST_NOT_DELIVERED,
            {"post_id": row.id, "new_attempts": attempts, "new_error": str(exc) or type(exc).__name__,
             "new_status": "failed" if parked else "pending",
             # A parked post is tried again on its own after its backoff (unpark_due).
             "new_next_attempt_at": now + timedelta(seconds=wait), "new_failing_since": now},
        )
        if parked:
            log.error("post %s parked after %s attempts over %s: %s; its destination waits; it is "
                      "tried again in %.0f s (`dealer outbox retry %s`: now)", row.key, attempts,
                      str(failing).split(".")[0], exc, wait, row.id)
            report.failed += 1
            METRICS.post("parked")
        else:
            log.warning("post %s not delivered (attempt %s, next in %.0f s): %s",
                        row.key, attempts, wait, exc)
            report.retried += 1
            METRICS.post("retried")
        return REFUSED
    unrecorded[row.key] = external  # until the batch's marks commit (see deliver)
    fault("after-send")
    sent.append((row.key, _mark(row, external, clock)))
    return SENT if publisher.dedupes(outgoing) else SENT_NOT_DEDUPED


def _mark(row: Row[Any], external: str | None, clock: Callable[[], datetime]) -> dict[str, Any]:
    """The parameters of :data:`~dealer.store.queries.DELIVERED` for a sent post."""
    return {"post_id": row.id, "new_external_id": external, "new_delivered_at": clock()}


class NotParked(Exception):
    """``dealer outbox retry`` named a post that is not parked."""


def retry_posts(session: Session, ids: list[int] | None) -> list[Post]:
    """Put parked posts (every one when ``ids`` is None) back in the queue, due at once; a post
    not parked is refused (a delivered one would be sent twice)."""
    chosen = Q.parked_posts(session, ids)
    if ids is not None:
        missing = sorted(set(ids) - {post.id for post in chosen})
        if missing:
            found = {i: session.get(Post, i) for i in missing}
            raise NotParked("; ".join(
                f"post {i} is {post.status}, not parked" if post else f"no post {i}"
                for i, post in found.items()
            ) + " (only parked posts can be retried: `dealer outbox list --failed`)")
    for post in chosen:
        post.status = "pending"
        post.attempts = 0
        post.next_attempt_at = None
        post.failing_since = None
    return chosen
