"""The publisher port. An adapter implements :meth:`Publisher.send`; the base class and the
outbox give it retries and idempotency (every post carries a stable key).

The delivery policy every transport shares lives here, not in the daemon:
:class:`TokenBucket` (a transport's own rate, and the "retry after" of a ``429`` honoured
for every later request), :class:`DeliveryFailed` with its ``retry_after`` (the outbox then
waits at least that long), and the parts of a post split to its destination's limit, each
recorded as it goes out (:attr:`OutgoingPost.record_part`).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Callable

from dealer.formats import render_for, to_plain


class DeliveryFailed(Exception):
    """The post could not be delivered this time; it will be tried again.

    ``retry_after`` (seconds) is the transport's own "retry after" (a rate limit, HTTP 429):
    the post is not tried again sooner, and such a refusal never parks it.
    """

    def __init__(self, *args: object, retry_after: float | None = None) -> None:
        super().__init__(*args)
        self.retry_after = retry_after


@dataclass(frozen=True)
class OutgoingPost:
    """A post as a publisher sees it.

    ``accounts`` holds the linked platform accounts (player -> platform -> account id) of
    the recipient and of the players in ``mentions`` (those the post means to ping), read
    by the shell in the claim's transaction. ``parts_sent`` are the parts of a split post
    already delivered (by index, with their platform ids): a re-send skips them.
    ``record_part(index, external_id)`` records a part as soon as it is out, in the claim's
    own transaction (any store write during a send must use that connection: another one
    would wait on the claim's locks).
    """

    id: int
    key: str
    channel: str
    recipient: str | None
    game: str | None
    kind: str
    subject: str
    body: str
    created_at: datetime
    mentions: tuple[str, ...] = ()
    accounts: dict[str, dict[str, str]] = field(default_factory=dict)
    parts_sent: dict[int, str] = field(default_factory=dict)
    record_part: Callable[[int, str], None] | None = None


class Publisher(ABC):
    """Delivers posts. ``send`` must be idempotent for a given ``post.key``."""

    format = "markdown"
    """The format this publisher writes when no route names one (:mod:`dealer.formats`)."""

    @abstractmethod
    def send(self, post: OutgoingPost) -> str:
        """Deliver ``post`` and return its external id; raise :class:`DeliveryFailed`."""

    def dedupes(self, post: OutgoingPost, destination: object = None) -> bool:
        """Whether sending ``post`` again, with its key, shows nothing twice where it goes
        (to a routed ``destination`` when given). A transport that cannot drop a repeat
        (a Discord webhook, Discourse, mail) says False: delivery then commits right after
        sending such a post, so that a crash can send at most that one post twice, not a
        whole batch (:mod:`dealer.shell.delivery`)."""
        return True

    def send_to(self, post: OutgoingPost, destination: object, fmt: str) -> str:
        """Deliver ``post`` to a routed ``destination`` (a :class:`dealer.routes.Destination`)
        in the format ``fmt``. A transport that serves one place (a folder, stdout) only needs
        the body in that format: this default renders it and calls :meth:`send`. In plain
        text the subject loses its escapes too (it is stored escaped: it may quote a line)."""
        subject = to_plain(post.subject) if fmt == "plain" and post.subject else post.subject
        return self.send(replace(post, subject=subject, body=render_for(fmt, post.body)))


class TokenBucket:
    """A rate of ``rate`` requests per second with bursts of ``burst``, and a pause: after
    a ``429`` (or a transport saying its quota is spent) no request goes before the pause
    ends. Thread-safe; ``clock`` (seconds, monotonic) and ``sleep`` can be replaced (tests
    run the fake's clock, never real time)."""

    def __init__(self, rate: float, burst: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else max(1.0, rate)
        self.clock = clock
        self.sleep = sleep
        self.tokens = self.burst
        self.updated = clock()
        self.paused_until = 0.0
        self._lock = threading.Lock()

    def _refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def wait_time(self) -> float:
        """Seconds until a request may go (0: now)."""
        with self._lock:
            now = self.clock()
            self._refill(now)
            pause = max(0.0, self.paused_until - now)
            short = max(0.0, (1 - self.tokens) / self.rate)
            return max(pause, short)

    def take(self, max_wait: float) -> None:
        """Take one token, waiting (``sleep``) at most ``max_wait`` seconds for it; a longer
        wait raises :class:`DeliveryFailed` with its ``retry_after`` (the post is put back and
        tried after it, without holding its claim)."""
        while True:
            wait = self.wait_time()
            if wait <= 0:
                with self._lock:
                    self._refill(self.clock())
                    if self.tokens >= 1 and self.clock() >= self.paused_until:
                        self.tokens -= 1
                        return
                continue
            if wait > max_wait:
                raise DeliveryFailed(f"rate limited for {wait:.1f} s", retry_after=wait)
            self.sleep(wait)

    def pause(self, seconds: float) -> None:
        """No request before ``seconds`` from now (a ``429``'s "retry after", or a spent quota)."""
        with self._lock:
            self.paused_until = max(self.paused_until, self.clock() + seconds)
