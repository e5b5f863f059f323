"""`dealer deadline ...`: admin overrides written to the overrides file and applied by the
daemon on its next pass, or at once when a running daemon is woken with SIGHUP."""

from __future__ import annotations

import json
import os
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from freezegun import freeze_time

from dealer.shell import timers
from dealer.shell.passes import Dealer
from dealer.shell.overrides import parse_overrides, read_file
from dealer.shell.pidfile import pid_file

T0 = "2026-12-01T10:00:00Z"


def tally(cli, rounds: int = 1) -> None:  # type: ignore[no-untyped-def]
    """Game t1: its deadline `close` is due at 11:00, an hour after the start."""
    cli("player", "add", "alice")
    cli("player", "add", "bob")
    cli("game", "new", "tally", "--id", "t1", "--players", "alice,bob", "--start-in-past", "--start", T0, "--set", f"rounds={rounds}")


def at(cli, time: str):  # type: ignore[no-untyped-def]
    """One pass of the daemon at ``time`` (on 2026-12-01 unless a date is given)."""
    return cli("run", "--once", "--now", time if "T" in time else f"2026-12-01T{time}:00Z").output


def show(cli) -> dict:  # type: ignore[no-untyped-def,type-arg]
    return json.loads(cli("game", "show", "t1", "--json").output)


def close(cli) -> str:  # type: ignore[no-untyped-def]
    return {d["name"]: d["due_at"] for d in show(cli)["deadlines"]}["close"]


def entries(cli) -> list[str]:  # type: ignore[no-untyped-def]
    path = Path(cli.env["DEALER_HOME"]) / "overrides.env"
    return [f"{s.key.partition('@')[0]}={s.value}" for s in parse_overrides(read_file(path))]


def test_extend_twice_moves_twice(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli)
    out = cli("deadline", "extend", "t1", "+12h").output
    assert "t1@" in out and "=+12h" in out
    assert "no daemon is running" in out
    at(cli, "10:01")
    assert close(cli) == "2026-12-01T23:00:00Z"
    cli("deadline", "extend", "t1:close", "12h")  # the same change again, without the +
    assert entries(cli) == ["t1:close=+12h"]  # the applied request was pruned
    at(cli, "10:02")
    assert close(cli) == "2026-12-02T11:00:00Z"
    cli("deadline", "extend", "t1", "-30m")  # a negative change needs no `--`
    at(cli, "10:03")
    assert close(cli) == "2026-12-02T10:30:00Z"
    history = [h for h in show(cli)["history"] if h["type"] == "admin.override"]
    assert [h["value"] for h in history] == ["+12h", "+12h", "-30m"]
    assert len([p for p in cli.outbox.glob("*.json") if "deadline_override" in p.read_text()]) == 3


def test_now_and_at(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli, rounds=2)
    cli("deadline", "at", "t1", "2026-12-01T10:20:00Z")  # one pending deadline: GAME is enough
    at(cli, "10:05")
    assert close(cli) == "2026-12-01T10:20:00Z"
    cli("deadline", "now", "t1:close")
    at(cli, "10:06")
    assert close(cli) == "2026-12-01T11:06:00Z"  # round 1 closed at 10:06; round 2 has its hour
    cli("deadline", "now", "t1")  # asking again closes round 2 too
    at(cli, "10:07")
    assert show(cli)["status"] == "finished"


MISTAKES = [
    (("extend", "t1", "12"), "extend by '12': write the change like +12h, -30m, +1h30m or +2d"),
    (("extend", "t1", "+soon"), "write the change like +12h"),
    (("extend", "ghost", "+1h"), "there is no game 'ghost'"),
    (("extend", "t1:round-9", "+1h"), "t1 has no pending deadline 'round-9'; its deadlines: close"),
    (("at", "t1", "tomorrow"), "is not an ISO time"),
    (("pause", "t1:close"), "'t1:close': write GAME"),
    (("resume", "t1"), "t1 is not paused"),
]


def test_mistakes_are_refused_and_change_nothing(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli)
    for args, message in MISTAKES:
        result = cli("deadline", *args, ok=False)
        assert result.exit_code != 0, args
        assert message in result.output, (args, result.output)
    assert entries(cli) == []


def test_a_finished_game_has_nothing_to_change(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli)
    at(cli, "11:00")
    assert "t1 is finished" in cli("deadline", "now", "t1", ok=False).output


def test_pause_and_resume(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli)
    cli("deadline", "pause", "t1")
    assert "t1 is already paused" in cli("deadline", "pause", "t1").output
    at(cli, "10:30")  # paused at 10:30 with 30 min left
    at(cli, "12:00")
    assert show(cli)["status"] == "running" and show(cli)["deadlines"][0]["paused"] is True
    assert "removed t1=pause" in cli("deadline", "resume", "t1").output
    at(cli, "13:30")  # resumed after 3 h of pause: the deadline moves 3 h later
    assert close(cli) == "2026-12-01T14:00:00Z"
    assert entries(cli) == []


def test_resume_says_when_the_variable_holds_the_pause(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli)
    cli.env["DEALER_DEADLINE_OVERRIDES"] = "t1=pause"
    result = cli("deadline", "resume", "t1", ok=False)
    assert "t1 is paused by DEALER_DEADLINE_OVERRIDES (the environment)" in result.output
    assert "note: DEALER_DEADLINE_OVERRIDES (the environment) pauses t1 too" in cli("deadline", "pause", "t1").output


def test_list_shows_both_sources_and_which_wins(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli)
    cli.env["DEALER_DEADLINE_OVERRIDES"] = "t1=pause; t2=+1h"
    cli("deadline", "pause", "t1")
    out = cli("deadline", "list").output
    assert "  t1=pause  from DEALER_DEADLINE_OVERRIDES (the file's entry wins)" in out
    assert "  t2=+1h  from DEALER_DEADLINE_OVERRIDES\n" in out
    assert "  t1=pause  from the file" in out
    assert out.endswith("daemon: not running\n")


@contextmanager
def running(dealer: Dealer) -> Iterator[None]:
    """``dealer`` as `dealer run` has it while running: signal handlers and the pid file."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)}
    try:
        timers.install_signals(dealer)
        with pid_file(dealer.settings.pid_file) as held:
            assert held
            yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


def test_a_running_daemon_is_woken_and_applies_the_change_at_once(cli, harness) -> None:  # type: ignore[no-untyped-def]
    # The harness's daemon and the cli share the data folder (pid file, overrides file).
    tally(cli)
    dealer = harness.dealer
    assert dealer.settings.pid_file.parent == harness.root
    with running(dealer):
        dealer.reload_requested = False
        out = cli("deadline", "extend", "t1", "+2h").output
        assert f"signalled the daemon (pid {os.getpid()}, SIGHUP); it applies the change now" in out
        assert dealer.reload_requested
        assert dealer.wake.wait(timeout=10)  # set by the signal relay's thread (shell/timers.py)
        assert "daemon: running, pid" in cli("deadline", "list").output
        # What the daemon's loop does when woken: re-read the settings, then one pass.
        timers.reload_settings(dealer)
        harness.run(harness_time("10:01"))
    assert close(cli) == "2026-12-01T13:00:00Z"
    assert "daemon: not running" in cli("deadline", "list").output


def harness_time(hhmm: str):  # type: ignore[no-untyped-def]
    from dealer.clock import parse_time

    return parse_time(f"2026-12-01T{hhmm}:00Z")


def test_at_for_a_game_with_several_deadlines_needs_the_name(cli) -> None:  # type: ignore[no-untyped-def]
    # A roulette phase has its deadline and two reminders (I-12): one time for all three
    # is never what is meant. The game is made at T0 on a frozen clock: made later, it
    # starts at once (its start is past), and a reminder already past is not set (I-12).
    cli("player", "add", "alice", "--chips", "100")
    cli("player", "add", "bob", "--chips", "100")
    with freeze_time(T0):
        cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start-in-past", "--start", T0)
    at(cli, "10:00")
    result = cli("deadline", "at", "r1", "2026-12-03T00:00:00Z", ok=False)
    assert ("r1 has several pending deadlines (reminder-preparation-6h, reminder-preparation-1h, "
            "preparation): name one, as r1:DEADLINE") in result.output
    cli("deadline", "at", "r1:preparation", "2026-12-03T00:00:00Z")
    at(cli, "10:01")
    view = json.loads(cli("game", "show", "r1", "--json").output)
    assert {d["name"]: d["due_at"] for d in view["deadlines"]}["preparation"] == "2026-12-03T00:00:00Z"


def test_the_file_is_replaced_whole_and_an_unwritable_one_is_named(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli)
    cli("deadline", "pause", "t1")
    home = Path(cli.env["DEALER_HOME"])
    assert not list(home.glob("*.tmp")) and not list(home.glob(".*.tmp"))
    text = (home / "overrides.env").read_text(encoding="utf-8")
    assert text.startswith("# Admin deadline overrides") and text.endswith("\nt1=pause\n")
    cli.env["DEALER_OVERRIDES_FILE"] = "/dev/null/overrides.env"
    result = cli("deadline", "extend", "t1", "+1h", ok=False)
    assert result.exit_code == 1
    assert result.output.startswith("Error: DEALER_OVERRIDES_FILE: ")


def test_an_implausible_change_is_refused_before_it_is_written(cli) -> None:  # type: ignore[no-untyped-def]
    tally(cli)
    for args, why in [
        (("at", "t1:close", "9999-01-01T00:00:00Z"), "more than a year away"),
        (("at", "t1:close", "0001-01-01T00:00:00Z"), "before game t1 began ("),
        (("at", "t1:close", "2026-11-01T00:00:00Z"), "it would move close to 2026-11-01T00:00:00Z, before game t1 began ("),
        (("extend", "t1", "+9999999d"), "off the calendar"),
    ]:
        result = cli("deadline", *args, ok=False)
        assert result.exit_code == 1 and "would be refused: " in result.output and why in result.output, result.output
    assert entries(cli) == []
