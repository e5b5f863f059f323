"""Benchmark: N deadlines due at one instant, fired by a running daemon (issue 13: the last
of 1,000 fired within 3 s of its time, on Postgres).

Set-up (untimed, as bench/deadlines.py: ``Bench.round_one_eve``): N Stationary Roulette
games brought to 1 s before their round-1 deadline, every post so far delivered, so that
the N round-1 deadlines, all due at one instant, are all that is left to do.

Timed: the daemon itself, ``dealer run``, started in a process of its own on that store
with its clock set ``--lead`` seconds (5) before the deadline and ticking in real time
(freezegun's ``freeze_time(tick=True)`` over the whole process: the daemon's clock and
APScheduler's, whose timer wakes the daemon's loop at the deadline). Nothing is sent to
it: it starts, finds nothing due, sets its timer, sleeps, and is woken at the deadline.
Meanwhile this script reads the store from a connection of its own every 10 ms and
notes, by the real clock, the first read that found every deadline committed as fired;
mapped onto the daemon's clock, that minus the deadline is the figure: how long after its
time the last deadline was fired and committed (to within the 10 ms between reads). The
first committed group's lateness is printed beside it, and the latest ``fired_at`` (when
the last step began, by the daemon's clock). Checked: every deadline fired once, none
before its time, every game adjudicated. With fewer deadlines the target is scaled pro
rata, which is harsher: a cold process's first steps (templates compiled, statements
prepared) cost about 0.2 s whatever their number.

    .venv/bin/python bench/firing.py --database-url postgresql://postgres@127.0.0.1:5432/test
    .venv/bin/python bench/firing.py --games 100 --repeat 1     # a quick run on SQLite

Needs freezegun (the project's test extra).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    Bench, Deadline, Store, median, repeat_argument, spread, step, store_arguments, verdict,
)
from sqlalchemy import func, select  # noqa: E402

from dealer.fairness import FairSource  # noqa: E402
from dealer.store.db import make_engine, reading_engine  # noqa: E402
from dealer.store.models import Event  # noqa: E402

TARGET_SECONDS = 3.0
TARGET_GAMES = 1000
POLL = 0.01
"""Seconds between two reads of the store while the daemon fires."""
GIVE_UP = 120.0
"""Seconds after the deadline at which a run that has not fired everything fails."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=TARGET_GAMES, help="games (default 1000)")
    repeat_argument(parser)
    store_arguments(parser)
    parser.add_argument("--lead", type=float, default=5.0,
                        help="seconds between the daemon's start and the deadline, by its clock (default 5)")
    parser.add_argument("--daemon", nargs=2, metavar=("START", "OFFSET_FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.daemon:
        return daemon(*args.daemon)
    target = TARGET_SECONDS * args.games / TARGET_GAMES
    runs = [one_run(args, target) for _ in range(args.repeat)]
    print("=== summary ===")
    print(f"runs:             {len(runs)} of {args.games} deadlines on {runs[0][2]}")
    print(spread("last fired", [run[1] for run in runs], " s") + " after the deadline (committed)")
    ok = all(run[0] for run in runs) and median([run[1] for run in runs]) <= target
    scaled = "" if args.games == TARGET_GAMES else f" (pro rata for {args.games} deadlines)"
    print(f"target:           the median within {target:.1f} s{scaled}")
    print(f"result:           {verdict(ok)}")
    return 0 if ok else 1


def daemon(start_text: str, offset_file: str) -> int:
    """The daemon's process: ``dealer run`` on a clock that reads ``start`` now and ticks
    in real time; the clock's offset from the real one is written to ``offset_file``."""
    import freezegun
    from freezegun.api import real_time

    from dealer.cli import main as cli

    # No module sees the real time: freezegun's default list of exceptions includes
    # `threading`, which would give APScheduler's thread the real clock.
    freezegun.configure(default_ignore_list=[])
    with freezegun.freeze_time(datetime.fromisoformat(start_text), tick=True):
        offset = datetime.now(timezone.utc).timestamp() - real_time()
        written = Path(f"{offset_file}.part")
        written.write_text(repr(offset), encoding="utf-8")
        written.rename(offset_file)
        cli(["run"], standalone_mode=False)
    return 0


def one_run(args: argparse.Namespace, target: float) -> tuple[bool, float, str]:
    """One set-up and one daemon run: ``(ok, seconds from the deadline to the last
    deadline committed, store)``."""
    games = args.games
    store = Store.create(args.database_url, args.keep)
    bench = Bench(store, publisher=args.publisher)
    rng = FairSource("bench-firing-20261202")  # every draw through the fair source (GH-40)
    child: subprocess.Popen[bytes] | None = None
    try:
        _, deadline = bench.round_one_eve(games, rng)
        due = bench.count(Deadline, Deadline.status == "pending", Deadline.due_at <= deadline)
        assert due == games, due
        resolved_before = bench.count(Event, Event.type == "round.resolved")
        bench.dealer.engine.dispose()
        bench.dealer.reader.dispose()

        offset_file = store.root / "clock-offset"
        log_path = store.root / "daemon.log"
        env = {
            **os.environ,
            "DEALER_HOME": str(store.root),
            "DEALER_DATABASE_URL": store.url,
            "DEALER_INBOX": f"dir:{bench.inbox_dir}",
            "DEALER_PUBLISH": f"dir:{bench.outbox_dir}" if args.publisher == "dir" else "memory",
            "DEALER_DEADLINE_OVERRIDES": "",
            "DEALER_METRICS_PORT": "0",
            "DEALER_LOG_FORMAT": "text",  # errors counted below by their level
        }
        start = deadline - timedelta(seconds=args.lead)
        with step(f"daemon started {args.lead:g} s before the deadline, by its clock"), \
                log_path.open("wb") as log:
            child = subprocess.Popen(
                [sys.executable, __file__, "--daemon", start.isoformat(), str(offset_file)],
                env=env, cwd=store.root, stdout=log, stderr=subprocess.STDOUT,
            )
            while not offset_file.exists():
                if child.poll() is not None:
                    raise SystemExit(f"the daemon ended ({child.returncode}): {log_path.read_text()}")
                time.sleep(POLL)
        offset = float(offset_file.read_text(encoding="utf-8"))
        due_real = deadline.timestamp() - offset  # the deadline on this process's clock

        # Read without a transaction of its own (on SQLite, without the write lock that
        # every transaction of the store's engine takes first).
        writer = make_engine(store.url)
        engine = reading_engine(writer)
        fired_count = (select(func.count()).select_from(Deadline)
                       .where(Deadline.due_at == deadline, Deadline.status == "fired"))
        first = last = None
        with engine.connect() as connection:
            while True:
                fired = connection.execute(fired_count).scalar_one()
                if connection.in_transaction():
                    connection.rollback()  # the next read sees what committed since
                now = time.time()
                if fired and first is None:
                    first = now - due_real
                if fired == games:
                    last = now - due_real
                    break
                if child.poll() is not None:
                    raise SystemExit(f"the daemon ended ({child.returncode}) with {fired} of "
                                     f"{games} fired: see {log_path}")
                if now - due_real > GIVE_UP:
                    break
                time.sleep(POLL)
        engine.dispose()
        writer.dispose()
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=60)

        with bench.dealer.sessions() as session:
            latest_step = session.scalar(
                select(func.max(Deadline.fired_at)).where(Deadline.due_at == deadline))
        misfires = bench.count(Deadline, Deadline.status == "fired", Deadline.fired_at < Deadline.due_at)
        fired = bench.count(Deadline, Deadline.status == "fired", Deadline.due_at == deadline)
        adjudicated = bench.count(Event, Event.type == "round.resolved") - resolved_before
        errors = log_path.read_text(encoding="utf-8", errors="replace").count(" ERROR ")
        print(f"store:            {store.describe()}; publisher: {args.publisher}")
        print(f"deadlines due:    {due} (all at {deadline:%Y-%m-%dT%H:%M:%SZ})")
        print(f"deadlines fired:  {fired}; misfires (fired before due): {misfires}; "
              f"adjudicated {adjudicated} games; errors logged {errors}")
        if first is not None:
            print(f"first committed:  {first:.2f} s after the deadline")
        if latest_step is not None:
            began = (latest_step.replace(tzinfo=timezone.utc) - deadline).total_seconds()
            print(f"last step began:  {began:.2f} s after the deadline (its fired_at)")
        print("last committed:   " + (f"{last:.2f} s after the deadline (read every {POLL * 1000:.0f} ms)"
                                      if last is not None else f"not within {GIVE_UP:.0f} s"))
        print(f"machine:          {os.cpu_count()} cores, load average "
              f"{os.getloadavg()[0]:.2f} (1 min) after the run")
        ok = (last is not None and last <= target and fired == games and misfires == 0
              and adjudicated == games and errors == 0)
        print(f"run:              {verdict(ok)} (within {target:.1f} s)", flush=True)
        return ok, last if last is not None else float("inf"), store.describe().split(":")[0]
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        bench.close()


if __name__ == "__main__":
    sys.exit(main())
