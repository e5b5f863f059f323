"""Benchmark: one message in, its reply delivered, on a warm daemon.

Target (issue 13): under 5 ms on Postgres, from the message reaching the inbox to its
reply handed to the publisher.

Set-up (untimed): 20 Stationary Roulette games of two players each, started, every
player's preparation applied and the preparation deadlines fired (round 1 is open), all
posts delivered. The daemon is warm: statements compiled, templates loaded, connections
pooled.

Timed, ``--messages`` times (default 200): one valid bet from one player (40 points,
replacing the player's last: SR-5, SR-6) put into an in-memory inbox (what a push adapter
does), then exactly one ``Dealer.run_pass(now)``: overrides,
ingest, the message applied in its transaction, its confirmation delivered through an
in-memory publisher in another. The figure is that pass, per message, min and median;
beside it the baseline: one ``INSERT`` of a row and its ``COMMIT`` on the same store (the
least any durable handling of a message costs), measured in the same run. ``--repeat``
runs (3 by default, each on a fresh store) are summed up by their medians' min and
median, and the target is judged on that median.

With ``--daemon`` the messages go through the running daemon instead: its loop
(``dealer.shell.timers.run_forever``, with its scheduler and its timer, on the real clock)
runs in a thread of its own, and each message is put into the inbox and the loop woken,
as a push adapter (webhook, Discord) does, once the daemon is idle (5 ms after the last
reply). Timed per message: from the put to the reply handed to the publisher, and to the
end of the pass that handled it (its delivered mark committed); the target is judged on
the second. The games then start 26 h before the real clock, so their next deadlines fall
16 h after it and no timer fires during the run.

    .venv/bin/python bench/latency.py
    .venv/bin/python bench/latency.py --daemon --database-url postgresql://postgres@127.0.0.1:5432/test
    .venv/bin/python bench/latency.py --database-url postgresql://postgres@127.0.0.1:5432/test_e
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    DAY,
    T0,
    Bench,
    SqlCounter,
    Store,
    median,
    repeat_argument,
    spread,
    step,
    verdict,
)

from sqlalchemy import text  # noqa: E402

from dealer.clock import utcnow  # noqa: E402
from dealer.fairness import FairSource  # noqa: E402
from dealer.inbox.memory import MemoryInbox  # noqa: E402
from dealer.publish.memory import MemoryPublisher  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402

TARGET_MS = 5.0
IDLE = 0.005
"""With ``--daemon``: seconds between a reply and the next message, so that each message
finds the daemon idle, waiting to be woken (as a lone message does)."""

CALLGRIND_OUT = "DEALER_BENCH_CALLGRIND_OUT"
"""Set in the environment of the run ``--instructions`` starts under valgrind: the file
callgrind writes its counts to."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--database-url")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--sql-stats", action="store_true",
                        help="count the SQL statements the warm passes send, by kind and by text")
    parser.add_argument("--instructions", action="store_true",
                        help="count the instructions the client runs per warm pass, under "
                        "valgrind's callgrind (one run; needs valgrind): a figure this "
                        "machine's noise does not move, to compare two versions of the code")
    parser.add_argument("--daemon", action="store_true",
                        help="through the running daemon's loop (its scheduler, its timer, the real "
                        "clock), woken by each message as a push adapter wakes it")
    repeat_argument(parser)
    args = parser.parse_args(argv)
    if args.daemon and (args.instructions or args.sql_stats):
        parser.error("--daemon times the loop: without --instructions and --sql-stats")
    if args.instructions and CALLGRIND_OUT not in os.environ:
        return count_instructions(sys.argv[1:] if argv is None else argv, args.messages)
    runs = [one_run(args) for _ in range(args.repeat)]
    medians = [run[0] for run in runs]
    ok = median(medians) < TARGET_MS
    print("=== summary ===")
    print(f"runs:             {len(runs)} of {args.messages} messages on {runs[0][2]}")
    what = "message in to its pass's end, on the running daemon" if args.daemon else "pass"
    print(spread("dealer median", medians, " ms") + f" (each run's median {what})")
    print(spread("baseline median", [run[1] for run in runs], " ms") + " (INSERT + COMMIT)")
    print(f"target:           median < {TARGET_MS:.0f} ms (the median of the runs' medians)")
    print(f"result:           {verdict(ok)}")
    if CALLGRIND_OUT in os.environ:
        return 0  # under callgrind the times mean nothing: only a failure is an error
    return 0 if ok else 1


def one_run(args: argparse.Namespace) -> tuple[float, float, str]:
    """One set-up and the timed passes on a fresh store: ``(median ms of the warm passes,
    median ms of the baseline, dialect)``."""
    store = Store.create(args.database_url, args.keep)
    bench = Bench(store, publisher="memory")
    rng = FairSource("bench-latency")  # every draw through the fair source (GH-40)
    try:
        # With --daemon the daemon runs on the real clock: the games start 26 h before it,
        # so round 1 is 2 h old when the messages come and its reminders are 16 h away.
        start = utcnow().replace(microsecond=0) - DAY - timedelta(hours=2) if args.daemon else T0
        with step("20 games up to round 1"):
            bench.prepared_games(20, rng, start)
            bench.run(start + DAY + timedelta(minutes=1))
        inbox = LockedInbox() if args.daemon else MemoryInbox()
        publisher = MemoryPublisher()
        dealer = bench.dealer
        dealer.inbox, dealer.publisher = inbox, publisher
        if args.daemon:
            took, sent = through_the_daemon(dealer, inbox, publisher, args.messages)
        else:
            took, sent = by_passes(args, bench, dealer, inbox, publisher, start + DAY + timedelta(hours=1)), []
        commits: list[float] = []
        with dealer.engine.connect() as connection:
            connection.execute(text("CREATE TABLE bench_latency (n INTEGER, body TEXT)"))
            connection.commit()
            for n in range(args.messages):
                began = time.perf_counter()
                connection.execute(text("INSERT INTO bench_latency VALUES (:n, :b)"), {"n": n, "b": "bet"})
                connection.commit()
                commits.append(time.perf_counter() - began)
        warm = took[len(took) // 10:]  # the first tenth warms caches
        ms = sorted(1000 * t for t in warm)
        base = sorted(1000 * t for t in commits)
        print(f"store:            {store.describe()}")
        print(f"messages:         {args.messages} (the first {len(took) - len(warm)} not counted: warm-up)")
        if sent:
            replies = sorted(1000 * t for t in sent[len(sent) // 10:])
            print(f"to the reply:     min {replies[0]:.2f} ms, median {statistics.median(replies):.2f} ms, "
                  f"p90 {replies[int(len(replies) * 0.9)]:.2f} ms per message (in, applied, its reply handed "
                  "to the publisher, on the running daemon)")
        what = ("to the pass's end, on the running daemon: its reply marked delivered" if args.daemon
                else "one pass: in, applied, reply delivered")
        print(f"dealer:           min {ms[0]:.2f} ms, median {statistics.median(ms):.2f} ms, "
              f"p90 {ms[int(len(ms) * 0.9)]:.2f} ms per message ({what})")
        print(f"baseline:         min {base[0]:.2f} ms, median {statistics.median(base):.2f} ms "
              f"(one INSERT + COMMIT)")
        print(f"ratio:            {statistics.median(ms) / statistics.median(base):.1f}x (medians)")
        print(f"run:              {verdict(statistics.median(ms) < TARGET_MS)} (median < {TARGET_MS:.0f} ms)",
              flush=True)
        return statistics.median(ms), statistics.median(base), dealer.engine.dialect.name
    finally:
        bench.close()


def by_passes(
    args: argparse.Namespace, bench: Bench, dealer: Dealer, inbox: MemoryInbox,
    publisher: MemoryPublisher, now: Any,
) -> list[float]:
    """The messages one by one, each followed by exactly one ``run_pass``: the seconds of
    each pass."""
    bench.now = now
    took: list[float] = []
    counter = SqlCounter(dealer.engine)
    for n in range(args.messages):
        if n == args.messages // 10 and args.sql_stats:
            counter.__enter__()  # the warm passes only (as timed below)
        if n == args.messages // 10 and CALLGRIND_OUT in os.environ:
            callgrind("on")  # the warm passes only, the collector off while they run
            gc.collect()
            gc.disable()
        player = f"p{2 * (n % 20):04d}"
        sent = now + timedelta(milliseconds=n)
        bench.now = sent
        gold = 1 + n % 39  # a valid bet (SR-5: 40 points), replacing the last (SR-6)
        inbox.put({"id": f"lat{n}", "sender": player, "channel": "pm",
                   "body": f"bet gold {gold} silver {40 - gold}", "sent_at": sent})
        before = len(publisher.posts)
        began = time.perf_counter()
        report = dealer.run_pass(sent)
        took.append(time.perf_counter() - began)
        assert report.messages == 1 and len(publisher.posts) == before + 1, report.line()
        reply = list(publisher.posts.values())[-1]
        assert reply.kind != "error", reply.body  # the bet was accepted and confirmed
    if CALLGRIND_OUT in os.environ:
        gc.enable()
        callgrind("off")
    if args.sql_stats:
        counter.__exit__()
        counter.print(args.messages - args.messages // 10, "pass")
    return took


class LockedInbox(MemoryInbox):
    """A :class:`MemoryInbox` fed from another thread than the daemon's."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def put(self, message: dict[str, Any] | str) -> None:
        with self.lock:
            super().put(message)

    def fetch(self, now: Any = None) -> Any:
        """The messages waiting when it is called (read from a copy: the thread that puts
        may add one meanwhile)."""
        waiting = MemoryInbox()
        with self.lock:
            waiting.waiting = dict(self.waiting)
        return waiting.fetch(now)

    def done(self, handle: int) -> None:
        with self.lock:
            super().done(handle)


def through_the_daemon(
    dealer: Dealer, inbox: LockedInbox, publisher: MemoryPublisher, messages: int
) -> tuple[list[float], list[float]]:
    """The messages through the running daemon's loop, in a thread of its own, each put
    and the loop woken once the daemon is idle: the seconds from each put to its pass's
    end, and to its reply handed to the publisher."""
    from dealer.shell import timers

    dealer.clock = utcnow
    replied, passed, first_pass = threading.Event(), threading.Event(), threading.Event()
    marks: dict[str, float] = {}
    send, run_pass = publisher.send, dealer.run_pass

    def sending(post: Any) -> Any:
        result = send(post)
        marks["sent"] = time.perf_counter()
        assert post.kind != "error", post.body  # the bet was accepted and confirmed
        replied.set()
        return result

    def passing(now: Any = None, **bounds: Any) -> Any:
        report = run_pass(now, **bounds)  # the loop's passes are bounded (groups=...)
        if report.messages:
            marks["passed"] = time.perf_counter()
            passed.set()
        first_pass.set()
        return report

    publisher.send = sending  # type: ignore[method-assign]
    dealer.run_pass = passing  # type: ignore[method-assign]
    loop = threading.Thread(target=timers.run_forever, args=(dealer,), name="daemon")
    loop.start()
    took: list[float] = []
    sent: list[float] = []
    try:
        assert first_pass.wait(30), "the daemon's first pass did not end"
        for n in range(messages):
            time.sleep(IDLE)
            replied.clear()
            passed.clear()
            gold = 1 + n % 39  # a valid bet (SR-5: 40 points), replacing the last (SR-6)
            message = {"id": f"lat{n}", "sender": f"p{2 * (n % 20):04d}", "channel": "pm",
                       "body": f"bet gold {gold} silver {40 - gold}", "sent_at": utcnow()}
            began = time.perf_counter()
            inbox.put(message)
            dealer.wake.set()  # what a push adapter does on a message
            assert replied.wait(30) and passed.wait(30), f"message {n}: no reply"
            sent.append(marks["sent"] - began)
            took.append(marks["passed"] - began)
    finally:
        dealer.stopping = True
        dealer.wake.set()
        loop.join(60)
    return took, sent


def callgrind(switch: str) -> None:
    """Turn callgrind's counting on or off in this process (started with it off)."""
    subprocess.run(["callgrind_control", "--instr=" + switch, str(os.getpid())],
                   check=True, capture_output=True)


def count_instructions(argv: list[str], messages: int) -> int:
    """Run this script once more under callgrind, counting only its warm passes, and print
    the instructions per warm pass (the client's alone: the server's are not counted)."""
    with tempfile.TemporaryDirectory(prefix="dealer-callgrind-") as folder:
        out = Path(folder) / "callgrind.out"
        argv = [arg for arg in argv if arg != "--instructions"] + ["--repeat", "1"]
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                   f"--callgrind-out-file={out}", sys.executable, __file__, *argv]
        print("under callgrind (a few minutes): " + " ".join(command[4:]), file=sys.stderr)
        subprocess.run(command, check=True, env={**os.environ, CALLGRIND_OUT: str(out)},
                       stdout=subprocess.DEVNULL)
        totals = [int(line.split()[1]) for line in out.read_text().splitlines()
                  if line.startswith("totals:")]
    warm = messages - messages // 10
    print(f"instructions:     {sum(totals) / warm / 1e6:.3f} M per warm pass ({warm} passes "
          "counted, the collector off; the client's alone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
