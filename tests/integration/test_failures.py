"""What dealer cannot handle is never silent: failed messages and deadlines, on a real store.

A fault is injected into the "tally" test ruleset (a bug, a missing template); the daemon
runs real passes over a directory inbox and outbox, and ``dealer`` is run in-process on the
same store and folders.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

import tally
from dealer.shell import failures, timers
from dealer.clock import iso
from dealer.shell.admin import add_player, create_game
from dealer.views import game_view
from dealer.store.models import Deadline, Inbound

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
CLOSE = T0 + timedelta(hours=1)
NOT_HANDLED = "dealer could not handle this message; the host has been told."


def setup_tally(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carol", "dave"):
            add_player(session, name, T0, chips=10)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    h.admin(setup)


def inbound_rows(h) -> list[tuple[int, str, str | None]]:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: [(r.id, r.status, r.error) for r in s.scalars(select(Inbound).order_by(Inbound.id))])


def bodies(h, recipient: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [p["body"].strip() for p in h.pms(recipient)]


@pytest.fixture
def buggy_seven(monkeypatch):  # type: ignore[no-untyped-def]
    """A bug in the rules: ``add 7`` crashes. Undo it with ``buggy_seven.fix()``."""
    original = tally.Tally.handle

    def faulty(self, ctx, state, actor, command):  # type: ignore[no-untyped-def]
        if command.amount == 7:
            raise RuntimeError("a bug in the rules")
        return original(self, ctx, state, actor, command)

    monkeypatch.setattr(tally.Tally, "handle", faulty)

    class Fault:
        @staticmethod
        def fix() -> None:
            monkeypatch.setattr(tally.Tally, "handle", original)

    return Fault


def test_a_failed_message_is_loud_answered_once_and_replayed_once_fixed(harness, cli, buggy_seven, caplog) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.send("alice", "add 1", T0 + timedelta(minutes=1))
    harness.send("alice", "add 7\nthanks", T0 + timedelta(minutes=2), id="seven")
    harness.send("bob", "add 2", T0 + timedelta(minutes=3))

    with caplog.at_level(logging.INFO):
        result = cli("run", "--once", "--now", iso(T0 + timedelta(minutes=5)), ok=False)
    assert result.exit_code == 1
    (failed_id,) = [i for i, status, _ in inbound_rows(harness) if status == "failed"]
    assert f"1 message could not be handled (id {failed_id})" in result.output
    assert f"dealer inbox retry {failed_id}" in result.output
    assert "NOT HANDLED: messages 1, deadlines 0, held 0" in result.output
    loud = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert len(loud) == 1 and f"message {failed_id} could NOT be handled" in loud[0].getMessage()
    assert "RuntimeError: a bug in the rules" in loud[0].getMessage()

    # Stored with its error; the messages around it were applied; nothing of it was.
    assert [(s, e) for _, s, e in inbound_rows(harness)] == [
        ("applied", None), ("failed", "RuntimeError: a bug in the rules"), ("applied", None)
    ]
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"] == {"alice": 1, "bob": 2}
    # One private reply to its sender, from the shipped template, quoting the message.
    failure = [p for p in harness.pms("alice") if p["kind"] == "failed"]
    assert len(failure) == 1
    assert failure[0]["subject"] == "Not handled: add 7" and failure[0]["channel"] == "pm"
    assert failure[0]["body"].startswith(NOT_HANDLED + "\n> add 7\n")
    assert "no need to send it again" in failure[0]["body"]
    (bob,) = bodies(harness, "bob")
    assert "Added 2; your total is 2." in bob

    listed = cli("inbox", "list", "--failed").output
    assert f"{failed_id}  failed  2026-12-01T10:02:00Z  from alice (pm)  id seven" in listed
    assert "error: RuntimeError: a bug in the rules" in listed
    as_json = json.loads(cli("inbox", "list", "--failed", "--json").output)
    assert [(m["id"], m["message_id"], m["error"]) for m in as_json] == [
        (failed_id, "seven", "RuntimeError: a bug in the rules")
    ]
    assert len(json.loads(cli("inbox", "list", "--json").output)) == 3
    # A later pass with nothing new exits 0 and reminds the host of what waits.
    later = cli("run", "--once", "--now", iso(T0 + timedelta(minutes=6)))
    assert "1 failed message waits for `dealer inbox retry`" in later.output

    # Fixed: the retry puts it back to pending, and the next pass applies it, at its sent_at.
    buggy_seven.fix()
    assert "pending again" in cli("inbox", "retry", "seven").output
    assert [s for _, s, _ in inbound_rows(harness)] == ["applied", "pending", "applied"]
    result = cli("run", "--once", "--now", iso(T0 + timedelta(minutes=20)))
    assert "messages 1, deadlines 0" in result.output and "NOT HANDLED" not in result.output
    assert [(s, e) for _, s, e in inbound_rows(harness)] == [("applied", None)] * 3
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"] == {"alice": 8, "bob": 2}
    alice = bodies(harness, "alice")
    assert "Added 1; your total is 1." in alice[0] and "Added 7; your total is 8." in alice[-1]
    assert sum(body.startswith(NOT_HANDLED) for body in alice) == 1
    assert cli("inbox", "list", "--failed").output.strip() == "no failed messages"


def test_retry_all_replays_every_failed_message_and_refuses_the_others(harness, cli, buggy_seven) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    harness.send("alice", "add 7", T0 + timedelta(minutes=1))
    harness.send("bob", "add 3", T0 + timedelta(minutes=2), id="fine")
    harness.send("bob", "add 7", T0 + timedelta(minutes=3))
    report = harness.run(T0 + timedelta(minutes=5))
    assert not report.ok and len(report.failed_messages) == 2 and report.messages == 1

    assert cli("inbox", "retry", ok=False).exit_code == 2
    assert cli("inbox", "retry", "1", "--all", ok=False).exit_code == 2
    refused = cli("inbox", "retry", "fine", ok=False)
    assert refused.exit_code == 1 and "is applied, not failed" in refused.output
    assert "there is no stored message 'nope'" in cli("inbox", "retry", "nope", ok=False).output

    # A second failure of a retried message tells nobody twice.
    cli("inbox", "retry", "--all")
    report = harness.run(T0 + timedelta(minutes=6))
    assert len(report.failed_messages) == 2
    assert sum(p["kind"] == "failed" for p in harness.posts()) == 2

    buggy_seven.fix()
    out = cli("inbox", "retry", "--all").output
    assert out.count("is pending again (it had failed: RuntimeError: a bug in the rules)") == 2
    report = harness.run(T0 + timedelta(minutes=7))
    assert report.ok and report.messages == 2
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"] == {"alice": 7, "bob": 10}
    assert "no failed messages to retry" in cli("inbox", "retry", "--all").output


def test_a_missing_template_fails_the_message_not_the_pass(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)
    original = tally.Tally.handle

    def without_template(self, ctx, state, actor, command):  # type: ignore[no-untyped-def]
        state = original(self, ctx, state, actor, command)
        ctx.reply(actor, "note", "tally/not-shipped.txt", "Note")
        return state

    monkeypatch.setattr(tally.Tally, "handle", without_template)
    harness.send("alice", "add 2", T0 + timedelta(minutes=1))
    report = harness.run(T0 + timedelta(minutes=2))
    assert not report.ok
    assert [(s, e) for _, s, e in inbound_rows(harness)] == [("failed", "TemplateNotFound: tally/not-shipped.txt")]
    assert bodies(harness, "alice")[0].startswith(NOT_HANDLED)


def test_the_failure_reply_falls_back_to_plain_text(harness, buggy_seven, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    setup_tally(harness)

    def broken_render(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError("the disk is gone")

    monkeypatch.setattr(failures, "render", broken_render)
    harness.send("alice", "add 7", T0 + timedelta(minutes=1))
    harness.run(T0 + timedelta(minutes=2))
    assert harness.pms("alice")[0]["body"] == failures.FAILURE_REPLY
    assert failures.FAILURE_REPLY.startswith(NOT_HANDLED)


def test_a_deadline_that_crashes_holds_its_game_and_fires_once_fixed(harness, cli, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    from apscheduler.schedulers.background import BackgroundScheduler

    setup_tally(harness)
    harness.admin(lambda s: create_game(s, "tally", "t2", T0 + timedelta(minutes=30), players=["carol", "dave"]))
    original = tally.Tally.on_deadline

    def faulty(self, ctx, state, name):  # type: ignore[no-untyped-def]
        if ctx.game_id == "t1":
            raise KeyError("round")
        return original(self, ctx, state, name)

    monkeypatch.setattr(tally.Tally, "on_deadline", faulty)
    harness.send("alice", "add 1", CLOSE - timedelta(minutes=5))
    harness.send("bob", "add 2", CLOSE + timedelta(seconds=30))  # after t1's close: must wait
    harness.send("carol", "add 3", CLOSE + timedelta(seconds=40))  # t2 is not held

    with caplog.at_level(logging.INFO):
        result = cli("run", "--once", "--now", iso(CLOSE + timedelta(minutes=1)), ok=False)
    assert result.exit_code == 1
    assert "1 deadline could not be fired (t1:close)" in result.output
    assert "NOT HANDLED: messages 0, deadlines 1, held 1" in result.output
    loud = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert len(loud) == 1 and "deadline close of game t1" in loud[0].getMessage()

    def t1_close(s):  # type: ignore[no-untyped-def]
        return s.scalars(select(Deadline).where(Deadline.game_id == "t1")).one()

    row = harness.admin(t1_close)
    assert (row.status, row.error) == ("pending", "KeyError: 'round'")
    assert [s for _, s, _ in inbound_rows(harness)] == ["applied", "pending", "applied"]
    assert harness.admin(lambda s: game_view(s, "t2"))["scores"] == {"carol": 3, "dave": 0}
    assert "COULD NOT BE FIRED, retried every pass: KeyError: 'round'" in cli("game", "show", "t1").output

    # The long-running daemon gets no timer for it (that would wake it again and again);
    # its poll passes retry it, logging the traceback only the first time.
    scheduler = BackgroundScheduler(timezone=timezone.utc)
    scheduler.start(paused=True)
    try:
        assert timers.sync_timers(scheduler, harness.dealer.reader, harness.dealer.wake, after=CLOSE + timedelta(minutes=1)) == 1  # t2's close
        assert [j.next_run_time for j in scheduler.get_jobs()] != [row.due_at]
    finally:
        scheduler.shutdown(wait=False)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        report = harness.run(CLOSE + timedelta(minutes=2))
    assert report.failed_deadlines == ["t1:close"] and report.held == 1
    assert not [r for r in caplog.records if r.exc_info and "deadline" in r.getMessage()]
    assert any("still cannot be fired" in r.getMessage() for r in caplog.records)

    # Fixed: the deadline fires first, then bob's message, which came after it, is judged
    # against the closed tally, as it would have been on time.
    monkeypatch.setattr(tally.Tally, "on_deadline", original)
    report = harness.run(CLOSE + timedelta(minutes=3))
    assert report.ok and report.deadlines == 1 and report.messages == 1 and report.held == 0
    row = harness.admin(t1_close)
    assert (row.status, row.error) == ("fired", None)
    assert harness.admin(lambda s: game_view(s, "t1"))["status"] == "finished"
    assert [s for _, s, _ in inbound_rows(harness)] == ["applied", "rejected", "applied"]
    assert "t1 has finished" in bodies(harness, "bob")[-1]
