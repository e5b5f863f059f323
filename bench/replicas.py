"""Benchmark: one daemon against two replicas on one Postgres store (issue 9's target:
2 replicas, 0 doubled posts, 0 deadlocks, the same throughput as one or better).

Set-up (untimed, the same as bench/deadlines.py): N Stationary Roulette games brought to
the eve of their round-1 deadline, every post so far delivered. Timed: the round-1
deadlines of all N games, fired and their posts delivered by 1 or by 2 processes, each a
``Dealer`` of its own (its own engine and connections) running passes at the deadline
until the store holds nothing due; the wall time from the start of the first process to
the end of the last. Each replica count gets a store of its own, set up the same way.

Checked after each run: every deadline fired once, every game adjudicated once, every
post delivered and in the outbox as exactly one file, no post written twice (each
process counts its own sends through the directory publisher), and no ``deadlock
detected`` in any process's log.

    .venv/bin/python bench/replicas.py --database-url postgresql://postgres@127.0.0.1:5432/test
    .venv/bin/python bench/replicas.py --games 100 --database-url ...   # a quick run
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Bench, Deadline, Post, Store, verdict  # noqa: E402

from dealer.fairness import FairSource  # noqa: E402
from dealer.settings import Settings  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402
from dealer.store.models import Event  # noqa: E402


def replica(url: str, root: str, at_text: str, sends: "multiprocessing.Queue[tuple[str, ...]]") -> None:
    """One replica: passes at ``at`` until a pass finds nothing to do; report its sends."""
    from datetime import datetime

    logging.basicConfig(level=logging.WARNING, filename=f"{root}/replica-{multiprocessing.current_process().pid}.log")
    at = datetime.fromisoformat(at_text)
    settings = Settings(home=root, database_url=url, inbox=f"dir:{root}/inbox",
                        publish=f"dir:{root}/outbox", deadline_overrides="", _env_file=None)
    dealer = Dealer(settings, clock=lambda: at)
    written: list[str] = []
    send = dealer.publisher.send

    def counted(post):  # type: ignore[no-untyped-def]
        written.append(post.key)
        return send(post)

    dealer.publisher.send = counted  # type: ignore[method-assign]
    while True:
        report = dealer.run_pass(at)
        if not (report.deadlines or report.delivered or report.messages):
            break
    dealer.engine.dispose()
    sends.put(tuple(written))


def one_run(url: str, games: int, replicas: int) -> tuple[bool, float]:
    store = Store.create(url, keep=False)
    bench = Bench(store)
    rng = FairSource("bench-replicas-20261201")  # every draw through the fair source (GH-40)
    try:
        _, deadline = bench.round_one_eve(games, rng)
        before = bench.posts()
        resolved_before = bench.count(Event, Event.type == "round.resolved")
        bench.dealer.engine.dispose()

        queue: multiprocessing.Queue[tuple[str, ...]] = multiprocessing.Queue()
        context = multiprocessing.get_context("fork")
        started = time.perf_counter()
        processes = [context.Process(target=replica, args=(store.url, str(store.root), deadline.isoformat(), queue))
                     for _ in range(replicas)]
        for process in processes:
            process.start()
        written = [key for _ in processes for key in queue.get()]
        for process in processes:
            process.join()
        seconds = time.perf_counter() - started

        fired = bench.count(Deadline, Deadline.status == "fired", Deadline.due_at == deadline)
        pending = bench.count(Deadline, Deadline.status == "pending", Deadline.due_at <= deadline)
        resolved = bench.count(Event, Event.type == "round.resolved") - resolved_before
        undelivered = bench.posts(Post.status != "delivered")
        queued = bench.posts() - before
        twice = sum(1 for n in Counter(written).values() if n > 1)
        files = len(list((store.root / "outbox").glob("*.json")))
        deadlocks = sum(path.read_text(encoding="utf-8").count("deadlock detected")
                        for path in store.root.glob("replica-*.log"))
        print(f"replicas: {replicas}; games {games}; wall {seconds:.2f} s "
              f"({games / seconds:.0f} games/s); fired {fired}, still due {pending}, adjudicated "
              f"{resolved}; posts queued {queued}, sent {len(written)}, sent twice {twice}, "
              f"undelivered {undelivered}, outbox files {files}; deadlocks {deadlocks}", flush=True)
        ok = (fired == games and pending == 0 and resolved == games and twice == 0
              and undelivered == 0 and files == bench.posts() and deadlocks == 0
              and len(written) == queued)
        return ok, seconds
    finally:
        bench.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True, help="a Postgres database (a schema of its own is used)")
    parser.add_argument("--games", type=int, default=300, help="games (default 300)")
    args = parser.parse_args(argv)
    one_ok, one = one_run(args.database_url, args.games, 1)
    two_ok, two = one_run(args.database_url, args.games, 2)
    print(f"one daemon: {one:.2f} s; two replicas: {two:.2f} s ({one / two:.2f}x the throughput of one)")
    ok = one_ok and two_ok and two <= one * 1.05  # "the same or better", within 5 % of noise
    print(f"result: {verdict(ok)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
