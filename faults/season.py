"""The season: days of games at once, played by scripted players through the real daemon
under faults, then every figure reconciled.

    .venv/bin/python faults/season.py --days 3 --players 12            # the short season
    .venv/bin/python faults/season.py --days 30 --players 50 --day-seconds 30   # the full one
    .venv/bin/python faults/season.py --replicas 2 \\
        --database-url postgresql://postgres@127.0.0.1:5432/test      # two replicas

What a season does: ``faults/seasonlib.py``; its books: ``faults/season_books.py``; how to
read the figures: docs/OPERATING.md ("The season"). The figures go to stdout, progress to
stderr; the exit status is 0 when the books balance and the season played enough to prove
it, 1 otherwise. The store is a temporary SQLite file unless ``--database-url`` names
another (a Postgres one is used inside a schema of its own, dropped at the end unless
``--keep``).
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
import seasonlib  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="the players' and faults' seed "
                        "(default: drawn, and printed)")
    parser.add_argument("--days", type=int, default=3, help="season days (default 3)")
    parser.add_argument("--players", type=int, default=12, help="players (default 12)")
    parser.add_argument("--day-seconds", type=float, default=20.0,
                        help="real seconds a season day lasts (default 20)")
    parser.add_argument("--database-url", help="the store (default: a temporary SQLite file)")
    parser.add_argument("--replicas", type=int, default=1, help="daemons at once (default 1)")
    parser.add_argument("--no-kills", action="store_true", help="no SIGKILL of the daemons")
    parser.add_argument("--no-disconnects", action="store_true",
                        help="no cut connections (Postgres's, and the IMAP server's)")
    parser.add_argument("--no-outage", action="store_true", help="no publisher outage")
    parser.add_argument("--downtime", type=float, default=1.0,
                        help="days with no daemon at all, once (default 1; 0: none)")
    parser.add_argument("--no-webhook", action="store_true",
                        help="every player writes over the directory inbox")
    parser.add_argument("--no-discord", action="store_true",
                        help="nobody plays on Discord (its fake is not started)")
    parser.add_argument("--no-email", action="store_true",
                        help="nobody plays by e-mail (no dovecot nor SMTP server; the daemons "
                             "read the directory inbox)")
    parser.add_argument("--no-hall", action="store_true",
                        help="no Gilded Hall (nor its Exoptosis matches)")
    parser.add_argument("--no-admin", action="store_true",
                        help="no admin overrides (dealer deadline extend/now/pause/resume)")
    parser.add_argument("--keep", action="store_true", help="keep the files and the schema")
    args = parser.parse_args(argv)
    if args.no_webhook and not args.no_email:
        parser.error("--no-webhook needs --no-email: the webhook carries what a mail cannot "
                     "(a channel post, an edit, a reaction)")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big") % 10**6
    root = Path(tempfile.mkdtemp(prefix="dealer-season-"))
    try:
        with faultlib.scratch_store(args.database_url, root, "dealer_season", args.keep) as url:
            season = seasonlib.Season(
                database_url=url, root=root, seed=seed, days=args.days, players=args.players,
                day_seconds=args.day_seconds, replicas=args.replicas, kills=not args.no_kills,
                disconnects=not args.no_disconnects, outage=not args.no_outage,
                downtime=args.downtime, webhook=not args.no_webhook, admin=not args.no_admin,
                discord=not args.no_discord, email=not args.no_email, hall=not args.no_hall,
            )
            print(f"season in {root} on {make_url(url).render_as_string(hide_password=True)}",
                  file=sys.stderr)
            return faultlib.verdict(seasonlib.run(season, progress=sys.stderr))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
