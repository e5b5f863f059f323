"""The fault-injection run, bounded for CI: the daemon under load, killed at every named
fault point and at random moments (50 kills), its Postgres connections cut, restarted
each time like a supervisor would; then every inbox file is accounted for once, every
post delivered once, every deadline fired once and in order, the ledger balances and
every game replays (``faults/faultlib.py`` says what is checked and how).

The full-length run (hundreds of kills, two replicas) is ``faults/run.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "faults"))
import faultlib  # noqa: E402

from dealer.shell.faults import POINTS  # noqa: E402

KILLS = 50


def test_the_daemon_killed_again_and_again_loses_nothing_and_doubles_nothing(
    database_url: str, tmp_path: Path
) -> None:
    postgres = database_url.startswith("postgres")
    # A daemon on Postgres does a fraction of the work per second that it does on SQLite on
    # a small machine: a lighter load and longer lives let it reach its named points (a
    # pass with a long backlog would outlast every life) and get somewhere between kills.
    attack = faultlib.Attack(
        database_url=database_url, root=tmp_path, kills=KILLS, round_length=2, random_share=0.7,
        games=3 if postgres else 4,
        message_rate=2 if postgres else 8,
        longest_random_life=0.6 if postgres else 0.3,
        named_life_limit=3.0 if postgres else 2.0,
        disconnect_every=2.0 if postgres else None,
        seed=20261201,
    )
    figures = faultlib.run(attack)
    report = "\n".join(figures.lines())
    print(report)  # the figures, in the captured output
    assert figures.problems == [], report
    assert figures.kills >= KILLS, report
    # Kills at named points (each point is planned in turn, those not yet reached first).
    assert sum(figures.kills_named.values()) >= 5 and set(figures.kills_named) <= set(POINTS), report
    # The run was a real one: messages applied and refused, rounds adjudicated on time.
    assert figures.outcomes["applied"] > 0 and figures.outcomes["rejected"] > 0, report
    assert figures.rounds_resolved >= 4 and figures.deadlines_fired > figures.rounds_resolved, report
    assert figures.posts >= figures.messages, report
    if postgres:
        assert figures.disconnects > 0, report


def test_the_run_counts_the_killed_lives_that_completed_a_pass(tmp_path: Path) -> None:
    # faults/daemon.py writes "PID started TIME" as a life's loop begins and "PID TIME" after
    # each turn of the loop; a life killed during the attack counts, one stopped at the end does
    # not; 105 was killed during its first pass.
    lives = [faultlib.Life(0, 101, "random", end="random"), faultlib.Life(0, 102, "random", end="random"),
             faultlib.Life(0, 103, "after-send@1", end="named"), faultlib.Life(0, 104, "clean", end="stopped"),
             faultlib.Life(0, 105, "random", end="random")]
    log = tmp_path / "passes.log"
    log.write_text("".join(f"{line}\n" for line in (
        "101 started 1.0", "101 2.0", "101 3.0", "103 started 4.0", "103 5.0", "104 started 6.0",
        "104 7.0", "104 8.0", "105 started 9.0")), encoding="utf-8")
    figures = faultlib.Figures()
    faultlib._count_passes(log, lives, figures)
    assert (figures.killed_with_pass, figures.killed_passes) == (2, 3)
    assert (figures.killed_started, figures.started_with_pass) == (3, 2)
    assert faultlib.read_passes(log)["101"] == faultlib.Loop(1.0, [2.0, 3.0])


def test_a_named_life_has_its_limit_from_when_its_loop_began(tmp_path: Path, monkeypatch) -> None:
    # A loaded machine's start-up may outlast the limit: a named life is given the limit once
    # the pass log says its loop began (up to START_UP_LIMIT before), and the downtime's kill
    # (end_attack) is at once, even when its loop has just begun.
    import random
    import signal
    from collections import Counter
    from types import SimpleNamespace

    clock = [100.0]
    monkeypatch.setattr(faultlib, "time", SimpleNamespace(monotonic=lambda: clock[0], time=lambda: 0.0))
    signals: list[int] = []
    monkeypatch.setattr(faultlib, "_signal", lambda pid, signum: signals.append(signum) or True)
    pids = iter((41, 42))
    server = SimpleNamespace(spawn=lambda env, log: next(pids), code=lambda pid: None,
                             wait=lambda pid=None, timeout=30.0: None)
    passes = tmp_path / "passes.log"
    attack = faultlib.Attack(database_url="", root=tmp_path, random_share=0.0, named_life_limit=2.5)
    replica = faultlib.Replica(0, attack, {"FAULTRUN_PASS_LOG": str(passes)}, tmp_path / "r.log",
                               server, random.Random(1))  # type: ignore[arg-type]
    figures = faultlib.Figures()
    replica.start(False, Counter())
    life = replica.current
    assert life is not None and life.plan != "random" and life.kill_at == 100.0 + faultlib.START_UP_LIMIT
    clock[0] = 105.0  # still starting up: alive
    replica.watch(figures, attacking=True)
    assert replica.current is life and not signals
    passes.write_text("41 started 1.0\n41 2.0\n4", encoding="utf-8")  # a line half written
    clock[0] = 106.0
    replica.watch(figures, attacking=True)
    assert life.kill_at == 108.5
    clock[0] = 108.5  # its point not reached 2.5 s into its loop: its stack, then the kill
    replica.watch(figures, attacking=True)
    assert signals == [signal.SIGUSR1, signal.SIGKILL] and life.end == "random" and replica.current is None
    replica.start(False, Counter())
    with passes.open("a", encoding="utf-8") as log:
        log.write("2 started 3.0\n")
    replica.end_attack(figures)
    assert replica.lives[-1].end == "random" and replica.current is None and figures.kills_random == 2
