"""A publisher's outage delivers everything once it ends, without a human (issue 36,
item 5).

The repro: four 503s in nine seconds parked the first post of a channel and held back 24
later posts of three games for good after the platform came back. Now a post is parked
only after failing for ``DEALER_PUBLISH_PARK_AFTER`` hours, and a parked post is tried
again on its own after its backoff; ``dealer health`` and the metrics say so meanwhile.
The clock is the pass's ``now``: no test waits.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from sqlalchemy import select

from dealer.health import check_health
from dealer.metrics import METRICS
from dealer.publish import DeliveryFailed, Publisher
from dealer.publish.base import OutgoingPost
from dealer.store.models import Post

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
CHANNELS = ("#roulette-1", "#the-raceway", "#hall")


@dataclass
class Platform(Publisher):
    """A platform that answers 503 to every post while ``down_until`` is ahead of the
    pass's time (set by the test), and records what it shows."""

    down_until: datetime = T0
    now: datetime = T0
    shown: list[str] = field(default_factory=list)
    refusals: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, post: OutgoingPost) -> str:
        if self.now < self.down_until:
            self.refusals += 1
            raise DeliveryFailed("503 Service Unavailable")
        with self.lock:
            self.shown.append(post.key)
        return f"x:{post.id}"


def queue_games(h) -> list[str]:  # type: ignore[no-untyped-def]
    """25 posts of three games' channels, in publication order; their keys."""
    def add(session):  # type: ignore[no-untyped-def]
        rows = [Post(key=f"k{i:02d}", game_id=None, channel=CHANNELS[i % 3], recipient=None, kind="note",
                     subject=f"post {i}", body="body", created_at=T0, status="pending", attempts=0)
                for i in range(25)]
        session.add_all(rows)
        return [r.key for r in rows]
    return h.admin(add)


def run_until(h, platform: Platform, start: datetime, end: datetime, step: timedelta) -> list:  # type: ignore[no-untyped-def]
    reports = []
    now = start
    while now <= end:
        platform.now = now
        reports.append(h.run(now))
        now += step
    return reports


def statuses(h) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: {p.key: p.status for p in s.scalars(select(Post).order_by(Post.id))})


def test_a_30_second_outage_delivers_everything_without_a_human(make_harness) -> None:  # type: ignore[no-untyped-def]
    # The default settings, with a short first backoff: a post is refused five times
    # (DEALER_PUBLISH_RETRIES) within some fifteen seconds of the outage.
    h = make_harness(publish_backoff=1.0)
    platform = Platform(down_until=T0 + timedelta(seconds=30))
    h.dealer.publisher = platform
    keys = queue_games(h)
    reports = run_until(h, platform, T0, T0 + timedelta(minutes=3), timedelta(seconds=1))
    assert platform.refusals >= 5 * len(CHANNELS)  # every channel's first post, 5 times and more
    assert sum(r.failed for r in reports) == 0 and all(r.parked == 0 for r in reports)
    assert set(statuses(h).values()) == {"delivered"}
    # Each channel's posts in their order.
    for channel in range(3):
        mine = [k for k in platform.shown if int(k[1:]) % 3 == channel]
        assert mine == [k for k in keys if int(k[1:]) % 3 == channel]
    assert check_health(h.dealer.engine, T0 + timedelta(minutes=3)).ok


def test_a_long_outage_parks_then_delivers_on_its_own(make_harness) -> None:  # type: ignore[no-untyped-def]
    METRICS.enable()

    def unparked() -> float:
        return METRICS.registry.get_sample_value("dealer_posts_total", {"outcome": "unparked"}) or 0.0

    before = unparked()
    h = make_harness(publish_backoff=10.0, publish_park_after=1.0)
    platform = Platform(down_until=T0 + timedelta(hours=3))
    h.dealer.publisher = platform
    queue_games(h)
    # Within the first hour nothing is parked, however often the platform refused.
    reports = run_until(h, platform, T0, T0 + timedelta(minutes=59), timedelta(minutes=1))
    assert all(r.parked == 0 for r in reports) and platform.refusals > 3 * 5
    assert check_health(h.dealer.engine, T0 + timedelta(minutes=59)).ok
    # Past an hour of failing, each channel's first post is parked: health and metrics say so.
    reports = run_until(h, platform, T0 + timedelta(minutes=60), T0 + timedelta(hours=2), timedelta(minutes=1))
    assert reports[-1].parked == 3
    health = check_health(h.dealer.engine, T0 + timedelta(hours=2))
    assert any("3 post(s) parked" in p and "tried again on its own" in p for p in health.problems)
    assert METRICS.registry.get_sample_value("dealer_posts_parked") == 3
    refused = platform.refusals
    # Parked posts are still tried, after their backoff (at most an hour), not every pass.
    run_until(h, platform, T0 + timedelta(hours=2, minutes=1), T0 + timedelta(hours=3) - timedelta(seconds=1),
              timedelta(minutes=1))
    assert 3 <= platform.refusals - refused <= 3 * 2
    assert unparked() - before >= 3
    # The platform is back at 3 h: within the next backoff everything goes out, in order.
    reports = run_until(h, platform, T0 + timedelta(hours=3), T0 + timedelta(hours=4, minutes=5),
                        timedelta(minutes=1))
    assert set(statuses(h).values()) == {"delivered"} and len(platform.shown) == 25
    assert reports[-1].parked == 0
    assert check_health(h.dealer.engine, T0 + timedelta(hours=4, minutes=5)).ok
    assert METRICS.registry.get_sample_value("dealer_posts_parked") == 0
