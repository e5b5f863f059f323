"""The publisher port. An adapter implements :meth:`Publisher.send`; the base class and the
outbox give it retries and idempotency, and the delivery policy every transport shares
lives here: :class:`TokenBucket`, :class:`DeliveryFailed` with its ``retry_after``, and the
parts of a split post recorded as each goes out."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Callable

from dealer.formats import render_for, to_plain


class DeliveryFailed(Exception):
    """The post could not be delivered this time; ``retry_after`` (a rate limit) is waited out
    first, and such a refusal never parks the post."""

    def __init__(self, *args: object, retry_after: float | None = None) -> None:
        super().__init__(*args)
        self.retry_after = retry_after


@dataclass(frozen=True)
class OutgoingPost:
    """A post as a publisher sees it, with its players' linked ``accounts`` and the
    ``parts_sent`` a re-send skips. ``record_part`` writes in the claim's own transaction
    (another connection would wait on the claim's locks)."""

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

    drops_repeats = True
    """Whether sending a post again with its key shows nothing twice; False (a webhook,
    Discourse, mail) makes delivery commit right after sending it."""

    def dedupes(self, post: OutgoingPost, destination: object = None) -> bool:
        """:attr:`drops_repeats` (a publisher with several destinations asks the one of ``post``)."""
        return self.drops_repeats

    def send_to(self, post: OutgoingPost, destination: object, fmt: str) -> str:
        """Deliver ``post`` to a routed ``destination`` in format ``fmt``; by default render it and
        :meth:`send` (in plain text the subject, stored escaped, loses its escapes too)."""
        subject = to_plain(post.subject) if fmt == "plain" and post.subject else post.subject
        return self.send(replace(post, subject=subject, body=render_for(fmt, post.body)))


class TokenBucket:
    """``rate`` requests a second with bursts of ``burst``, and a pause after a ``429``;
    thread-safe, with a replaceable ``clock`` and ``sleep`` (tests never wait)."""

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
        """Take one token, waiting at most ``max_wait``; a longer wait raises :class:`DeliveryFailed`
        with its ``retry_after``, so the claim is not held."""
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
