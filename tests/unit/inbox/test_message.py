"""An inbox message as the directory inbox defines it."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings, strategies as st

from dealer.inbox.base import InboxMessage, Unreadable
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


# -- whatever a producer writes, reading it ends in a message or in Unreadable (issue 9) --


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_FIELDS = st.fixed_dictionaries({}, optional={
    "id": _JSON | st.text(max_size=10), "sender": _JSON | st.text(max_size=10),
    "sent_at": _JSON | st.datetimes().map(lambda d: d.isoformat()) | st.sampled_from([
        "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+01:00", "2026-12-01T10:00:00Z",
    ]),
    "kind": _JSON | st.sampled_from(["message", "edit", "delete", "reaction"]),
    "target": _JSON, "emoji": _JSON, "removed": _JSON, "body": _JSON, "game": _JSON,
    "channel": _JSON,
})


@settings(max_examples=300, deadline=None)
@given(st.one_of(_FIELDS.map(json.dumps), st.text(max_size=200), _JSON.map(json.dumps)))
def test_reading_any_text_gives_a_message_or_unreadable(text: str) -> None:
    try:
        message = InboxMessage.from_json(text)
    except Unreadable as exc:
        assert str(exc)
    else:
        assert message.sent_at.tzinfo is not None and message.id.strip()


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300) | _FIELDS.map(lambda d: json.dumps(d).encode()))
def test_the_directory_inbox_reads_any_file_without_raising(data: bytes) -> None:
    import tempfile
    from pathlib import Path

    from dealer.inbox.base import Delivery
    from dealer.inbox.directory import DirectoryInbox

    with tempfile.TemporaryDirectory() as folder:
        inbox = DirectoryInbox(folder)
        (Path(folder) / "m.json").write_bytes(data)
        items = list(inbox.fetch(datetime(2030, 1, 1, tzinfo=timezone.utc)))  # long after: not fresh
        assert len(items) == 1
        item = items[0]
        assert isinstance(item, Delivery) or (isinstance(item, tuple) and item[1])


def _reaction(target: object) -> str:
    return json.dumps({"id": "r1", "sender": "bob", "channel": "#request-for-justice",
                       "kind": "reaction", "target": target, "emoji": "👍",
                       "sent_at": "2026-12-01T10:00:00Z"})


@pytest.mark.parametrize(("target", "expected"), [(12, "12"), ("12", "12"), (0, "0"), ("m7", "m7")])
def test_a_reaction_target_is_a_post_id_as_a_number_or_a_string(target: object, expected: str) -> None:
    # DESIGN: a reaction may target one of dealer's posts by the outbox post's id, which the
    # directory outbox writes as a JSON number.
    assert InboxMessage.from_json(_reaction(target)).target == expected


@pytest.mark.parametrize("target", [True, 1.5, [12], {"id": 12}])
def test_a_reaction_target_of_another_type_is_unreadable(target: object) -> None:
    with pytest.raises(Unreadable) as caught:
        InboxMessage.from_json(_reaction(target))
    assert "target" in str(caught.value)
