"""No single inbox file stops the daemon or loses a move (issue 9): poison files are set
aside with why, files still being written are waited for, symbolic links are refused, and
the same id with another text is kept apart and its sender told."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

from dealer.inbox.base import Incomplete, InboxMessage, Unreadable
from dealer.inbox.directory import WRITE_GRACE, DirectoryInbox
from dealer.shell.admin import add_player, create_game
from dealer.shell.ingest import store_messages
from dealer.store.models import Inbound

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
NOW = T0 + timedelta(minutes=10)


def setup_tally(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    h.admin(setup)


def drop(h, name: str, text: str, mtime: datetime | None = None) -> Path:  # type: ignore[no-untyped-def]
    """Write ``text`` as inbox file ``name``, last modified at ``mtime`` (default: long ago)."""
    path = h.inbox_dir / name
    path.write_text(text, encoding="utf-8")
    stamp = (mtime or T0 - timedelta(hours=1)).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def message(ident: str, body: str = "add 1", sender: str = "alice", **fields: object) -> str:
    return json.dumps({"id": ident, "sender": sender, "body": body,
                       "sent_at": "2026-12-01T10:01:00Z", **fields})


def why(h, name: str) -> str:  # type: ignore[no-untyped-def]
    return (h.inbox_dir / "rejected" / f"{name}.why").read_text(encoding="utf-8")


def stored(h) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: [(r.external_id, r.status, r.body)
                              for r in s.scalars(select(Inbound).order_by(Inbound.id))])


POISON = {
    "late-edge.json": message("p1", sent_at="9999-12-31T23:59:59-05:00"),
    "early-edge.json": message("p2", sent_at="0001-01-01T00:00:00+01:00"),
    "deep.json": "[" * 30000 + "]" * 30000,
    "deep-field.json": message("p3", body=None).replace("null", "[" * 30000 + "]" * 30000),
    "numeric.json": message("p4", sent_at=1764583200),
    "ahead.json": message("p5", sent_at="2026-12-02T10:10:01Z"),
    "not-utf8.json": None,
}


def test_poison_files_are_set_aside_with_why_and_the_files_behind_them_are_read(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    drop(harness, "a-first.json", message("ok1"))
    for name, text in POISON.items():
        if text is None:
            path = harness.inbox_dir / name
            path.write_bytes(b'{"id": "\xff\xfe"}')
            os.utime(path, ((T0 - timedelta(hours=1)).timestamp(),) * 2)
        else:
            drop(harness, name, text)
    drop(harness, "z-last.json", message("ok2", sender="bob"), mtime=T0)
    report = harness.run(NOW)
    assert report.ok and report.unreadable == len(POISON)
    assert [(i, s) for i, s, _ in stored(harness)] == [("ok1", "applied"), ("ok2", "applied")]
    assert sorted(p.name for p in (harness.inbox_dir / "rejected").glob("*.json")) == sorted(POISON)
    assert "outside the times dealer can keep" in why(harness, "late-edge.json")
    assert "outside the times dealer can keep" in why(harness, "early-edge.json")
    assert "nested too deeply" in why(harness, "deep.json")
    assert "nested too deeply" in why(harness, "deep-field.json")
    # A number could be seconds or milliseconds: the error writes the form that is read.
    assert 'write sent_at as an ISO-8601 time with its offset, like "2026-12-01T10:00:00Z", not 1764583200' in why(harness, "numeric.json")
    assert "more than a day after the message arrived (2026-12-01T10:10:00Z)" in why(harness, "ahead.json")
    assert "not UTF-8" in why(harness, "not-utf8.json")
    assert list(harness.inbox_dir.glob("*.json")) == []
    # The next pass has nothing left to trip on.
    assert harness.run(NOW + timedelta(minutes=1)).unreadable == 0


def test_a_message_up_to_a_day_ahead_counts_when_it_arrived(harness) -> None:  # type: ignore[no-untyped-def]
    drop(harness, "ahead.json", message("a1", sent_at="2026-12-02T10:10:00Z"))
    harness.run(NOW)
    assert harness.admin(lambda s: s.scalar(select(Inbound.sent_at))) == NOW


def test_any_error_reading_one_file_rejects_that_file_only(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    drop(harness, "a.json", message("bad"))
    drop(harness, "b.json", message("good"), mtime=T0)
    real = InboxMessage.from_json

    def exploding(text: str) -> InboxMessage:
        if '"bad"' in text:
            raise MemoryError("simulated")
        return real(text)

    monkeypatch.setattr(InboxMessage, "from_json", staticmethod(exploding))
    report = harness.run(NOW)
    assert report.unreadable == 1 and [i for i, _, _ in stored(harness)] == ["good"]
    assert "MemoryError: simulated" in why(harness, "a.json")


def test_the_parser_turns_every_failure_into_unreadable() -> None:
    for text in ("[" * 100000, '{"id": "x", "sent_at": ' + "[" * 30000 + "]" * 30000 + "}", "\ud800"):
        with pytest.raises(Unreadable):
            InboxMessage.from_json(text)


def test_a_file_still_being_written_is_left_for_the_next_pass(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    half = message("h1")[:20]
    path = drop(harness, "half.json", half, mtime=NOW - timedelta(seconds=1))
    report = harness.run(NOW)
    assert report.unreadable == 0 and path.exists() and stored(harness) == []
    # The writer finishes it: the next pass reads it.
    path.write_text(message("h1"), encoding="utf-8")
    os.utime(path, ((NOW + timedelta(seconds=2)).timestamp(),) * 2)
    assert harness.run(NOW + timedelta(seconds=3)).ingested == 1
    # One that stays cut short is rejected once it is older than the grace.
    stale = drop(harness, "stale.json", half, mtime=NOW)
    assert harness.run(NOW + WRITE_GRACE - timedelta(microseconds=1)).unreadable == 0 and stale.exists()
    assert harness.run(NOW + WRITE_GRACE).unreadable == 1
    assert "not valid JSON" in why(harness, "stale.json")


def test_every_cut_of_a_message_reads_as_incomplete() -> None:
    text = json.dumps({"id": "x1", "sender": "alice", "body": "bet é 10\nfoo", "removed": False,
                       "sent_at": "2026-12-01T10:00:00.5Z", "n": [1, -2.5e3, True, None]}, ensure_ascii=False)
    for cut in range(len(text)):
        with pytest.raises(Incomplete):
            InboxMessage.from_json(text[:cut])
    with pytest.raises(Unreadable) as whole_and_more:
        InboxMessage.from_json(text + "}")
    assert not isinstance(whole_and_more.value, Incomplete)


def test_complete_but_invalid_json_is_rejected_at_once_even_if_fresh(harness) -> None:  # type: ignore[no-untyped-def]
    drop(harness, "fresh.json", json.dumps({"id": "x"}), mtime=NOW)
    drop(harness, "more.json", message("m1") + " {}", mtime=NOW)
    assert harness.run(NOW).unreadable == 2
    assert "sent_at" in why(harness, "fresh.json")
    assert "Extra data" in why(harness, "more.json")


def test_a_symbolic_link_is_refused_and_never_followed(harness, tmp_path) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    secret = tmp_path / "secret.json"
    secret.write_text(message("s1", body="add 5\nthe host's secret"), encoding="utf-8")
    (harness.inbox_dir / "link.json").symlink_to(secret)
    (harness.inbox_dir / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    report = harness.run(NOW)
    assert report.unreadable == 2 and stored(harness) == []
    rejected = harness.inbox_dir / "rejected" / "link.json"
    assert rejected.is_symlink() and secret.exists()
    assert "a symbolic link is not read" in why(harness, "link.json")
    assert "a symbolic link is not read" in why(harness, "dangling.json")
    assert all("secret" not in json.dumps(p) for p in harness.posts())


def test_the_same_id_with_another_text_is_kept_apart_and_its_sender_told(harness, caplog) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    drop(harness, "1.json", message("dup", body="add 2"))
    harness.run(NOW)
    drop(harness, "2.json", message("dup", body="add 7"))
    drop(harness, "3.json", message("dup", body="add 2", sent_at="2026-12-01T10:05:00Z"))  # re-sent
    with caplog.at_level("WARNING"):
        report = harness.run(NOW + timedelta(minutes=1))
    assert (report.ingested, report.duplicates, report.conflicts) == (0, 1, 1)
    assert stored(harness) == [("dup", "applied", "add 2"), ("dup#2", "rejected", "add 7")]
    assert any("conflicting duplicate" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    told = [p for p in harness.pms("alice") if p["kind"] == "conflict"]
    assert len(told) == 1 and "> add 7" in told[0]["body"]
    assert "message id dup" in told[0]["body"]
    # Delivered again, the conflicting copy is a plain duplicate; a third text is #3.
    drop(harness, "4.json", message("dup", body="add 7"))
    drop(harness, "5.json", message("dup", body="add 9"))
    report = harness.run(NOW + timedelta(minutes=2))
    assert (report.duplicates, report.conflicts) == (1, 1)
    assert [i for i, _, _ in stored(harness)] == ["dup", "dup#2", "dup#3"]
    assert len([p for p in harness.pms("alice") if p["kind"] == "conflict"]) == 2


def test_a_push_adapter_learns_of_conflicts_and_refusals(harness) -> None:  # type: ignore[no-untyped-def]
    engine = harness.dealer.engine
    first = InboxMessage(id="w1", sender="alice", body="add 1", sent_at=T0)
    store_messages(engine, "webhook", [first], NOW)
    other = InboxMessage(id="w1", sender="alice", body="add 2", sent_at=T0)
    ahead = InboxMessage(id="w2", sender="alice", body="add 2", sent_at=NOW + timedelta(days=2))
    result = store_messages(engine, "webhook", [other, ahead], NOW)
    assert [m.body for m in result.conflicts] == ["add 2"]
    assert [(m.id, "more than a day" in why) for m, why in result.refused] == [("w2", True)]


def test_waiting_lists_a_link_but_reading_never_follows_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    inbox = DirectoryInbox(tmp_path / "in")
    target = tmp_path / "t.json"
    target.write_text(message("x"), encoding="utf-8")
    (inbox.path / "l.json").symlink_to(target)
    assert [type(item) for item in inbox.fetch(NOW)] == [tuple]


def test_a_file_is_read_whole_and_moved_beside_one_of_the_same_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    inbox = DirectoryInbox(tmp_path / "in", max_bytes=200_000)
    body = "bet gold 40\n" + "x" * 150_000  # more than one read of the file may return
    (inbox.path / "m.json").write_text(message("m", body), encoding="utf-8")
    (inbox.processed / "m.json").write_text("an earlier file of that name", encoding="utf-8")
    (inbox.processed / "m.1.json").write_text("and another", encoding="utf-8")
    [item] = inbox.fetch(NOW)
    assert item.message.body == body
    inbox.done(item.handle)
    assert not (inbox.path / "m.json").exists()
    assert (inbox.processed / "m.2.json").read_text(encoding="utf-8") == item.raw
    assert (inbox.processed / "m.json").read_text(encoding="utf-8") == "an earlier file of that name"


def test_a_message_sent_before_its_game_existed_is_refused_with_why(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    drop(harness, "old.json", message("o1", body="add 3", sent_at="0001-01-01T00:00:00Z"))
    drop(harness, "early.json", message("o2", body="add 4", sender="bob", game="t1",
                                        sent_at="2026-12-01T09:59:59.999999Z"))
    drop(harness, "ok.json", message("o3", body="add 5", sent_at="2026-12-01T10:00:00Z"))
    report = harness.run(NOW)
    assert report.ok
    assert sorted((i, s) for i, s, _ in stored(harness)) == [("o1", "rejected"), ("o2", "rejected"), ("o3", "applied")]
    old = [p["body"] for p in harness.pms("alice") if p["kind"] == "error"]
    assert len(old) == 1 and "> add 3" in old[0]
    assert "sent at 0001-01-01T00:00:00Z, before game t1 began (2026-12-01T10:00:00Z)" in old[0]
    early = [p["body"] for p in harness.pms("bob")]
    assert len(early) == 1 and "2026-12-01T09:59:59.999999Z, before game t1 began" in early[0]
    from dealer.views import game_view
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"] == {"alice": 5, "bob": 0}


def test_a_game_dated_back_counts_from_its_start(harness) -> None:  # type: ignore[no-untyped-def]
    """``game new --start`` may date a game back: what is sent after its start counts, even
    before the moment it was created; an override may move its deadline back there too."""
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        create_game(session, "tally", "t1", T0 + timedelta(hours=5), players=["alice", "bob"],
                    start=T0, settings={"length": "12h"}, start_in_past=True)
    harness.admin(setup)
    drop(harness, "a.json", message("d1", body="add 3", sent_at="2026-12-01T10:30:00Z"))
    drop(harness, "b.json", message("d2", body="add 4", sent_at="2026-12-01T09:30:00Z"))
    harness.dealer.settings = harness.settings.model_copy(update={"deadline_overrides": "t1:close=2026-12-01T10:45:00Z"})
    report = harness.run(T0 + timedelta(hours=6))
    assert report.overrides == ["t1:close: close 2026-12-01T22:00:00Z -> 2026-12-01T16:00:00Z"]
    assert sorted((i, s) for i, s, _ in stored(harness)) == [("d1", "applied"), ("d2", "rejected")]
    assert any("before game t1 began (2026-12-01T10:00:00Z)" in p["body"] for p in harness.pms("alice"))
