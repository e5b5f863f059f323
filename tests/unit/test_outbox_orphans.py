"""A write killed between its temporary file and its rename leaves an orphan ``.tmp`` in
the outbox; the next start removes it (issue 36, item 7), and the post, still pending,
is written again whole."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from dealer.publish import directory
from dealer.publish.base import OutgoingPost
from dealer.publish.directory import ORPHAN_AGE, DirectoryPublisher

POST = OutgoingPost(7, "in:3:0", "pm", "alice", "r1", "reply", "Hi", "body",
                    datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc))


class Killed(BaseException):
    """The process dying between the write and the rename (not an error send() handles)."""


def test_the_orphan_of_a_killed_write_is_removed_at_the_next_start(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    publisher = DirectoryPublisher(tmp_path)

    def killed(src: str, dst: str) -> None:
        raise Killed()

    monkeypatch.setattr(directory.os, "replace", killed)
    with pytest.raises(Killed):
        publisher.send(POST)
    monkeypatch.undo()
    [orphan] = [p for p in tmp_path.iterdir()]
    assert orphan.name.startswith(".") and orphan.name.endswith(".tmp")
    # A daemon started again at once leaves it: it could be another daemon's write.
    assert DirectoryPublisher(tmp_path).remove_orphans() == []
    assert orphan.exists()
    # Older than a write ever takes: the next start removes it; a fresh one of another
    # writer stays.
    old = time.time() - ORPHAN_AGE - 1
    os.utime(orphan, (old, old))
    fresh = tmp_path / ".000000000008-20261201T100000.json.999.1.tmp"
    fresh.write_bytes(b"{")
    restarted = DirectoryPublisher(tmp_path)
    assert not orphan.exists() and fresh.exists()
    # The post, still pending, is written again whole.
    name = restarted.send(POST)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [name]
