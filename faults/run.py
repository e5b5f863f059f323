"""The full-length fault-injection run: hundreds of kills, one or two replicas.

    .venv/bin/python faults/run.py                                   # SQLite, 1 replica, 300 kills
    .venv/bin/python faults/run.py --kills 60                        # a quick run
    .venv/bin/python faults/run.py --replicas 2 \\
        --database-url postgresql://postgres@127.0.0.1:5432/dealer_faults   # two replicas
    .venv/bin/python faults/run.py --kills 150 --kill-after 0.1-1.5 --exec \
        --disconnect-every 0 --database-url postgresql://...       # a crash loop

What a run does and checks: ``faults/faultlib.py``; how to read the figures:
docs/OPERATING.md ("Fault-injection run"). The figures go to stdout, progress to stderr;
the exit status is 0 when the books balance (no problem found), 1 otherwise.

The store is a temporary SQLite file unless ``--database-url`` names another. A Postgres
URL is used inside a schema of its own (``dealer_faults_<pid>``, chosen through
``search_path``), dropped at the end unless ``--keep``: the run neither reads nor disturbs
what else the database holds. The daemons' connections carry the application name
``dealer-faultrun``, and only those are cut.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))
import faultlib  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="the store (default: a temporary SQLite file)")
    parser.add_argument("--replicas", type=int, default=1, help="daemons at once (default 1)")
    parser.add_argument("--kills", type=int, default=300, help="kills before the drain (default 300)")
    parser.add_argument("--games", type=int, default=10, help="roulette games (default 10)")
    parser.add_argument("--round-length", type=int, default=3, help="seconds per round (default 3)")
    parser.add_argument("--rate", type=float, default=6.0, help="inbox files per second (default 6)")
    parser.add_argument("--longest-random-life", type=float, default=1.0,
                        help="a life killed at random lives up to this many seconds (default 1)")
    parser.add_argument("--named-life-limit", type=float, default=5.0,
                        help="a life planned for a named point that has not reached it by "
                        "then is killed anyway (default 5 s)")
    parser.add_argument("--random-share", type=float, default=0.5,
                        help="share of lives killed at random rather than at a named point")
    parser.add_argument("--kill-after", metavar="LOW-HIGH",
                        help="a crash loop: every life killed at random, LOW to HIGH seconds "
                        "after its start (sets --random-share 1)")
    parser.add_argument("--exec", action="store_true",
                        help="each life a new program that imports dealer as a supervisor "
                        "starts an installed one: dealer's modules compiled first (as pip "
                        "does), read as bytecode; not a fork of a process that imported it once")
    parser.add_argument("--disconnect-every", type=float, default=2.0,
                        help="Postgres: cut the daemons' connections about this often, in s "
                        "(default 2; 0: never)")
    parser.add_argument("--drain-limit", type=float, default=300.0,
                        help="seconds the drain may take before the run is failed (default 300)")
    parser.add_argument("--seed", type=int, default=None, help="the harness's seed (default: drawn)")
    parser.add_argument("--keep", action="store_true", help="keep the files and the schema")
    args = parser.parse_args(argv)
    shortest = 0.0
    if args.kill_after:
        try:
            low, high = (float(part) for part in args.kill_after.split("-"))
        except ValueError:
            parser.error("--kill-after takes LOW-HIGH, in seconds (0.1-1.5)")
        shortest, args.longest_random_life, args.random_share = low, high, 1.0
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")

    root = Path(tempfile.mkdtemp(prefix="dealer-faults-"))
    try:
        with faultlib.scratch_store(args.database_url, root, "dealer_faults", args.keep) as url:
            attack = faultlib.Attack(
                database_url=url, root=root, kills=args.kills, replicas=args.replicas,
                games=args.games, round_length=args.round_length, message_rate=args.rate,
                random_share=args.random_share, longest_random_life=args.longest_random_life,
                shortest_random_life=shortest, exec_lives=args.exec,
                named_life_limit=args.named_life_limit, drain_limit=args.drain_limit,
                disconnect_every=args.disconnect_every or None, seed=seed,
            )
            print(f"fault run in {root} on {make_url(url).render_as_string(hide_password=True)}",
                  file=sys.stderr)
            return faultlib.verdict(faultlib.run(attack, progress=sys.stderr))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
