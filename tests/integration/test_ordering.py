"""Messages count in the order they were sent, to the microsecond; exact ties go to the one
dealer received first (SR-6: a later submission replaces an earlier one)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import select

from dealer.clock import iso_exact
from dealer.store.queries import due_now
from dealer.inbox.directory import DirectoryInbox
from dealer.shell.admin import add_player, create_game
from dealer.store.models import Game, Inbound

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
FIRST = "prepare gold gold 30 silver 10"
SECOND = "prepare silver gold 26 silver 14"


def test_sent_at_keeps_its_microseconds_in_the_store(harness) -> None:  # type: ignore[no-untyped-def]
    times = [T0 + timedelta(microseconds=us) for us in (999_999, 1, 500_000, 0, 2)]
    for n, at in enumerate(times):
        harness.send("alice", f"message {n}", at, id=f"m{n}")
    harness.dealer.ingest(T0 + timedelta(minutes=1))
    stored = harness.admin(
        lambda s: {r.external_id: r.sent_at for r in s.scalars(select(Inbound))}
    )
    assert stored == {f"m{n}": at for n, at in enumerate(times)}
    # Pending messages come in sent order, to the microsecond.
    with harness.dealer.engine.connect() as connection:
        order = [sent for _, sent in due_now(connection, T0, set(), set(), 200, 50).messages]
    assert order == sorted(times)


def test_an_exact_tie_goes_to_the_message_received_first(harness) -> None:  # type: ignore[no-untyped-def]
    at = T0 + timedelta(microseconds=123_456)
    for n in range(6):
        harness.send("alice", f"message {n}", at, id=f"tie{5 - n}")  # ids sort against arrival
    harness.dealer.ingest(T0 + timedelta(minutes=1))
    with harness.dealer.engine.connect() as connection:
        ids = [message_id for message_id, _ in due_now(connection, T0, set(), set(), 200, 50).messages]
    external = harness.admin(lambda s: {r.id: r.external_id for r in s.scalars(select(Inbound))})
    assert [external[i] for i in ids] == [f"tie{5 - n}" for n in range(6)]


def test_the_directory_inbox_reads_files_in_arrival_order(tmp_path: Path) -> None:
    inbox = DirectoryInbox(tmp_path)
    base = 1_800_000_000_000_000_000

    def write(name: str, mtime_ns: int) -> None:
        message = {"id": name, "sender": "alice", "body": "x", "sent_at": "2026-12-01T10:00:00Z"}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(message), encoding="utf-8")
        os.utime(path, ns=(mtime_ns, mtime_ns))

    write("c", base + 1)  # written last by the clock, though its name sorts first
    write("b", base)
    write("z", base - 5)
    write("a", base)  # same tick as "b": the name decides
    (tmp_path / ".d.json.tmp").write_text("{}", encoding="utf-8")  # a writer's temporary file
    (tmp_path / "folder.json").mkdir()
    assert [p.name for p in inbox.waiting()] == ["z.json", "a.json", "b.json", "c.json"]
    assert [d.message.id for d in inbox.fetch()] == ["z", "a", "b", "c"]


def test_submit_keeps_microseconds_and_names_files_in_the_order_written(cli) -> None:  # type: ignore[no-untyped-def]
    cli("submit", "--from", "alice", "--at", "2026-12-01T10:00:00.000007Z", "--id", "late", "bet gold 40")
    cli("submit", "--from", "alice", "--at", "2026-12-01T10:00:00.000007Z", "--id", "a-early", "bet gold 40")
    cli("submit", "--from", "alice", "--at", "2026-12-01T10:00:00Z", "--id", "whole", "bet gold 40")
    files = DirectoryInbox(cli.inbox).waiting()
    messages = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    assert [m["id"] for m in messages] == ["late", "a-early", "whole"]
    assert [m["sent_at"] for m in messages] == [
        "2026-12-01T10:00:00.000007Z", "2026-12-01T10:00:00.000007Z", "2026-12-01T10:00:00Z"
    ]
    # Names sort in the order written, even where the file system's clock did not tick.
    assert [f.name for f in files] == sorted(f.name for f in files)


def test_the_later_of_two_preparations_sent_within_one_second_always_wins(cli, database_url) -> None:  # type: ignore[no-untyped-def]
    """50 same-second pairs through ``dealer submit`` and ``dealer run --once``.

    A pair is either an exact tie (a forwarder gives both the same whole-second time: the
    one submitted second is the later), or two times a fraction of a second apart (the
    later wins even when it was submitted, and so received, first).
    """
    cli("player", "add", "alice")
    cli("player", "add", "bob")
    cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob",
        "--start-in-past", "--start", iso_exact(T0), "--set", "remind_before=")
    for pair in range(50):
        second = T0 + timedelta(hours=1, seconds=pair)
        if pair % 3 == 0:  # an exact tie: arrival decides
            sends = [(second, FIRST), (second, SECOND)]
        elif pair % 3 == 1:  # 0.8 s apart, submitted in order
            sends = [(second + timedelta(microseconds=100_000), FIRST),
                     (second + timedelta(microseconds=900_000), SECOND)]
        else:  # 1 microsecond apart, the later one submitted first
            sends = [(second + timedelta(microseconds=250_001), SECOND),
                     (second + timedelta(microseconds=250_000), FIRST)]
        for at, text in sends:
            cli("submit", "--from", "alice", "--at", iso_exact(at), text)
    cli("run", "--once", "--now", iso_exact(T0 + timedelta(hours=2)))

    replies = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(cli.outbox.glob("*.json"))]
    replies = [p for p in replies if p["recipient"] == "alice"]
    assert len(replies) == 100
    colours = ["silver" if "Winning colour silver" in p["body"] else "gold" for p in replies]
    assert colours == ["gold", "silver"] * 50
    for number, reply in enumerate(replies, start=1):
        assert f"your preparation no. {number} in the preparation phase" in reply["body"]

    from dealer.store.db import make_engine, session_factory

    engine = make_engine(database_url)
    with session_factory(engine)() as session:
        state = session.get(Game, "r1").state
    engine.dispose()
    on_file = state["preparations"]["alice"]
    assert (on_file["colour"], on_file["gold"], on_file["number"]) == ("silver", 26, 100)
