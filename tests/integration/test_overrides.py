"""Admin deadline overrides from configuration: applied once, announced once, kept in history."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

from dealer.shell.overrides import BadOverride, parse_overrides
from dealer.shell.admin import add_player, create_game
from dealer.views import game_view
from dealer.store.models import Event, Inbound

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


# -- values that cannot be applied (issue 9) ---------------------------------------------


@pytest.mark.parametrize("value, why", [
    ("+9999999d", "off the calendar"),
    ("-9999999d", "off the calendar"),
    ("0001-01-01T00:00:00Z", "before game t1 began (2026-12-01T10:00:00Z)"),
    ("9999-01-01T00:00:00Z", "more than a year away"),
    ("-2h", "to 2026-12-01T09:00:00Z, before game t1 began"),
])
def test_an_implausible_value_is_refused_reported_once_and_the_game_goes_on(make_harness, value, why) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides=f"t1={value}")
    setup(h)
    report = h.run(T0 + timedelta(minutes=1))
    assert report.ok and len(report.overrides) == 1
    assert report.overrides[0].startswith(f"override t1={value} refused: ") and why in report.overrides[0]
    assert deadlines(h) == {"close": "2026-12-01T11:00:00Z"}
    assert h.run(T0 + timedelta(minutes=2)).overrides == []  # once, not on every pass
    assert overrides_posts(h) == []
    h.run(T0 + HOUR)
    assert h.admin(lambda s: game_view(s, "t1"))["status"] == "finished"


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-05:00", "+99999999999d"])
def test_a_value_off_the_calendar_is_reported_once_and_never_fatal(make_harness, value) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides=f"t1={value}")
    setup(h)
    first = h.run(T0 + timedelta(minutes=1))
    assert first.ok and len(first.overrides) == 1 and first.overrides[0].startswith("error: ")
    assert "outside the calendar" in first.overrides[0] or "too large" in first.overrides[0]
    assert h.run(T0 + timedelta(minutes=2)).overrides == []
    # SIGHUP re-reads the settings: still the same error, still not fatal, not repeated.
    from dealer.shell.timers import reload_settings
    reload_settings(h.dealer)
    assert h.run(T0 + timedelta(minutes=3)).overrides == []
    # Fixed, the overrides apply again; broken differently, the new error is reported.
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": "t1=+1h"})
    assert h.run(T0 + timedelta(minutes=4)).overrides == ["t1: close 2026-12-01T11:00:00Z -> 2026-12-01T12:00:00Z"]
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": f"t1={value}"})
    assert h.run(T0 + timedelta(minutes=5)).overrides[0].startswith("error: ")


def test_a_deadline_moved_into_the_past_fires_once_and_later_rounds_count_from_then(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=+12h")
    setup(h, rounds=3)
    h.run(T0)  # close moves to 23:00
    at = T0 + 10 * HOUR  # 20:00: the admin moves it back to 10:30, long past
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": "t1:close=2026-12-01T10:30:00Z"})
    report = h.run(at)
    # Round 1 closes once, at 20:00; round 2 keeps its full hour from then. (Fired at
    # 10:30, rounds 2 and 3 would have closed at 11:30 and 12:30 in this same pass.)
    assert report.deadlines == 1
    assert deadlines(h) == {"close": "2026-12-01T21:00:00Z"}
    assert "2026-12-01 20:00 UTC" in overrides_posts(h)[-1]
    assert h.admin(lambda s: game_view(s, "t1"))["status"] == "running"


def test_removing_a_deadline_pause_resumes_that_deadline(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1:close=pause")
    setup(h)
    h.run(T0 + timedelta(minutes=30))  # paused with 30 min left
    h.run(T0 + 2 * HOUR)
    assert h.admin(lambda s: game_view(s, "t1"))["deadlines"][0]["paused"] is True
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": ""})
    report = h.run(T0 + 3 * HOUR)  # 2 h 30 min of pause given back
    assert report.overrides == ["t1:close: resumed"]
    view = h.admin(lambda s: game_view(s, "t1"))
    assert view["deadlines"][0]["paused"] is False
    assert deadlines(h) == {"close": "2026-12-01T13:30:00Z"}
    h.run(T0 + 3 * HOUR + timedelta(minutes=30))
    assert h.admin(lambda s: game_view(s, "t1"))["status"] == "finished"


def test_a_deadline_another_pause_still_holds_stays_paused(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=pause; t1:close=pause")
    setup(h)
    h.run(T0 + timedelta(minutes=30))
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": "t1:close=pause"})
    h.run(T0 + HOUR)  # the game's pause is lifted, the deadline's stays
    assert h.admin(lambda s: game_view(s, "t1"))["deadlines"][0]["paused"] is True
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": ""})
    h.run(T0 + 2 * HOUR)  # paused since 10:30 with 30 min left: due 12:30
    assert h.admin(lambda s: game_view(s, "t1"))["deadlines"][0]["paused"] is False
    assert deadlines(h) == {"close": "2026-12-01T12:30:00Z"}


def test_run_once_reports_a_bad_override_and_goes_on(cli) -> None:  # type: ignore[no-untyped-def]
    cli("migrate")
    cli.env["DEALER_DEADLINE_OVERRIDES"] = "t1=0001-01-01T00:00:00+01:00"
    result = cli("run", "--once", "--now", "2026-12-01T10:00:00Z")
    assert "override: error: DEALER_DEADLINE_OVERRIDES: override t1=0001-01-01T00:00:00+01:00: the time is outside the calendar" in result.output


def test_pausing_a_hall_pauses_its_matches(make_harness) -> None:  # type: ignore[no-untyped-def]
    """A paused Hall cycle holds its Exoptosis matches too: no turn is skipped while it is
    paused, a turn begun during the pause waits, and the resume gives each its time back."""
    from dealer.shell.admin import grant

    h = make_harness()

    def make(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "hall", "h1", T0, players=["alice", "bob"])
        create_game(session, "exoptosis", "m1", T0, players=["alice", "bob"])
        for name, cards in (("alice", "5H 6C 7S 8C 9H"), ("bob", "2D 3D 4D 10D")):
            for card in cards.split():
                grant(session, name, card, 1, T0, "h1")
    h.admin(make)
    h.send("alice", "hand 5H 6C 7S 8C 9H", T0 + timedelta(minutes=1))
    h.send("bob", "hand 2D 3D 4D 10D", T0 + timedelta(minutes=2))
    h.send("alice", "match", T0 + timedelta(minutes=3))
    h.send("bob", "match", T0 + timedelta(minutes=4))
    h.run(T0 + timedelta(minutes=5))  # play began at 10:04: alice's turn until 10:04 tomorrow

    def match() -> dict:
        return h.admin(lambda s: game_view(s, "m1"))

    assert match()["detail"]["current"] == "alice"
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": "h1=pause"})
    h.run(T0 + HOUR)  # paused at 11:00
    assert [d["paused"] for d in match()["deadlines"]] == [True]
    h.run(T0 + 30 * HOUR)  # past alice's turn: nothing is skipped while the Hall is paused
    assert match()["detail"]["current"] == "alice"
    h.send("alice", "play 5H", T0 + 30 * HOUR + timedelta(minutes=1))  # bob's turn begins
    h.run(T0 + 30 * HOUR + timedelta(minutes=2))
    assert match()["detail"]["current"] == "bob"
    assert [d["paused"] for d in match()["deadlines"]] == [True]  # begun during the pause
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": ""})
    h.run(T0 + 40 * HOUR)  # resumed after 39 h of pause
    (turn,) = match()["deadlines"]
    assert turn["paused"] is False
    # As for any paused game, the deadline moves later by the whole pause (39 h).
    assert turn["due_at"] == "2026-12-05T07:01:00Z"


def test_now_to_the_microsecond_orders_discords_millisecond_stamps_as_they_were_sent(make_harness) -> None:  # type: ignore[no-untyped-def]
    # `deadline now` takes the daemon's time when it applies it, to the microsecond; Discord
    # stamps a message to the millisecond it was made (its id). They cannot misorder: a
    # message stored by then is stamped at most that time (a later stamp is taken as the
    # time it came, ingest.py), so it counts before the deadline, even in its very
    # millisecond; any other comes in a later pass, after the deadline fired.
    h = make_harness(deadline_overrides="t1=now")
    setup(h)
    now = T0 + timedelta(minutes=5, microseconds=500)
    h.send("alice", "add 3", T0 + timedelta(minutes=5), channel="#tally")  # the same millisecond
    h.send("bob", "add 4", T0 + timedelta(minutes=5, milliseconds=1), channel="#tally")  # stamped ahead
    h.run(now)
    late = h.send("alice", "add 5", T0 + timedelta(minutes=5, milliseconds=1), channel="#tally")
    h.run(now + timedelta(milliseconds=1))
    closed = h.admin(lambda s: s.scalars(select(Event.data).where(Event.type == "tally.closed")).one())
    assert closed["totals"] == {"alice": 3, "bob": 4}
    stored = h.admin(lambda s: s.scalars(select(Inbound.status).where(Inbound.external_id == late)).one())
    assert stored == "ignored"  # after the deadline: the tally was over, "add 3" and "add 4" applied


def test_two_daemons_lifting_a_pause_at_once_resume_it_once(make_harness, database_url) -> None:  # type: ignore[no-untyped-def]
    """Two daemons reading the same overrides file apply a change one after the other (the
    step lock, alone): the second sees the first's work and does nothing. Without it both
    lifted a withdrawn pause (two "resumed" announcements; a new entry's insert failed with a
    duplicate key, logged as an error): the season on Postgres with two replicas."""
    if not database_url.startswith("postgresql"):
        pytest.skip("two daemons share a Postgres store only (SQLite has one writer)")
    import threading

    from sqlalchemy import text

    from dealer.shell.overrides import apply_overrides

    h = make_harness(deadline_overrides="t1=pause")
    setup(h)
    h.run(T0 + timedelta(minutes=30))
    first = h.dealer.sessions()
    first.begin()
    assert apply_overrides(first, [], T0 + HOUR) == ["t1: resumed"]
    second: list[list[str]] = []
    pid: list[int] = []

    def other_daemon() -> None:
        with h.dealer.sessions.begin() as session:
            pid.append(session.execute(text("SELECT pg_backend_pid()")).scalar_one())
            second.append(apply_overrides(session, [], T0 + HOUR + timedelta(seconds=1)))

    thread = threading.Thread(target=other_daemon)
    thread.start()
    for _ in range(3000):  # until the other daemon waits on a lock the first holds
        with h.dealer.engine.connect() as connection:
            if pid and connection.execute(text("SELECT count(*) FROM pg_locks WHERE pid = :pid AND NOT granted"),
                                          {"pid": pid[0]}).scalar():
                break
        threading.Event().wait(0.01)
    else:
        pytest.fail("the second daemon never waited for the first")
    first.commit()
    first.close()
    thread.join(timeout=30)
    assert second == [[]]
    resumed = h.admin(lambda s: [e.data["action"] for e in s.scalars(select(Event).where(Event.type == "admin.override"))])
    assert resumed == ["paused", "resumed"]
    assert deadlines(h) == {"close": "2026-12-01T11:30:00Z"}  # its 30 min left, from 11:00
