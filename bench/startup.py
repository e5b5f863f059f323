"""Start-up: the time from ``exec`` of ``dealer run`` to its first commit and its first pass.

    .venv/bin/python bench/startup.py                          # SQLite, 9 lives each
    .venv/bin/python bench/startup.py --database-url postgresql://postgres@127.0.0.1:5432/test
    .venv/bin/python bench/startup.py --profile start.prof     # where one life's start goes

A daemon that keeps being killed soon after each start (a crash loop, issue 36) advances
only if its first commit comes early. Each life here is a real process (``dealer run``,
exec'd as a supervisor would, importing everything), on a store of 20 roulette games in
their preparation phase and a backlog of messages in the inbox (``--backlog`` new ones per
life: valid preparations, each a step with a reply). It is killed by the fault point named
(``DEALER_FAULT``): ``after-messages-commit@1``, the first group of messages committed;
``after-timers@1``, the first pass over and its timer set. The figure is the wall time from
the ``exec`` to the kill, and the CPU time the life used (user and system: less moved by
other processes on a shared machine than the wall time), min and median of ``--lives``
lives, alternating the two points.

With ``--profile FILE`` one more life runs under cProfile up to its first commit (the stats
are written to FILE as the fault point kills it) and the costliest functions are printed.
"""

from __future__ import annotations

import argparse
import os
import pstats
import resource
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Bench, Store, prepare_line, spread, step, store_arguments  # noqa: E402

from dealer.clock import utcnow  # noqa: E402
from dealer.fairness import FairSource  # noqa: E402

GAMES = 20
POINTS = {"first commit": "after-messages-commit@1", "first pass": "after-timers@1"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    store_arguments(parser)
    parser.add_argument("--lives", type=int, default=9, help="lives per fault point (default 9)")
    parser.add_argument("--backlog", type=int, default=60,
                        help="inbox messages written before each life (default 60)")
    parser.add_argument("--profile", metavar="FILE", help="profile one life up to its first commit")
    parser.add_argument("--importtime", action="store_true",
                        help="one more life with `python -X importtime`: the costliest imports")
    parser.add_argument("--top", type=int, default=30, help="with --profile, --importtime: rows to print")
    args = parser.parse_args(argv)
    store = Store.create(args.database_url, args.keep)
    bench = Bench(store, publisher=args.publisher)
    rng = FairSource("bench-startup-20261204")
    try:
        now = utcnow()
        bench.now = now
        games = [(f"sr{i:03d}", f"p{2 * i:03d}", f"q{2 * i + 1:03d}") for i in range(GAMES)]
        players = [name for _, a, b in games for name in (a, b)]
        with step(f"{GAMES} games in their preparation phase"):
            bench.add_players(players)
            bench.create_roulettes(games, start=now)
        bench.dealer.dispose()
        # An installed dealer has its modules compiled (pip writes the .pyc files): so do
        # the lives here, into a folder of the run's, even where the environment says not to.
        env = {
            **{k: v for k, v in os.environ.items()
               if not k.startswith("DEALER_") and k != "PYTHONDONTWRITEBYTECODE"},
            "PYTHONPYCACHEPREFIX": str(store.root / "pycache"),
            "DEALER_HOME": str(store.root),
            "DEALER_DATABASE_URL": store.url,
            "DEALER_INBOX": f"dir:{bench.inbox_dir}",
            "DEALER_PUBLISH": f"dir:{bench.outbox_dir}" if args.publisher == "dir" else "memory",
            "DEALER_DEADLINE_OVERRIDES": "",
        }
        dealer = Path(sys.executable).with_name("dealer")
        log = store.root / "daemon.log"
        taken: dict[str, list[float]] = {label: [] for label in POINTS}
        cpu: dict[str, list[float]] = {label: [] for label in POINTS}

        def life(command: list[str], fault: str, extra: dict[str, str] | None = None) -> tuple[float, float]:
            for n in range(args.backlog):
                bench.send(players[n % len(players)], prepare_line(rng), utcnow() - timedelta(seconds=1))
            with log.open("ab") as out:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                began = time.perf_counter()
                code = subprocess.run(command, env={**env, **(extra or {}), "DEALER_FAULT": fault},
                                      stdout=out, stderr=subprocess.STDOUT).returncode
                took = time.perf_counter() - began
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if code != -signal.SIGKILL:
                raise SystemExit(f"the daemon ended with {code}, not at {fault}: see {log}")
            return took, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)

        with step("a first life, not counted (it compiles the modules)"):
            life([str(dealer), "run"], POINTS["first pass"])
        with step(f"{args.lives} lives per point, {args.backlog} new messages each"):
            for _ in range(args.lives):
                for label, fault in POINTS.items():
                    wall, used = life([str(dealer), "run"], fault)
                    taken[label].append(wall)
                    cpu[label].append(used)
        print(f"store:            {store.describe()}")
        for label, values in taken.items():
            print(spread(f"exec to {label}", values, " s"))
            print(spread("  its CPU time", cpu[label], " s"))
        print(f"machine:          {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (1 min)")
        if args.importtime:
            log.write_bytes(b"")
            life([str(dealer), "run"], POINTS["first commit"], {"PYTHONPROFILEIMPORTTIME": "1"})
            print_imports(log, args.top)
        if args.profile:
            life([sys.executable, "-c", PROFILED_LIFE, args.profile], POINTS["first commit"])
            stats = pstats.Stats(args.profile)
            stats.sort_stats("cumulative").print_stats(args.top)
        return 0
    finally:
        bench.close()


def print_imports(log: Path, top: int) -> None:
    """The import time of ``log`` (``-X importtime`` lines), by package: each module's
    own time added to its top-level package's (``sqlalchemy``, ``dealer``...)."""
    packages: dict[str, int] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            own, _, name = line[len("import time:"):].split("|")
            package = name.strip().split(".")[0]
            packages[package] = packages.get(package, 0) + int(own)
    print(f"imports: {sum(packages.values()) / 1e6:.3f} s (with -X importtime's own cost); "
          "each module's own time, by package:")
    for package, micros in sorted(packages.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {micros / 1000:8.1f} ms  {package}")


PROFILED_LIFE = """
import cProfile, os, signal, sys

profiler = cProfile.Profile()
kill = os.kill


def dump_then_kill(pid, signum):  # the fault point's SIGKILL: write the stats first
    if pid == os.getpid() and signum == signal.SIGKILL:
        profiler.disable()
        profiler.dump_stats(sys.argv[1])
    kill(pid, signum)


os.kill = dump_then_kill
profiler.enable()
import dealer.cli

dealer.cli.main(["run"], prog_name="dealer")
"""
"""A life under cProfile, imports included: ``python -c PROFILED_LIFE STATS-FILE``."""


if __name__ == "__main__":
    sys.exit(main())
