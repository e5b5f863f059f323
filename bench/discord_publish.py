"""Publish throughput against the fake Discord's rate limit (issue 12).

Queues N posts over two routed channels and delivers them with the real delivery path
(claims on a SQLite store, the routing publisher, the Discord REST publisher over HTTP to
the local fake, real time). The fake allows ``--limit`` messages per ``--window`` seconds
per channel, with Discord's rate-limit headers and 429s.

Target: at least 90 % of the allowed rate sustained after warm-up (the first window), and
0 answers ``429`` after warm-up. Prints the figures and PASS/FAIL (exit 0/1). Needs
dealer[discord].

    .venv/bin/python bench/discord_publish.py                 # 600 posts, 20 per s per channel
    .venv/bin/python bench/discord_publish.py --posts 200     # a quick run
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from dealer.inbox.memory import MemoryInbox
from dealer.publish.discord import DiscordRest
from dealer.settings import Settings
from dealer.shell.passes import Dealer, PassReport
from dealer.shell.platforms import build_publisher
from dealer.store.db import make_engine, migrate
from dealer.store.models import Post

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
from fake_discord import FakeDiscord  # noqa: E402  (the tests' fake Discord)

CHANNELS = (111111111111111111, 111111111111111112)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=600)
    parser.add_argument("--limit", type=int, default=20, help="messages per window per channel")
    parser.add_argument("--window", type=float, default=1.0, help="seconds")
    args = parser.parse_args()

    fake = FakeDiscord(limit=args.limit, window=args.window).start()
    for channel in CHANNELS:
        fake.add_channel(channel)
    folder = Path(tempfile.mkdtemp(prefix="dealer-bench-discord-"))
    url = f"sqlite:///{folder / 'dealer.db'}"
    engine = make_engine(url)
    migrate(engine)
    engine.dispose()
    settings = Settings(home=str(folder), database_url=url, _env_file=None,
                        routes=";".join(f"#c{i}=discord:channel/{c}" for i, c in enumerate(CHANNELS)),
                        discord_token=fake.token, discord_api_url=fake.api_url)
    rest = DiscordRest(fake.token, api_url=fake.api_url, rate=settings.discord_rate)
    dealer = Dealer(settings, inbox=MemoryInbox(), publisher=build_publisher(settings, rest))
    now = datetime.now(timezone.utc)
    with dealer.sessions.begin() as session:
        for i in range(args.posts):
            session.add(Post(key=f"bench:{i}", game_id=None, channel=f"#c{i % len(CHANNELS)}", recipient=None,
                             kind="note", subject="bench", body=f"post {i}", created_at=now,
                             status="pending", attempts=0))
    print(f"delivering {args.posts} posts to {len(CHANNELS)} channels; the fake allows "
          f"{args.limit} per {args.window:g} s per channel", file=sys.stderr)
    started = time.monotonic()
    report = PassReport(now=datetime.now(timezone.utc))
    dealer.deliver(report)
    elapsed = time.monotonic() - started
    fake.stop()
    rest.close()

    posts = sorted((r for r in fake.requests if r.method == "POST"), key=lambda r: r.at)
    ok = [r for r in posts if r.status == 200]
    warm = posts[0].at + args.window if posts else started
    after = [r for r in ok if r.at >= warm]
    limited_after = [r for r in posts if r.status == 429 and r.at >= warm]
    span = started + elapsed - warm  # from the end of the first window to the last answer
    allowed = args.limit / args.window * len(CHANNELS)
    rate = len(after) / span if span > 0 else float("inf")
    share = rate / allowed
    print(f"posts delivered        {report.delivered} of {args.posts} in {elapsed:.2f} s")
    print(f"allowed rate           {allowed:.1f} per s ({len(CHANNELS)} channels)")
    print(f"sustained after warm-up {rate:.1f} per s = {share:.1%} of the allowed rate")
    print(f"429 answers            {sum(r.status == 429 for r in posts)} in all, {len(limited_after)} after warm-up")
    good = report.delivered == args.posts and share >= 0.9 and not limited_after
    print("PASS" if good else "FAIL")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
