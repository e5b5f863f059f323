"""What an operator sees: `dealer outbox`, `dealer health`, JSON log lines, metrics."""

from __future__ import annotations

import io
import json
import logging
from datetime import datetime, timedelta, timezone

import pytest
from prometheus_client import generate_latest

from dealer import logs
from dealer.metrics import METRICS
from dealer.store.db import make_engine, session_factory
from dealer.store.models import Deadline, Post

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def _add(database_url: str, *rows: object) -> None:
    engine = make_engine(database_url)
    with session_factory(engine).begin() as session:
        session.add_all(rows)
    engine.dispose()


def _post(key: str, status: str, recipient: str = "alice", **fields: object) -> Post:
    return Post(key=key, game_id="t1", channel="pm", recipient=recipient, kind="note", subject=f"about {key}",
                body="b", created_at=T0, status=status, attempts=fields.pop("attempts", 0), **fields)


def test_outbox_list_and_retry(cli, database_url) -> None:  # type: ignore[no-untyped-def]
    assert "no posts queued yet" in cli("outbox", "list").output
    _add(database_url,
         _post("a", "failed", attempts=5, last_error="channel not found"),
         _post("b", "pending"),
         _post("c", "delivered", recipient="bob"))
    listed = cli("outbox", "list").output
    assert "1  PARKED" in listed and "PM to alice" in listed and "error: channel not found" in listed
    assert "`dealer outbox retry ID`" in listed
    failed = json.loads(cli("outbox", "list", "--failed", "--json").output)
    assert [(p["id"], p["status"], p["attempts"]) for p in failed] == [(1, "failed", 5)]
    # Only parked posts can be re-queued.
    refused = cli("outbox", "retry", "3", ok=False)
    assert refused.exit_code == 1 and "post 3 is delivered, not parked" in refused.output
    assert "name the posts" in cli("outbox", "retry", ok=False).output
    done = cli("outbox", "retry", "1").output
    assert "post 1 to alice is queued again (it had failed: channel not found)" in done
    assert "no parked posts" in cli("outbox", "list", "--failed").output
    # The next pass sends it, then alice's later post.
    cli("run", "--once", "--now", "2026-12-01T10:00:00Z")
    assert [json.loads(p.read_text())["key"] for p in sorted(cli.outbox.glob("*.json"))] == ["a", "b"]
    assert "no parked posts to retry" in cli("outbox", "retry", "--all").output


def test_health_says_why_it_is_not_healthy(cli, database_url) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "alice")
    cli("player", "add", "bob")
    cli("game", "new", "tally", "--id", "t1", "--players", "alice,bob", "--start-in-past", "--start", "2026-12-01T10:00:00Z")
    assert cli("health", "--now", "2026-12-01T10:30:00Z").output.strip() == "healthy"
    # tally's deadline "close" is due at 11:00: 59 s late is fine, a minute and more is not.
    assert cli("health", "--now", "2026-12-01T11:00:59Z").exit_code == 0
    late = cli("health", "--now", "2026-12-01T11:01:01Z", ok=False)
    assert late.exit_code == 1
    assert "1 deadline(s) overdue by more than a minute: t1:close (due 2026-12-01 11:00 UTC)" in late.output
    _add(database_url, _post("x", "failed"))
    parked = cli("health", "--now", "2026-12-01T10:30:00Z", ok=False)
    assert parked.exit_code == 1 and "1 post(s) parked" in parked.output


def test_health_on_a_store_without_the_schema_or_unreachable(tmp_path) -> None:
    from click.testing import CliRunner

    from dealer.cli import main

    env = {"DEALER_HOME": str(tmp_path), "DEALER_DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}"}
    result = CliRunner().invoke(main, ["health"], env=env)
    assert result.exit_code == 1 and "Run `dealer migrate`" in result.output
    env["DEALER_DATABASE_URL"] = "postgresql+psycopg://nobody@127.0.0.1:1/none"
    result = CliRunner().invoke(main, ["health"], env=env)
    assert result.exit_code == 1 and "the store cannot be reached" in result.output


def _capture(fmt: str) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter() if fmt == "json" else logs.TextFormatter())
    handler.addFilter(logs._ScopeFilter())
    logger = logging.getLogger(f"dealer.test.{fmt}")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger, stream


def test_json_log_lines_name_the_game_message_and_deadline() -> None:
    logger, stream = _capture("json")

    @logs.scoped
    def step() -> None:
        logs.bind(message_id=12)
        logger.info("routing")
        logs.bind(game_id="r1", deadline="round-1")
        logger.warning("late by %s s", 3)

    step()
    logger.info("after")  # the scope ended with the unit of work
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines[0]["message"] == "routing" and lines[0]["message_id"] == 12 and "game_id" not in lines[0]
    assert {k: lines[1][k] for k in ("level", "message", "game_id", "message_id", "deadline")} == {
        "level": "WARNING", "message": "late by 3 s", "game_id": "r1", "message_id": 12, "deadline": "round-1"}
    assert set(lines[2]) == {"time", "level", "logger", "message"}
    with pytest.raises(TypeError, match="unknown log fields"):
        logs.bind(player="alice")


def test_text_log_lines_carry_the_same_fields_after_the_message() -> None:
    logger, stream = _capture("text")
    with logs.context(game_id="t1", post_id=4):
        logger.info("sent")
    assert stream.getvalue().rstrip().endswith("sent [game=t1 post=4]")


def _tally(harness) -> None:  # type: ignore[no-untyped-def]
    from dealer.shell.admin import add_player, create_game

    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)


def test_the_daemon_logs_json_lines_about_a_failed_deadline(harness, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tally

    _tally(harness)
    monkeypatch.setattr(tally.Tally, "on_deadline", lambda self, ctx, state, name: 1 / 0)
    handler = logs.configure(fmt="json")
    try:
        harness.run(T0 + timedelta(hours=2))
    finally:
        logging.getLogger().removeHandler(handler)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    failed = [line for line in lines if "could NOT be fired" in line["message"]]
    assert failed and failed[0]["game_id"] == "t1" and failed[0]["deadline"] == "close"
    assert "ZeroDivisionError" in failed[0]["exception"]


def _sample(name: str, **labels: str) -> float:
    for family in METRICS.registry.collect():
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_metrics_count_messages_deadlines_posts_and_passes(harness) -> None:  # type: ignore[no-untyped-def]
    from dealer.testing import MemoryPublisher

    METRICS.enable()
    watched = [
        ("dealer_messages_total", {"outcome": "applied"}), ("dealer_messages_total", {"outcome": "rejected"}),
        ("dealer_deadlines_fired_total", {}), ("dealer_deadline_lateness_seconds_count", {}),
        ("dealer_posts_total", {"outcome": "delivered"}), ("dealer_posts_total", {"outcome": "retried"}),
        ("dealer_pass_duration_seconds_count", {}),
    ]
    before = [_sample(name, **labels) for name, labels in watched]
    _tally(harness)
    harness.dealer.publisher = MemoryPublisher(fail_next=1)  # the opening post fails once
    harness.send("alice", "add 1", T0)
    harness.send("bob", "add 11", T0)  # refused: 1 to 10
    harness.run(T0 + timedelta(hours=1, seconds=30))  # the tally closes (due 11:00)
    grown = [_sample(name, **labels) - b for (name, labels), b in zip(watched, before)]
    # applied, rejected, fired, lateness observed, delivered (the two replies: the
    # opening waits for its backoff, and the result, in the same channel, after it),
    # retried, one pass.
    assert grown == [1, 1, 1, 1, 2, 1, 1]
    assert _sample("dealer_posts_parked") == 0
    assert b"dealer_deadline_lateness_seconds_bucket" in generate_latest(METRICS.registry)


def test_metrics_are_served_over_http() -> None:
    from urllib.request import urlopen

    from dealer.metrics import serve

    server, thread = serve(0, "127.0.0.1")  # an ephemeral port
    try:
        METRICS.parked(3)
        with urlopen(f"http://127.0.0.1:{server.server_port}/metrics", timeout=10) as response:
            body = response.read().decode("utf-8")
    finally:
        server.shutdown()
        thread.join(timeout=10)
        METRICS.parked(0)
    assert "dealer_posts_parked 3.0" in body and "dealer_pass_duration_seconds_bucket" in body
