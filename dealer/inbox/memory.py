"""An inbox held in memory, fed by :meth:`MemoryInbox.put`: for tests and ``dealer demo``."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterator

from dealer.clock import iso_exact
from dealer.inbox.base import Delivery, Inbox, InboxMessage, Unreadable


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
                {k: iso_exact(v) if isinstance(v, datetime) else v for k, v in message.items()}
            )
        self.waiting[self._next] = message
        self._next += 1

    def fetch(self, now: datetime | None = None) -> Iterator[Delivery | tuple[int, str]]:
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
