"""The daemon's backbone on a real store, with the small "tally" ruleset and controlled time."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select

from dealer.shell import timers
from dealer.shell.admin import add_player, create_game

from dealer.views import game_view, player_view
from dealer.store.models import Deadline, Draw, Event, Holding, Inbound, Post
from dealer.verify import verify_game

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
CLOSE = T0 + timedelta(hours=1)


def setup_tally(h, chips: int = 10) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0, chips=chips)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    h.admin(setup)


def test_a_whole_game_through_the_directory_inbox(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.send("alice", "add 3\nadd 4", T0 + timedelta(minutes=5))
    harness.send("Bob", "ADD 2", T0 + timedelta(minutes=6))
    report = harness.run(T0 + timedelta(minutes=10))
    assert (report.ingested, report.messages, report.deadlines) == (2, 2, 0)
    # One reply per message, taking its lines in order.
    (alice,) = harness.pms("alice")
    assert alice["body"].strip().splitlines() == [
        "Your message of 2026-12-01 10:05 UTC (game t1), line by line:",
        "",
        "> add 3",
        "accepted:",
        "Added 3; your total is 3.",
        "",
        "> add 4",
        "accepted:",
        "Added 4; your total is 7.",
    ]
    assert (alice["kind"], alice["subject"]) == ("confirmation", "t1: 2 accepted")
    (bob,) = harness.pms("bob")
    assert "> ADD 2\naccepted:\nAdded 2; your total is 2." in bob["body"]
    assert bob["subject"] == "Added"
    assert not list(harness.inbox_dir.glob("*.json"))
    assert len(list((harness.inbox_dir / "processed").glob("*.json"))) == 2

    report = harness.run(CLOSE + timedelta(seconds=1))
    assert report.deadlines == 1
    view = harness.admin(lambda s: game_view(s, "t1"))
    assert view["status"] == "finished"
    assert view["scores"] == {"alice": 7, "bob": 2}
    winner = view["winner"]
    loser = "bob" if winner == "alice" else "alice"
    assert harness.admin(lambda s: player_view(s, winner))["chips"] == 11
    assert harness.admin(lambda s: player_view(s, loser))["chips"] == 9
    result = harness.public()[-1]
    assert result["kind"] == "result" and result["channel"] == "#tally"
    # The seed is revealed at the end, and every draw checks out.
    assert view["seeds"][0]["server_seed"] in result["body"]
    report = harness.admin(lambda s: verify_game(s, "t1"))
    assert report.ok and report.checked == 1
    draws = harness.admin(lambda s: [e.data for e in s.scalars(select(Event).where(Event.type == "fair.draws"))])
    assert draws == [{"draws": [{"epoch": 0, "counter": 0, "n": 2, "result": ["alice", "bob"].index(winner),
                                 "purpose": "winner"}]}]


def test_currency_is_conserved_in_the_store(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.run(CLOSE)
    totals = harness.admin(
        lambda s: dict(s.execute(select(Holding.item, func.sum(Holding.amount)).group_by(Holding.item)).all())
    )
    assert totals == {"chips": 0}  # mint -30, the players +30 between them


def test_a_message_sent_before_the_deadline_but_read_after_it_counts(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    # The daemon was down: both files are read only after the deadline has passed.
    harness.send("alice", "add 5", CLOSE - timedelta(minutes=1))
    harness.send("bob", "add 5", CLOSE + timedelta(minutes=1))
    harness.run(CLOSE + timedelta(hours=2))
    view = harness.admin(lambda s: game_view(s, "t1"))
    assert view["scores"] == {"alice": 5, "bob": 0}
    bob = harness.pms("bob")
    assert len(bob) == 1 and bob[0]["kind"] == "error"
    assert "Your game t1 has finished" in bob[0]["body"] and "> add 5" in bob[0]["body"]


def test_redelivered_message_is_a_no_op(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.send("alice", "add 5", T0 + timedelta(minutes=1), id="same")
    harness.run(T0 + timedelta(minutes=2))
    harness.send("alice", "add 5", T0 + timedelta(minutes=1), id="same")
    report = harness.run(T0 + timedelta(minutes=3))
    assert report.duplicates == 1 and report.messages == 0
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"]["alice"] == 5
    assert len(list((harness.inbox_dir / "processed").glob("*.json"))) == 2


def test_unreadable_files_go_to_rejected_with_the_reason(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    (harness.inbox_dir / "a-broken.json").write_text("{not json", encoding="utf-8")
    (harness.inbox_dir / "b-fields.json").write_text(json.dumps({"id": "x", "body": "hi"}), encoding="utf-8")
    (harness.inbox_dir / "c-huge.json").write_text(
        json.dumps({"id": "h", "sender": "alice", "body": "x" * 1_000_000, "sent_at": "2026-12-01T10:00:00Z"}),
        encoding="utf-8",
    )
    (harness.inbox_dir / "d-binary.json").write_bytes(b"\xff\xfe\x00garbage")
    report = harness.run(T0 + timedelta(minutes=1))
    assert report.unreadable == 4
    rejected = harness.inbox_dir / "rejected"
    assert sorted(p.name for p in rejected.glob("*.json")) == [
        "a-broken.json", "b-fields.json", "c-huge.json", "d-binary.json"
    ]
    assert "not valid JSON" in (rejected / "a-broken.json.why").read_text()
    why = (rejected / "b-fields.json.why").read_text()
    assert "sender" in why and "sent_at" in why
    assert "at most 65536" in (rejected / "c-huge.json.why").read_text()
    assert "UTF-8" in (rejected / "d-binary.json.why").read_text()


def test_bad_messages_get_clear_private_replies(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    at = T0 + timedelta(minutes=1)
    harness.send("mallory", "add 3", at)
    harness.send("carol", "add 3", at)  # in no game
    harness.send("carol", "add 3", at, game="nope")
    harness.send("carol", "add 3", at, game="t1")  # not a player of t1
    harness.send("alice", "add 11\nadd 1\u200b\nfly away", at)
    harness.send("alice", "a" * 5000, at)
    harness.send("alice", "\x00\x07  \u200b", at)
    harness.run(at + timedelta(minutes=1))
    by = {}
    for p in harness.posts():
        if p["recipient"]:
            by.setdefault(p["recipient"], []).append(p)
    assert [p["kind"] for p in by["mallory"]] == ["error"]
    assert "not a registered player" in by["mallory"][0]["body"]
    carol = [p["body"] for p in by["carol"]]
    assert [p["kind"] for p in by["carol"]] == ["error"] * 3
    assert "in no running game" in carol[0]
    assert "There is no game 'nope'" in carol[1]
    assert "You do not play in game t1" in carol[2]
    # One reply to the three lines: refused, accepted, and a line that is not a command.
    alice = by["alice"]
    assert [p["kind"] for p in alice] == ["reply", "error"]
    body = alice[0]["body"]
    assert "> add 11\nrefused: " in body and "add a number from 1 to 10 (T-1)" in body
    assert "add 3 — add 3 to your tally (T-1)" in body
    assert "> add 1\naccepted:" in body
    assert body.index("> add 11") < body.index("> add 1\n") < body.index("Not read as commands")
    assert "> fly away" in body.split("Not read as commands")[1]
    assert "5000 characters" in alice[1]["body"]
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"]["alice"] == 1
    statuses = harness.admin(lambda s: [r.status for r in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert statuses == ["rejected", "rejected", "rejected", "rejected", "applied", "rejected", "ignored"]


def test_a_rule_id_is_cited_once(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tally
    from dealer.games.base import Rejected

    def refuse(self, ctx, state, actor, command):  # type: ignore[no-untyped-def]
        raise Rejected("closed for now (T-9)", rule="T-9")

    monkeypatch.setattr(tally.Tally, "handle", refuse)
    setup_tally(harness)
    harness.send("alice", "add 1", T0)
    harness.run(T0)
    body = harness.pms("alice")[0]["body"]
    assert body.count("T-9") == 1


def test_public_chatter_is_ignored_but_commands_count(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    at = T0 + timedelta(minutes=1)
    harness.send("alice", "good luck everyone!", at, channel="#tally")
    harness.send("alice", "add 2", at, channel="#tally")
    harness.send("alice", "add 99", at, channel="#tally")
    harness.run(at)
    assert [p["kind"] for p in harness.pms("alice")] == ["confirmation", "error"]


def test_help_lists_the_commands_valid_now(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.send("alice", "help", T0 + timedelta(minutes=1))
    harness.run(T0 + timedelta(minutes=1))
    body = harness.pms("alice")[0]["body"]
    assert "add 3 — add 3 to your tally" in body and "seed SOME TEXT" in body


def test_client_seed_enters_every_later_draw(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.send("bob", "seed my lucky words", T0 + timedelta(minutes=1))
    harness.run(CLOSE)
    view = harness.admin(lambda s: game_view(s, "t1"))
    assert view["seeds"][0]["client_seeds"] == ["bob: my lucky words"]
    assert harness.admin(lambda s: verify_game(s, "t1")).ok


def test_verify_detects_a_tampered_draw(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.run(CLOSE)

    def tamper(session):  # type: ignore[no-untyped-def]
        draw = session.scalars(select(Draw)).one()
        draw.result = 1 - draw.result
    harness.admin(tamper)
    report = harness.admin(lambda s: verify_game(s, "t1"))
    assert not report.ok and "another result" in report.problems[0]


def test_overdue_deadlines_fire_oldest_first(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=5)
        create_game(session, "tally", "late", T0, players=["alice", "bob"], settings={"length": "3h"})
        create_game(session, "tally", "early", T0, players=["alice", "bob"], settings={"length": "1h"})
    harness.admin(setup)
    harness.run(T0 + timedelta(days=2))
    fired = harness.admin(
        lambda s: [r.game_id for r in s.scalars(select(Deadline).where(Deadline.status == "fired").order_by(Deadline.fired_at, Deadline.id))]
    )
    results = [p["game"] for p in harness.public() if p["kind"] == "result"]
    assert results == ["early", "late"]
    assert sorted(fired) == ["early", "late"]


def test_two_daemons_never_fire_a_deadline_twice(make_harness) -> None:  # type: ignore[no-untyped-def]
    first = make_harness()
    second = make_harness()
    setup_tally(first)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work(h):  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            h.dealer.process_due(CLOSE)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(h,)) for h in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    fired = first.admin(lambda s: s.scalar(select(func.count()).select_from(Event).where(Event.type == "tally.closed")))
    assert fired == 1


def test_the_scheduler_mirrors_pending_deadlines_and_never_drops_a_missed_one(harness) -> None:  # type: ignore[no-untyped-def]
    from apscheduler.schedulers.background import BackgroundScheduler

    setup_tally(harness)
    scheduler = BackgroundScheduler(timezone=timezone.utc, job_defaults={"misfire_grace_time": None})
    scheduler.start(paused=True)
    try:
        assert timers.sync_timers(scheduler, harness.dealer.reader, harness.dealer.wake) == 1
        job = scheduler.get_jobs()[0]
        assert job.id == "next-deadline" and job.next_run_time == CLOSE
        assert job.misfire_grace_time is None
        harness.run(CLOSE)
        assert timers.sync_timers(scheduler, harness.dealer.reader, harness.dealer.wake) == 0
        assert scheduler.get_jobs() == []
    finally:
        scheduler.shutdown(wait=False)


def test_player_text_in_subjects_and_bodies_mentions_nobody(harness) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.send("alice", "@everyone **look** <@123> [url=x]y[/url]", T0)
    harness.run(T0)
    error = harness.pms("alice")[0]
    for text in (error["subject"], error["body"]):
        assert "@everyone" not in text and "<@123>" not in text
        assert "**look**" not in text and "[url=x]" not in text
    assert "@\u2060everyone \\*\\*look\\*\\*" in error["body"]


def test_run_forever_reloads_overrides_on_sighup(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os
    import signal

    setup_tally(harness)
    clock = iter([T0] + [T0 + timedelta(minutes=1)] * 20)
    harness.dealer.clock = lambda: next(clock)
    monkeypatch.setenv("DEALER_DEADLINE_OVERRIDES", "")
    loops = []

    def fake_wait(timeout=None):  # type: ignore[no-untyped-def]
        # Stands in for the timer/poll wait: no real time passes in this test.
        loops.append(timeout)
        if len(loops) == 1:  # an admin edits the overrides and sends SIGHUP
            monkeypatch.setenv("DEALER_DEADLINE_OVERRIDES", "t1=now")
            os.kill(os.getpid(), signal.SIGHUP)
        if len(loops) == 2:
            harness.dealer.stopping = True
        return True

    previous = {s: signal.getsignal(s) for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)}
    monkeypatch.setattr(harness.dealer.wake, "wait", fake_wait)
    try:
        timers.run_forever(harness.dealer)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert len(loops) == 2
    # The deadline was an hour away; the reloaded override fired it at the second pass.
    view = harness.admin(lambda s: game_view(s, "t1"))
    assert view["status"] == "finished"
    assert [e["type"] for e in view["history"]][-2:] == ["admin.override", "deadline.fired"]


def test_a_message_that_crashes_the_rules_is_marked_failed_and_holds_nobody_back(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tally

    setup_tally(harness)
    original = tally.Tally.handle

    def faulty(self, ctx, state, actor, command):  # type: ignore[no-untyped-def]
        if command.amount == 7:
            raise RuntimeError("a bug in the rules")
        return original(self, ctx, state, actor, command)

    monkeypatch.setattr(tally.Tally, "handle", faulty)
    harness.send("alice", "add 1", T0 + timedelta(minutes=1))
    harness.send("alice", "add 7", T0 + timedelta(minutes=2))
    harness.send("bob", "add 2", T0 + timedelta(minutes=3))
    report = harness.run(T0 + timedelta(minutes=5))
    assert report.messages == 2 and len(report.failed_messages) == 1 and not report.ok
    rows = harness.admin(lambda s: [(r.status, r.outcome) for r in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert [status for status, _ in rows] == ["applied", "failed", "applied"]
    assert "a bug in the rules" in rows[1][1][0]["detail"]
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"] == {"alice": 1, "bob": 2}
