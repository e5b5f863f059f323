"""The directory publisher: one complete file per post, even with two writers at once."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from dealer.publish import directory
from dealer.publish.base import OutgoingPost
from dealer.publish.directory import DirectoryPublisher

POST = OutgoingPost(7, "in:3:0", "pm", "alice", "r1", "reply", "Hi", "body",
                    datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc))


def test_two_writers_of_one_post_each_rename_a_complete_file_of_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second daemon writes the same post between this one's write and its rename: with
    one shared temporary name, the first rename would find its file already gone."""
    publisher = DirectoryPublisher(tmp_path)
    real_replace = directory.os.replace
    errors: list[BaseException] = []
    interleaved = []

    def replace(src, dst):  # type: ignore[no-untyped-def]
        if not interleaved:
            interleaved.append(src)

            def other() -> None:
                try:
                    DirectoryPublisher(tmp_path).send(POST)
                except BaseException as exc:  # pragma: no cover - reported below
                    errors.append(exc)

            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        real_replace(src, dst)

    monkeypatch.setattr(directory.os, "replace", replace)
    assert publisher.send(POST) == "000000000007-20261201T100000.json"
    assert not errors and interleaved
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["000000000007-20261201T100000.json"]  # no temporary file left behind
    assert json.loads((tmp_path / files[0]).read_text(encoding="utf-8"))["key"] == "in:3:0"


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dealer.publish import DeliveryFailed

    def refuse(src, dst):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(directory.os, "replace", refuse)
    with pytest.raises(DeliveryFailed, match="No space left on device"):
        DirectoryPublisher(tmp_path).send(POST)
    assert list(tmp_path.iterdir()) == []
