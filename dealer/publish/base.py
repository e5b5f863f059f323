"""The publisher port. An adapter implements :meth:`Publisher.send`; the base class and the
outbox give it retries and idempotency (every post carries a stable key)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime


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
    """A post as a publisher sees it."""

    id: int
    key: str
    channel: str
    recipient: str | None
    game: str | None
    kind: str
    subject: str
    body: str
    created_at: datetime


class Publisher(ABC):
    """Delivers posts. ``send`` must be idempotent for a given ``post.key``."""

    @abstractmethod
    def send(self, post: OutgoingPost) -> str:
        """Deliver ``post`` and return its external id; raise :class:`DeliveryFailed`."""
