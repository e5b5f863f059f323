"""The directory publisher: one complete file per post, even with two writers at once."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from dealer.clock import iso
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


def test_a_post_file_is_the_json_of_its_fields_with_an_indent_of_two(tmp_path: Path) -> None:
    """The file is built without json.dumps (its indent takes the pure-Python encoder): it
    stays, character for character, what json.dumps(..., ensure_ascii=False, indent=2) wrote."""
    odd = 'a "quote", a \\ and \n\t\x01\x1f\x7f, é 日本 😀 \u2028 </script>'
    posts = [
        POST,
        OutgoingPost(123456789012, odd, odd, None, None, odd, odd, odd * 3,
                     datetime(2026, 12, 1, 12, 30, 5, 678, tzinfo=timezone(timedelta(hours=2)))),
        OutgoingPost(1, "", "", "", "", "", "", "", datetime(2026, 1, 1)),
        # A body with no control character but the newline: written from its UTF-8 bytes.
        OutgoingPost(2, "k", "c", "r", "g", "kind", "s", (odd.replace("\t", "").replace("\x01", "")
                                                         .replace("\x1f", "") + "\\\"\n") * 40,
                     datetime(2026, 1, 1)),
    ]
    publisher = DirectoryPublisher(tmp_path)
    for post in posts:
        fields = {"id": post.id, "key": post.key, "channel": post.channel, "recipient": post.recipient,
                  "game": post.game, "kind": post.kind, "subject": post.subject, "body": post.body,
                  "created_at": iso(post.created_at)}
        written = (tmp_path / publisher.send(post)).read_bytes()
        assert written == (json.dumps(fields, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "000000000001-20260101T000000.json", "000000000002-20260101T000000.json",
        "000000000007-20261201T100000.json",
        "123456789012-20261201T123005.json"]  # the post's own time, as strftime wrote it


def test_a_missing_outbox_is_a_failed_delivery(tmp_path: Path) -> None:
    # A publisher outage (the folder unmounted or removed): the post stays queued and is
    # retried, rather than the pass crashing on an OSError.
    from dealer.publish import DeliveryFailed

    publisher = DirectoryPublisher(tmp_path / "outbox")
    (tmp_path / "outbox").rmdir()
    with pytest.raises(DeliveryFailed, match="cannot write 000000000007"):
        publisher.send(POST)
