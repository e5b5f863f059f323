"""Fakes shipped for tests (dealer's own and anyone's): an in-memory inbox and publisher."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator

from dealer.clock import iso
from dealer.inbox.base import Delivery, Inbox, InboxMessage, Unreadable
from dealer.publish.base import OutgoingPost, Publisher


class MemoryInbox(Inbox):
    """An inbox fed by :meth:`put` (a dict or raw JSON text)."""

    source = "memory"

    def __init__(self) -> None:
        self.waiting: dict[int, str] = {}
        self.rejected: dict[int, str] = {}
        self._next = 0

    def put(self, message: dict[str, Any] | str) -> None:
        """Queue a message; datetimes in a dict are written as ISO text."""
        if isinstance(message, dict):
            message = json.dumps(
                {k: iso(v) if isinstance(v, datetime) else v for k, v in message.items()}
            )
        self.waiting[self._next] = message
        self._next += 1

    def fetch(self) -> Iterator[Delivery | tuple[int, str]]:
        """Yield the queued messages in order."""
        for handle, raw in sorted(self.waiting.items()):
            try:
                yield Delivery(handle, raw, InboxMessage.from_json(raw))
            except Unreadable as exc:
                yield handle, str(exc)

    def done(self, handle: int) -> None:
        """Forget a stored message."""
        self.waiting.pop(handle, None)

    def reject(self, handle: int, why: str) -> None:
        """Keep an unreadable message aside with its reason."""
        self.waiting.pop(handle, None)
        self.rejected[handle] = why


@dataclass
class MemoryPublisher(Publisher):
    """Keeps every delivered post in :attr:`posts` (by key, so re-sends do not duplicate)."""

    posts: dict[str, OutgoingPost] = field(default_factory=dict)
    fail_next: int = 0

    def send(self, post: OutgoingPost) -> str:
        """Store the post (or fail, while ``fail_next`` is positive)."""
        from dealer.publish.base import DeliveryFailed

        if self.fail_next > 0:
            self.fail_next -= 1
            raise DeliveryFailed("the fake publisher was told to fail")
        self.posts[post.key] = post
        return f"memory:{post.id}"

    def delivered(self) -> list[OutgoingPost]:
        """Every post in publication order."""
        return sorted(self.posts.values(), key=lambda p: p.id)
