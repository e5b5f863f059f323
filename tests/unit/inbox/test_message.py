"""An inbox message as the directory inbox defines it."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from dealer.inbox.base import InboxMessage
from dealer.testing import MemoryInbox


@pytest.mark.parametrize(
    ("sent_at", "expected"),
    [
        ("2026-12-01T10:00:00.123456Z", datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)),
        ("2026-12-01T10:00:00.5Z", datetime(2026, 12, 1, 10, 0, 0, 500000, tzinfo=timezone.utc)),
        # Nanoseconds (some platforms give them) are cut to the microsecond.
        ("2026-12-01T10:00:00.123456789Z", datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)),
        ("2026-12-01T11:00:00.000001+01:00", datetime(2026, 12, 1, 10, 0, 0, 1, tzinfo=timezone.utc)),
    ],
)
def test_sent_at_keeps_the_microseconds(sent_at: str, expected: datetime) -> None:
    message = InboxMessage.from_json(json.dumps({"id": "x", "sender": "a", "sent_at": sent_at}))
    assert message.sent_at == expected


def test_the_memory_inbox_keeps_the_microseconds() -> None:
    inbox = MemoryInbox()
    at = datetime(2026, 12, 1, 10, 0, 0, 42, tzinfo=timezone.utc)
    inbox.put({"id": "x", "sender": "a", "body": "", "sent_at": at})
    (delivery,) = list(inbox.fetch())
    assert delivery.message.sent_at == at
