"""Benchmark: the status page's server time on a Gilded Hall of 200 phases.

Target (issue 15): each page renders in under 300 ms on the server with a Hall of 200
phases. Set-up: the Hall of ``bench/hall_age.py`` (M members, default 8, the same realistic
traffic every phase), played for P phases (default 200) through the real daemon, plus one
Exoptosis duel finished in it. Timed: each page and JSON answer of the status page, through
the ASGI app in-process (the server's whole work: the read views' queries, the templates),
the median and the worst of R requests (default 5) each, after one warm-up request, in
CPU time (what the target is judged on: a shared machine's load stretches the wall time,
which is printed beside it), and the peak memory Python
allocated while serving them (tracemalloc).

    .venv/bin/python bench/web.py                 # 200 phases (a few minutes to play)
    .venv/bin/python bench/web.py --phases 30     # a quick run
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
import warnings
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import DAY, T0, Bench, Store, common_arguments, step, verdict  # noqa: E402
from hall_age import CHANNEL, GAME, Traffic, play_phase  # noqa: E402

from dealer.fairness import FairSource  # noqa: E402
from dealer.shell.admin import add_player, create_game  # noqa: E402

TARGET_MS = 300.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", type=int, default=200, help="phases (default 200)")
    parser.add_argument("--members", type=int, default=8, help="members (default 8)")
    parser.add_argument("--requests", type=int, default=5, help="requests per page (default 5)")
    common_arguments(parser)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    from dealer.web import create_app

    store = Store.create(args.database_url, args.keep)
    bench = Bench(store, publisher=args.publisher)
    members = [f"m{i}" for i in range(args.members)]
    traffic = Traffic(members, FairSource("bench-hall-20261201"))
    try:
        with step(f"{len(members)} members, a Hall of {args.phases} phases"):
            with bench.dealer.sessions.begin() as session:
                for name in members:
                    add_player(session, name, T0)
                create_game(session, "hall", GAME, T0, players=members,
                            settings={"victory_chips": "1000000", "starting_vertebrae": "10000"})
            for phase in range(1, args.phases + 1):
                play_phase(bench, traffic, phase)
            # A duel in the last phase: m0 and m1 each buy 4 cards and play them.
            began = T0 + args.phases * DAY
            bench.send("m0", "duel m1", began + timedelta(minutes=1), channel=CHANNEL, game=GAME)
            bench.send("m1", "accept duel 1", began + timedelta(minutes=2), channel=CHANNEL, game=GAME)
            bench.dealer.run_pass(began + timedelta(minutes=3))
        print(f"store: {store.describe()}")
        with bench.dealer.sessions() as session:
            from dealer.store.models import Event
            events = session.query(Event).filter(Event.game_id == GAME).count()
        print(f"hall events: {events}")
        client = TestClient(create_app(bench.dealer.sessions))
        paths = ["/", f"/games/{GAME}", f"/games/{GAME}?epoch=1", f"/api/games/{GAME}",
                 f"/games/{GAME}-duel-1", "/players/m0", "/api/players/m0", "/api/changes"]
        worst_all = 0.0
        for path in paths:  # one-off costs first: templates compiled, statement caches filled
            client.get(path)
        tracemalloc.start()
        for path in paths:
            times, cpu = [], []
            for _ in range(args.requests):
                started, started_cpu = time.perf_counter(), time.process_time()
                answer = client.get(path)
                times.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - started_cpu) * 1000)
                assert answer.status_code == 200, (path, answer.status_code)
            worst_all = max(worst_all, max(cpu))
            print(f"{path:28} CPU median {statistics.median(cpu):6.1f} ms worst {max(cpu):6.1f} ms"
                  f"   wall median {statistics.median(times):6.1f} ms worst {max(times):6.1f} ms"
                  f"   {len(answer.content) / 1024:6.1f} KiB")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"peak memory allocated while serving: {peak / 2**20:.1f} MiB")
        ok = worst_all < TARGET_MS
        print(f"target: every page under {TARGET_MS:.0f} ms of server CPU: worst {worst_all:.1f} ms: {verdict(ok)}")
        return 0 if ok else 1
    finally:
        bench.close()


if __name__ == "__main__":
    sys.exit(main())
