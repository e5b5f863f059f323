"""Admin deadline overrides from configuration: applied once, announced once, kept in history."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

from dealer.shell.overrides import BadOverride, parse_overrides
from dealer.shell.admin import add_player, create_game
from dealer.views import game_view
from dealer.store.models import Event

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


def setup(h, rounds: int = 1) -> None:  # type: ignore[no-untyped-def]
    def make(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=5)
        add_player(session, "bob", T0, chips=5)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"], settings={"rounds": str(rounds)})
    h.admin(make)


def deadlines(h) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {d["name"]: d["due_at"] for d in h.admin(lambda s: game_view(s, "t1"))["deadlines"]}


def overrides_posts(h) -> list[str]:  # type: ignore[no-untyped-def]
    return [p["body"] for p in h.public() if p["kind"] == "deadline_override"]


def test_parsing_both_forms_and_refusing_nonsense() -> None:
    specs = parse_overrides('{"g1": "pause", "g2:round-3": "+12h"}')
    assert [(s.game_id, s.deadline, s.action) for s in specs] == [("g1", None, "pause"), ("g2", "round-3", "shift")]
    specs = parse_overrides("g1=NOW; g2:close=2026-12-02T18:00:00Z, g3=-30m")
    assert [(s.key, s.value) for s in specs] == [("g1", "now"), ("g2:close", "2026-12-02T18:00:00Z"), ("g3", "-30m")]
    assert parse_overrides("  ") == []
    for bad in ("g1", "g1=+soon", "g1=tomorrow", '{"g1": ', "[1]"):
        with pytest.raises(BadOverride):
            parse_overrides(bad)


def test_an_extension_is_applied_once_and_announced_once(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=+12h")
    setup(h)
    h.run(T0 + timedelta(minutes=1))
    h.run(T0 + timedelta(minutes=2))
    assert deadlines(h) == {"close": "2026-12-01T23:00:00Z"}
    posts = overrides_posts(h)
    assert len(posts) == 1 and "2026-12-01 11:00 UTC → 2026-12-01 23:00 UTC" in posts[0]
    h.run(T0 + 2 * HOUR)  # the old time passes: nothing fires
    assert h.admin(lambda s: game_view(s, "t1"))["status"] == "running"
    history = h.admin(lambda s: game_view(s, "t1"))["history"]
    assert [e["type"] for e in history] == ["deadline.set", "admin.override"]
    assert history[1]["deadlines"] == [{"deadline": "close", "from": "2026-12-01T11:00:00Z", "to": "2026-12-01T23:00:00Z"}]


def test_an_absolute_time_for_one_deadline(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1:close=2026-12-01T10:30:00Z")
    setup(h)
    h.run(T0 + timedelta(minutes=31))
    assert h.admin(lambda s: game_view(s, "t1"))["status"] == "finished"


def test_now_fires_the_deadline_once_not_on_every_pass(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=now")
    setup(h, rounds=3)
    h.run(T0 + timedelta(minutes=5))
    # Round 1 closed at once; round 2's deadline is new and keeps its full hour.
    assert deadlines(h) == {"close": "2026-12-01T11:05:00Z"}
    h.run(T0 + timedelta(minutes=6))
    assert deadlines(h) == {"close": "2026-12-01T11:05:00Z"}
    assert len(overrides_posts(h)) == 1


def test_pause_holds_deadlines_and_resume_gives_the_time_back(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=pause")
    setup(h)
    h.run(T0 + timedelta(minutes=30))  # paused at 10:30 with 30 min left
    h.send("alice", "add 2", T0 + 2 * HOUR)  # submissions are still accepted
    h.run(T0 + 3 * HOUR)
    view = h.admin(lambda s: game_view(s, "t1"))
    assert view["status"] == "running" and view["scores"]["alice"] == 2
    assert view["deadlines"][0]["paused"] is True
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": ""})
    h.run(T0 + 4 * HOUR)  # resumed at 14:00 after 3 h 30 min of pause
    assert deadlines(h) == {"close": "2026-12-01T14:30:00Z"}
    posts = overrides_posts(h)
    assert "is paused by an admin" in posts[0] and "has resumed" in posts[1]
    h.run(T0 + 4 * HOUR + timedelta(minutes=30))
    assert h.admin(lambda s: game_view(s, "t1"))["status"] == "finished"


def test_a_changed_value_is_applied_again(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=+1h")
    setup(h)
    h.run(T0)
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": "t1=+2h"})
    h.run(T0)
    assert deadlines(h) == {"close": "2026-12-01T14:00:00Z"}


def test_an_override_for_an_unknown_game_is_reported_not_fatal(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="ghost=now; t1=+1h")
    setup(h)
    report = h.run(T0)
    assert any("no game ghost" in c for c in report.overrides)
    assert deadlines(h) == {"close": "2026-12-01T12:00:00Z"}


def test_a_malformed_setting_changes_nothing_and_says_why(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=whenever")
    setup(h)
    report = h.run(T0)
    assert report.overrides and report.overrides[0].startswith("error:")
    assert deadlines(h) == {"close": "2026-12-01T11:00:00Z"}
    assert h.admin(lambda s: s.scalars(select(Event).where(Event.type == "admin.override")).all()) == []


def test_comments_tags_and_bare_numbers() -> None:
    specs = parse_overrides("# paused for the holidays\ng1=pause\ng1@2=+12h\ng1:close@x=now\n")
    assert [(s.key, s.game_id, s.deadline, s.value, s.tag) for s in specs] == [
        ("g1", "g1", None, "pause", None),
        ("g1@2", "g1", None, "+12h", "2"),
        ("g1:close@x", "g1", "close", "now", "x"),
    ]
    with pytest.raises(BadOverride, match="write the change like"):
        parse_overrides("g1=+12")  # a bare number is no duration
    with pytest.raises(BadOverride, match="takes no @tag"):
        parse_overrides("g1@1=pause")
    with pytest.raises(BadOverride, match="^/etc/o.env: override 'g1' needs the form KEY=VALUE$"):
        parse_overrides("g1", source="/etc/o.env")


def test_the_file_is_read_on_every_pass_and_wins_over_the_variable(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=+1h; t1:close=+2h")
    setup(h)
    path = Path(h.settings.overrides_file)
    assert path == h.root / "overrides.env"
    path.write_text("# written by hand\nt1=+3h\n", encoding="utf-8")
    h.run(T0)
    # t1: the file's +3h wins over the variable's +1h; t1:close comes from the variable.
    assert deadlines(h) == {"close": "2026-12-01T16:00:00Z"}
    path.write_text("t1=+3h\nt1@again=+30m\n", encoding="utf-8")  # no restart, no signal
    h.run(T0 + timedelta(minutes=1))
    assert deadlines(h) == {"close": "2026-12-01T16:30:00Z"}


def test_a_malformed_file_changes_nothing_not_even_a_pause(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness()
    setup(h)
    path = Path(h.settings.overrides_file)
    path.write_text("t1=pause\n", encoding="utf-8")
    h.run(T0)
    path.write_text("t1=pause\nt1=whenever\n", encoding="utf-8")
    report = h.run(T0 + 2 * HOUR)
    assert report.overrides[0].startswith(f"error: {path}: override t1=whenever")
    view = h.admin(lambda s: game_view(s, "t1"))
    assert view["status"] == "running" and view["deadlines"][0]["paused"] is True
