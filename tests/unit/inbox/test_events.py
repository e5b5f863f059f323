"""The directory inbox's contract for edits, deletions and reactions (DESIGN.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dealer.inbox.base import Delivery, InboxMessage, Unreadable
from dealer.inbox.directory import DirectoryInbox

AT = "2026-12-01T10:00:00Z"


def parse(**fields: object) -> InboxMessage:
    return InboxMessage.from_json(json.dumps({"id": "x", "sender": "alice", "sent_at": AT, **fields}))


def test_a_plain_message_is_a_message_with_no_target() -> None:
    message = parse(body="bet red 10")
    assert (message.kind, message.target, message.emoji, message.removed) == ("message", None, None, False)


def test_an_edit_names_its_target_and_carries_the_new_body() -> None:
    message = parse(kind="edit", target="m7", body="bet black 10")
    assert (message.kind, message.target, message.body) == ("edit", "m7", "bet black 10")


def test_a_deletion_names_its_target() -> None:
    assert parse(kind="delete", target="m7").target == "m7"


def test_a_reaction_is_added_unless_it_says_removed() -> None:
    added = parse(kind="reaction", target="12", emoji="👍")
    removed = parse(kind="reaction", target="12", emoji="👍", removed=True)
    assert (added.emoji, added.removed) == ("👍", False)
    assert (removed.emoji, removed.removed) == ("👍", True)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"kind": "edit", "body": "x"}, 'an edit needs "target"'),
        ({"kind": "delete", "target": "  "}, 'a delete needs "target"'),
        ({"kind": "reaction", "target": "m1"}, 'a reaction needs "emoji"'),
        ({"kind": "message", "body": "x", "removed": True}, 'only a reaction can be "removed"'),
        ({"kind": "poke", "target": "m1"}, "kind"),
    ],
)
def test_an_event_that_cannot_reach_a_target_is_unreadable(fields: dict[str, object], problem: str) -> None:
    with pytest.raises(Unreadable, match=problem):
        parse(**fields)


def test_the_directory_inbox_reads_events_and_sets_aside_one_without_target(tmp_path: Path) -> None:
    inbox = DirectoryInbox(tmp_path)
    good = {"id": "r1", "sender": "bob", "channel": "#proposals", "sent_at": AT,
            "kind": "reaction", "target": "m1", "emoji": "👎", "removed": True}
    (tmp_path / "1.json").write_text(json.dumps(good), encoding="utf-8")
    (tmp_path / "2.json").write_text(json.dumps({**good, "id": "r2", "target": None}), encoding="utf-8")
    items = list(inbox.fetch())
    (delivery,) = [i for i in items if isinstance(i, Delivery)]
    assert (delivery.message.kind, delivery.message.target, delivery.message.removed) == ("reaction", "m1", True)
    ((handle, why),) = [i for i in items if not isinstance(i, Delivery)]
    assert handle.name == "2.json" and 'needs "target"' in why
    inbox.reject(handle, why)
    assert (tmp_path / "rejected" / "2.json.why").read_text(encoding="utf-8").startswith("invalid message")
