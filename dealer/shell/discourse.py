"""Discourse's glue with the store: its signed webhooks in (``POST /discourse``), the
catch-up poll after downtime, and where a private reply goes (docs/DISCOURSE.md).

A delivery Discourse sends again is a duplicate, answered 200 all the same. The catch-up
stores each post as if its webhook had arrived, so a move posted while dealer was down
counts at the time it was posted; edits, deletions and likes of the gap are not in it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Mapping

from sqlalchemy.engine import Engine

from dealer.clock import utcnow
from dealer.inbox.base import InboxMessage, Unreadable
from dealer.inbox.discourse import message_from_event, post_number, signed
from dealer.publish.base import DeliveryFailed, OutgoingPost, Publisher
from dealer.publish.discourse import DiscoursePublisher, Thread
from dealer.shell.ingest import store_messages
from dealer.shell.webhooks import Answer, post_route
from dealer.store import queries as Q
from dealer.store.db import read_connection
from dealer.store.transient import is_transient

log = logging.getLogger(__name__)

SOURCE = "discourse"
CATCH_UP_PAGES = 20
"""At most this many pages of latest posts are read by one catch-up."""


@dataclass
class DiscourseHooks:
    """``POST /discourse`` without HTTP: :meth:`receive` checks, reads and stores one delivery."""

    engine: Engine
    secret: str
    topics: Mapping[int, str]
    own_username: str
    clock: Callable[[], datetime] = utcnow
    wake: Callable[[], None] = lambda: None
    max_bytes: int = 1 << 20
    stored: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not self.secret:
            raise ValueError("Discourse webhooks need their secret (DEALER_DISCOURSE_WEBHOOK_SECRET)")

    def receive(self, headers: Mapping[str, str], body: bytes) -> Answer:
        """Check one delivery and store what it carries."""
        if len(body) > self.max_bytes:
            return Answer(413, {"error": f"the body is larger than {self.max_bytes} bytes"})
        header = headers.get("x-discourse-event-signature", "")
        if not header or not signed(self.secret, body, header):
            log.warning("Discourse delivery %r refused: bad signature", headers.get("x-discourse-event-id"))
            return Answer(401, {"error": "the X-Discourse-Event-Signature does not match the body"})
        event = headers.get("x-discourse-event", "")
        if event == "ping":
            return Answer(200, {"pong": True})
        try:
            payload = json.loads(body.decode("utf-8"))
            if not isinstance(payload, dict):
                raise ValueError("not a JSON object")
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return Answer(400, {"error": f"the body is not a JSON object: {type(exc).__name__}: {exc}"})
        now = self.clock()
        try:
            message = message_from_event(event, payload, self.topics, self.own_username, now)
        except (Unreadable, ValueError) as exc:
            return Answer(400, {"error": str(exc)})
        if message is None:
            return Answer(200, {"ignored": f"{event or 'an event'} dealer does not read here"})
        try:
            message = own_post_target(self.engine, message)
            result = store_messages(self.engine, SOURCE, [message], now)
        except Exception as exc:
            if is_transient(exc):
                return Answer(503, {"error": "the store is unreachable just now; send it again"})
            raise
        if result.refused:
            return Answer(422, {"error": result.refused[0][1]})
        if result.new:
            self.stored += 1
            self.wake()
        outcome = "new" if result.new else "conflict" if result.conflicts else "duplicate"
        return Answer(200, {"stored": outcome, "id": message.id})


def own_post_target(engine: Engine, message: InboxMessage) -> InboxMessage:
    """An edit, deletion or reaction of dealer's own post names it by its outbox id; a player's keeps ``post/ID``."""
    if message.kind == "message" or not message.target:
        return message
    with read_connection(engine) as connection:
        if connection.execute(Q.MESSAGE_BY_EXTERNAL_ID, {"source": SOURCE, "external_id": message.target}).first():
            return message
        own = connection.execute(Q.POST_BY_EXTERNAL_ID, {"external_id": message.target}).scalar()
    return message if own is None else message.model_copy(update={"target": str(own)})


_POST_ID = re.compile(r"^post/(\d+)$")


def catch_up(engine: Engine, publisher: DiscoursePublisher, topics: Mapping[int, str], own_username: str,
             now: datetime) -> int:
    """Store the posts made since the newest one stored; return how many were new. A refusal
    of the API is logged and ends the catch-up (it runs again)."""
    with read_connection(engine) as connection:
        known = [int(m.group(1)) for ident in connection.execute(Q.LATEST_MESSAGE_IDS, {"source": SOURCE}).scalars()
                 if (m := _POST_ID.match(ident))]
    newest = max(known, default=0)
    found: list[InboxMessage] = []
    before: int | None = None
    try:
        for _ in range(CATCH_UP_PAGES):
            page = publisher.latest_posts(before)
            if not page:
                break
            numbers = []
            for post in page:
                # One post the site lists wrongly is set aside with why; the rest are read.
                number = post_number(post)
                if number is None:
                    log.warning("Discourse catch-up: a post without a readable id set aside: %.200r", post)
                    continue
                numbers.append(number)
                if number <= newest:
                    continue
                try:
                    message = message_from_event("post_created", {"post": post}, topics, own_username, now)
                except Unreadable as exc:
                    log.warning("Discourse catch-up: post %s set aside: %s", number, exc)
                    continue
                if message is not None:
                    found.append(message)
            if not numbers:
                break
            oldest = min(numbers)
            if oldest <= newest + 1 or newest == 0:
                break  # reached what is stored (or, on a first start, read no older history)
            before = oldest
    except DeliveryFailed as exc:
        log.warning("Discourse catch-up stopped: %s", exc)
    found.sort(key=lambda m: int(m.id.split("/")[1]))
    stored = store_messages(engine, SOURCE, found, now) if found else None
    new = len(stored.new) if stored else 0
    if new:
        log.info("Discourse catch-up: %s post(s) made while dealer was away", new)
    return new


def reply_thread(engine: Engine, publisher: DiscoursePublisher) -> Callable[[OutgoingPost], Thread | None]:
    """The PM topic a private reply belongs in: that of the player's PM it answers."""

    def thread(post: OutgoingPost) -> Thread | None:
        match = re.match(r"^in:(\d+):", post.key)
        if not match or post.recipient is None:
            return None
        with engine.connect() as connection:
            row = connection.execute(Q.MAIL_OF_MESSAGE, {"id": int(match.group(1))}).first()
        if row is None or row.source != SOURCE:
            return None
        try:
            sent = json.loads(row.raw)
        except ValueError:
            return None
        post_id = _POST_ID.match(str(sent.get("id", "")))
        if sent.get("channel") != "pm" or not post_id:
            return None
        found = publisher.request("GET", f"/posts/{post_id.group(1)}.json")
        if not isinstance(found, dict) or "topic_id" not in found:
            return None
        return Thread(int(found["topic_id"]), found.get("post_number"))

    return thread


def attach(publisher: Publisher, engine: Engine) -> None:
    """Give a Discourse publisher the store's reply threading, read through the reading ``engine``."""
    if isinstance(publisher, DiscoursePublisher) and publisher.thread is None:
        publisher.thread = reply_thread(engine, publisher)


def discourse_routes(hooks: DiscourseHooks) -> list[Any]:
    """The Starlette route of ``POST /discourse`` (mount it with the webhook inbox's)."""
    return [post_route("/discourse", hooks.receive, hooks.max_bytes)]
