"""The signed webhook inbox, ``POST /inbox`` (docs/WEBHOOKS.md: the headers, the signature
and each refusal).

The delivery id is signed too (the issue asks for an HMAC "of timestamp and body"), so a
replayed body cannot pass as a new delivery. 202 is answered only once the message is
committed; the delivery id is recorded after it, so a request that failed half-way may be
sent again with the same id.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping

from sqlalchemy.engine import Engine

from dealer.clock import utcnow
from dealer.inbox.base import InboxMessage, Unreadable
from dealer.shell.ingest import store_messages
from dealer.store import queries as Q
from dealer.store.db import read_connection
from dealer.store.transient import is_transient

log = logging.getLogger(__name__)

WINDOW = timedelta(minutes=5)
"""How far a request's timestamp may lie from the server's clock, either way."""
SOURCE = "webhook"
"""The source its messages are stored under (ids are unique per source)."""

TIMESTAMP_HEADER = "x-dealer-timestamp"
DELIVERY_HEADER = "x-dealer-delivery"
SIGNATURE_HEADER = "x-dealer-signature"


def sign(secret: str, timestamp: str, delivery: str, body: bytes) -> str:
    """``sha256=`` and the hex HMAC-SHA256 of ``TIMESTAMP.DELIVERY.BODY`` keyed with ``secret``."""
    message = timestamp.encode("utf-8") + b"." + delivery.encode("utf-8") + b"." + body
    return "sha256=" + hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status and JSON payload."""

    status: int
    payload: dict[str, Any]


@dataclass
class WebhookInbox:
    """Checks and stores signed deliveries; :meth:`receive` is ``POST /inbox`` without HTTP."""

    engine: Engine
    secret: str
    clock: Callable[[], datetime] = utcnow
    wake: Callable[[], None] = lambda: None
    """Called once a new message is stored (``dealer run`` wakes its loop)."""
    max_bytes: int = 65536
    source: str = SOURCE
    seen: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not self.secret:
            raise ValueError("the webhook inbox needs a shared secret (DEALER_WEBHOOK_SECRET)")

    def receive(self, headers: Mapping[str, str], body: bytes) -> Answer:
        """Check one request and store its message; the answer says what became of it."""
        now = self.clock()
        if len(body) > self.max_bytes:
            return _refuse(413, f"the body is {len(body)} bytes; at most {self.max_bytes} are read")
        timestamp = headers.get(TIMESTAMP_HEADER, "")
        delivery = headers.get(DELIVERY_HEADER, "")
        signature = headers.get(SIGNATURE_HEADER, "")
        if not signature or not timestamp or not delivery:
            missing = [name for name, value in ((TIMESTAMP_HEADER, timestamp), (DELIVERY_HEADER, delivery),
                                                (SIGNATURE_HEADER, signature)) if not value]
            return _refuse(401, "unsigned request: missing " + ", ".join(_title(m) for m in missing))
        if len(delivery) > 200:
            return _refuse(401, "the delivery id is longer than 200 characters")
        expected = sign(self.secret, timestamp, delivery, body)
        if not hmac.compare_digest(expected.encode("utf-8"), signature.strip().encode("utf-8", "replace")):
            log.warning("webhook delivery %r refused: the signature does not match", delivery[:60])
            return _refuse(401, "the signature does not match: the request is forged, altered, "
                                "or signed with another secret")
        if not timestamp.isdigit() or len(timestamp) > 12:
            return _refuse(401, "the timestamp must be whole seconds since 1970 (UTC)")
        away = abs(int(timestamp) - now.timestamp())  # seconds: no date (a year 30000 is just far)
        if away > WINDOW.total_seconds():
            log.warning("webhook delivery %r refused: timestamp %s is outside the window", delivery[:60], timestamp)
            return _refuse(401, f"the timestamp is {int(away)} s away from "
                                f"the server's clock; at most {int(WINDOW.total_seconds())} s are allowed")
        try:
            return self._store(delivery, body, now)
        except Exception as exc:
            if is_transient(exc):
                log.warning("webhook delivery %r: the store is unreachable (%s)", delivery[:60], exc)
                return _refuse(503, "the store is unreachable just now; nothing was recorded: send it again")
            raise

    def _store(self, delivery: str, body: bytes, now: datetime) -> Answer:
        with read_connection(self.engine) as connection:
            if Q.delivery_seen(connection, self.source, delivery):
                log.warning("webhook delivery %r refused: a replay", delivery[:60])
                return _refuse(409, f"delivery {delivery!r} was received before: a replay is refused")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return _refuse(400, "the body is not UTF-8 text")
        try:
            message = InboxMessage.from_json(text)
        except Unreadable as exc:
            return _refuse(400, str(exc))
        stored = store_messages(self.engine, self.source, [message], now)
        if stored.refused:
            return _refuse(422, stored.refused[0][1])
        outcome = "new" if stored.new else "conflict" if stored.conflicts else "duplicate"
        with self.engine.begin() as connection:
            first = Q.record_delivery(connection, self.source, delivery, now, now - 2 * WINDOW)
        if not first:  # the same delivery raced this one in: stored once all the same
            return _refuse(409, f"delivery {delivery!r} was received before: a replay is refused")
        if stored.new:
            self.seen += 1
            self.wake()
        return Answer(202, {"stored": outcome, "id": message.id})


def _title(header: str) -> str:
    return "-".join(part.capitalize() for part in header.split("-"))


def _refuse(status: int, why: str) -> Answer:
    return Answer(status, {"error": why})


def webhook_routes(inbox: WebhookInbox | None = None, extra: list[Any] | None = None) -> list[Any]:
    """Starlette routes: ``POST /inbox`` (when ``inbox`` is given) and ``extra`` ones."""
    routes = [post_route("/inbox", inbox.receive, inbox.max_bytes)] if inbox is not None else []
    return routes + list(extra or [])


def post_route(path: str, receive: Callable[[Mapping[str, str], bytes], Answer], max_bytes: int) -> Any:
    """A Starlette ``POST`` route whose body is read capped (issue 36), then given to ``receive``
    in a worker thread."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def post(request: Request) -> JSONResponse:
        body = await read_capped(request, max_bytes)
        if isinstance(body, Answer):
            return respond(body)
        return respond(await run_in_threadpool(receive, request.headers, body))

    return Route(path, post, methods=["POST"])


async def read_capped(request: Any, limit: int) -> bytes | Answer:
    """The body, or the 413 (or 400) refusing it, reading no further than one byte past
    ``limit``: a stranger's 400 MB POST is never held in memory (issue 36)."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.strip().isdigit():
            return _refuse(400, "the Content-Length is not a number of bytes")
        if int(length) > limit:
            return _refuse(413, f"the body is {int(length)} bytes; at most {limit} are read")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    return b"".join(chunks)


def respond(answer: Answer) -> Any:
    """The JSON response; a body refused for its size closes the connection, unread."""
    from starlette.responses import JSONResponse

    headers = {"connection": "close"} if answer.status == 413 else None
    return JSONResponse(answer.payload, status_code=answer.status, headers=headers)


def create_app(routes: list[Any]) -> Any:
    """A Starlette app of the given webhook routes (and nothing else)."""
    from starlette.applications import Starlette

    return Starlette(routes=routes)

