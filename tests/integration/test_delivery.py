"""Delivery on a real store: each post once, each destination in order, backoff with
jitter and "retry after", parking and re-queueing, stale reminders dropped, and two
daemons delivering one outbox."""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

from dealer.publish import DeliveryFailed, Publisher
from dealer.publish.base import OutgoingPost
from dealer.shell.admin import add_player, create_game
from dealer.shell import delivery
from dealer.shell.delivery import BACKOFF_CAP, NotParked, backoff, retry_posts
from dealer.shell.report import PassReport
from dealer.store.models import Post

from sqlcount import commit_settings

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


@dataclass
class ScriptedPublisher(Publisher):
    """Records every send (in order, re-sends included) and fails the posts ``failing``
    names: a channel or ``pm:RECIPIENT`` fails with ``DeliveryFailed``, with the
    ``retry_after`` given for it."""

    failing: dict[str, float | None] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, post: OutgoingPost) -> str:
        where = f"pm:{post.recipient}" if post.recipient else post.channel
        if where in self.failing:
            self.refused.append(post.key)
            raise DeliveryFailed(f"{where} is down", retry_after=self.failing[where])
        with self.lock:
            self.sent.append(post.key)
        return f"x:{post.id}"


def queue(h, *posts: tuple[str, str | None], stale_after: datetime | None = None) -> list[int]:  # type: ignore[no-untyped-def]
    """Queue posts ``(channel, recipient)`` directly in the outbox; return their ids."""
    def add(session):  # type: ignore[no-untyped-def]
        start = session.query(Post).count()
        rows = [
            Post(key=f"k{start + i}", game_id=None, channel=channel, recipient=recipient, kind="note",
                 subject=f"post {start + i}", body="body", created_at=T0, status="pending", attempts=0,
                 stale_after=stale_after)
            for i, (channel, recipient) in enumerate(posts)
        ]
        session.add_all(rows)
        session.flush()
        return [r.id for r in rows]
    return h.admin(add)


def statuses(h) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: {p.key: p.status for p in s.scalars(select(Post).order_by(Post.id))})


# -- backoff ---------------------------------------------------------------------------------


def test_backoff_doubles_with_jitter_up_to_the_cap_and_honours_retry_after() -> None:
    # Equal jitter: between half and all of first * 2**(attempts - 1).
    for attempts, full in [(1, 10), (2, 20), (3, 40), (4, 80)]:
        delay = backoff("in:1:0", attempts, 10.0)
        assert full / 2 <= delay <= full
    assert BACKOFF_CAP / 2 <= backoff("in:1:0", 30, 10.0) <= BACKOFF_CAP
    # The same post and attempt always get the same wait (every replica agrees) ...
    assert backoff("in:1:0", 2, 10.0) == backoff("in:1:0", 2, 10.0)
    # ... and posts that failed together are spread out.
    waits = {round(backoff(f"in:{n}:0", 1, 10.0), 3) for n in range(50)}
    assert len(waits) > 40 and min(waits) < 6 and max(waits) > 9
    # A transport's "retry after" is never cut short.
    assert backoff("in:1:0", 1, 10.0, retry_after=120.0) == 120.0


# -- order, retries, parking ----------------------------------------------------------------


def test_a_failing_post_holds_back_its_own_destination_only(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(publish_backoff=10.0)
    publisher = ScriptedPublisher(failing={"pm:alice": None})
    h.dealer.publisher = publisher
    queue(h, ("pm", "alice"), ("pm", "bob"), ("pm", "alice"), ("table", None))
    report = h.run(T0)
    assert publisher.sent == ["k1", "k3"]  # bob and the table go; alice's second waits
    assert publisher.refused == ["k0"] and report.retried == 1 and report.delivered == 2
    row = h.admin(lambda s: s.scalar(select(Post).where(Post.key == "k0")))
    assert row.attempts == 1 and row.status == "pending" and "pm:alice is down" in row.last_error
    # Not tried again before its backoff (5 to 10 s after the first failure) is over.
    assert T0 + timedelta(seconds=5) <= row.next_attempt_at <= T0 + timedelta(seconds=10)
    h.run(T0 + timedelta(seconds=4))
    assert publisher.refused == ["k0"]
    publisher.failing.clear()
    h.run(T0 + timedelta(seconds=11))
    assert publisher.sent == ["k1", "k3", "k0", "k2"]  # alice's posts in their order
    assert set(statuses(h).values()) == {"delivered"}


def test_a_post_is_parked_after_its_retries_and_re_queued_by_retry(make_harness) -> None:  # type: ignore[no-untyped-def]
    # Parked as soon as its retries are spent (no time-based grace: PUBLISH_PARK_AFTER=0).
    h = make_harness(publish_retries=3, publish_backoff=1.0, publish_park_after=0)
    publisher = ScriptedPublisher(failing={"pm:alice": None})
    h.dealer.publisher = publisher
    first, second, other = queue(h, ("pm", "alice"), ("pm", "alice"), ("pm", "bob"))
    now = T0
    for _ in range(3):
        report = h.run(now)
        now += timedelta(hours=1)
    assert publisher.refused == ["k0"] * 3 and report.failed == 1 and report.parked == 1
    assert statuses(h) == {"k0": "failed", "k1": "pending", "k2": "delivered"}
    assert "1 parked post(s) wait for `dealer outbox retry`" in report.line()
    # Parked, it still holds back alice's later post: order is never broken.
    later = h.run(now + timedelta(days=1))
    assert later.parked == 1 and publisher.sent == ["k2"]
    # `dealer outbox retry` refuses a post that is not parked, and re-queues a parked one.
    with pytest.raises(NotParked, match=f"post {other} is delivered, not parked"):
        h.admin(lambda s: retry_posts(s, [first, other]))
    assert [p.id for p in h.admin(lambda s: retry_posts(s, [first]))] == [first]
    row = h.admin(lambda s: s.get(Post, first))
    assert (row.status, row.attempts, row.next_attempt_at) == ("pending", 0, None)
    publisher.failing.clear()
    report = h.run(now + timedelta(days=1))
    assert publisher.sent == ["k2", "k0", "k1"] and report.parked == 0
    assert h.admin(lambda s: retry_posts(s, None)) == []
    assert second  # queued second, delivered right after the re-queued first


def test_retry_after_is_honoured_and_never_parks(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(publish_retries=1, publish_backoff=1.0)
    publisher = ScriptedPublisher(failing={"table": 300.0})  # a rate limit: "retry after 300 s"
    h.dealer.publisher = publisher
    queue(h, ("table", None))
    report = h.run(T0)
    assert report.retried == 1 and report.failed == 0
    row = h.admin(lambda s: s.scalar(select(Post)))
    assert row.status == "pending" and row.next_attempt_at == T0 + timedelta(seconds=300)
    h.run(T0 + timedelta(seconds=299))
    assert publisher.refused == ["k0"]
    publisher.failing.clear()
    h.run(T0 + timedelta(seconds=300))
    assert publisher.sent == ["k0"]


def test_delivery_failed_carries_retry_after_as_a_keyword() -> None:
    exc = DeliveryFailed("429 Too Many Requests", retry_after=2.5)
    assert exc.retry_after == 2.5 and str(exc) == "429 Too Many Requests"
    assert DeliveryFailed("down").retry_after is None


# -- stale reminders -------------------------------------------------------------------------


def test_a_post_past_its_stale_time_is_dropped_not_sent(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness()
    publisher = ScriptedPublisher()
    h.dealer.publisher = publisher
    queue(h, ("pm", "alice"), stale_after=T0 + timedelta(hours=1))
    queue(h, ("pm", "alice"))
    report = h.run(T0 + timedelta(hours=1))
    assert report.dropped == 1 and publisher.sent == ["k1"]
    row = h.admin(lambda s: s.scalar(select(Post).where(Post.key == "k0")))
    assert row.status == "dropped" and "2026-12-01 11:00 UTC" in row.last_error


def _roulette(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=100)
        add_player(session, "bob", T0, chips=100)
        create_game(session, "roulette", "r1", T0, players=["alice", "bob"], start=T0,
                    settings={"remind_before": "6h"})
    h.admin(setup)


def test_reminders_whose_deadline_passed_during_downtime_are_dropped(harness) -> None:  # type: ignore[no-untyped-def]
    _roulette(harness)
    harness.run(T0)
    # The daemon was down for two days: the preparation's and round 1's reminders fire
    # late, after the deadlines they announce; their PMs are dropped, not sent.
    report = harness.run(T0 + timedelta(days=2, hours=1))
    assert report.dropped == 4  # two phases, two players who owed their submissions
    assert [p for p in harness.posts() if p["kind"] == "reminder"] == []
    dropped = harness.admin(lambda s: [p.kind for p in s.scalars(select(Post).where(Post.status == "dropped"))])
    assert dropped == ["reminder"] * 4


def test_a_reminder_in_time_is_sent(harness) -> None:  # type: ignore[no-untyped-def]
    _roulette(harness)
    harness.run(T0)
    report = harness.run(T0 + timedelta(hours=18, minutes=1))  # 6 h before the preparation closes
    assert report.dropped == 0
    assert sorted(p["recipient"] for p in harness.posts() if p["kind"] == "reminder") == ["alice", "bob"]


# -- two daemons -----------------------------------------------------------------------------


def test_two_daemons_deliver_one_outbox_each_post_once_in_order(make_harness, database_url) -> None:  # type: ignore[no-untyped-def]
    first = make_harness()
    second = make_harness()
    shared = ScriptedPublisher()
    first.dealer.publisher = second.dealer.publisher = shared
    destinations = [("pm", f"p{n}") for n in range(8)] + [("table", None), ("lobby", None)]
    posts = [destinations[i % len(destinations)] for i in range(400)]
    queue(first, *posts)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []
    reports = []

    def work(h):  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            reports.append(h.run(T0))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(h,)) for h in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(shared.sent) == sorted(f"k{i}" for i in range(400))  # each exactly once
    assert sum(r.delivered for r in reports) == 400
    # Each destination's posts went out in the order they were queued.
    for d, destination in enumerate(destinations):
        mine = [f"k{i}" for i in range(400) if i % len(destinations) == d]
        assert [k for k in shared.sent if k in set(mine)] == mine, destination
    assert set(statuses(first).values()) == {"delivered"}


def test_on_postgres_a_post_in_flight_is_skipped_not_doubled_or_waited_for(make_harness, database_url) -> None:  # type: ignore[no-untyped-def]
    if not database_url.startswith("postgresql"):
        pytest.skip("a row lock held across a send is Postgres's (SQLite has one writer at a time)")
    first = make_harness()
    second = make_harness()
    # k0 alone first: the first daemon's batch then holds only k0 (a batch takes every
    # post due when it is claimed).
    queue(first, ("pm", "alice"))
    in_flight = threading.Event()
    second_done = threading.Event()

    class Blocking(ScriptedPublisher):
        """The first daemon's send of alice's first post waits until the second daemon's
        pass is over: meanwhile that post is in flight, its row locked."""

        def send(self, post: OutgoingPost) -> str:
            if post.key == "k0":
                in_flight.set()
                assert second_done.wait(timeout=30)
            return super().send(post)

    shared = Blocking()
    first.dealer.publisher = second.dealer.publisher = shared
    thread = threading.Thread(target=first.run, args=(T0,))
    thread.start()
    try:
        assert in_flight.wait(timeout=30)
        queue(second, ("pm", "alice"), ("pm", "bob"))
        # The second daemon skips k0 (in flight), holds back k1 (alice's, after k0) and
        # sends bob's k2, without waiting for the first daemon.
        report = second.run(T0)
        assert report.delivered == 1 and shared.sent == ["k2"]
    finally:
        second_done.set()
        thread.join()
    # k1 was queued after the first daemon's claim took everything then due: its next
    # pass sends it, after k0.
    first.run(T0)
    assert shared.sent == ["k2", "k0", "k1"]


def test_two_daemons_applying_messages_across_games_never_deadlock(make_harness, caplog) -> None:  # type: ignore[no-untyped-def]
    """Each daemon applies messages in groups (several games in one transaction); their
    games come in crossing orders. On Postgres the groups exclude each other
    (``queries.step_lock_alone``): no deadlock, every message applied once."""
    first = make_harness()
    second = make_harness()
    games = [f"t{n}" for n in range(1, 7)]

    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0, chips=10)
        for game in games:
            create_game(session, "tally", game, T0, players=["alice", "bob"])
    first.admin(setup)
    for n in range(240):
        # Daemon-crossing orders: t1 t2 ... t6, then t6 ... t1, and so on.
        order = games if (n // len(games)) % 2 == 0 else games[::-1]
        first.send("alice" if n % 2 else "bob", "add 1", T0 + timedelta(seconds=n), game=order[n % len(games)])
    first.dealer.ingest(T0 + timedelta(minutes=5))
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []
    reports = []

    def work(h):  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            reports.append(h.run(T0 + timedelta(minutes=5)))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(h,)) for h in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert "deadlock" not in caplog.text.lower()
    assert sum(r.messages for r in reports) == 240 and all(r.ok for r in reports)
    from dealer.views import game_view

    totals = [first.admin(lambda s, g=g: game_view(s, g))["scores"] for g in games]
    assert sum(sum(scores.values()) for scores in totals) == 240


def test_the_daemon_logs_the_parked_count_when_it_changes(make_harness, caplog) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(publish_retries=1, publish_park_after=0)
    publisher = ScriptedPublisher(failing={"table": None})
    h.dealer.publisher = publisher
    (post,) = queue(h, ("table", None))
    caplog.set_level("INFO", logger="dealer.shell.passes")
    h.run(T0)
    h.run(T0 + timedelta(minutes=1))  # still one parked: not logged again
    parked = [r for r in caplog.records if "parked after failing every attempt" in r.getMessage()]
    assert [r.getMessage().split(" ")[0] for r in parked] == ["1"] and parked[0].levelname == "WARNING"
    h.admin(lambda s: retry_posts(s, [post]))
    publisher.failing.clear()
    h.run(T0 + timedelta(minutes=2))
    assert "no parked post any more" in caplog.text


def test_a_publisher_bug_counts_as_a_failed_attempt_and_stops_nothing(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(publish_retries=2, publish_park_after=0)

    class Broken(ScriptedPublisher):
        def send(self, post: OutgoingPost) -> str:
            if post.channel == "table":
                raise KeyError("a bug in the adapter")
            return super().send(post)

    publisher = Broken()
    h.dealer.publisher = publisher
    queue(h, ("table", None), ("pm", "bob"))
    report = h.run(T0)
    assert report.retried == 1 and publisher.sent == ["k1"]
    row = h.admin(lambda s: s.scalar(select(Post).where(Post.key == "k0")))
    assert row.status == "pending" and row.attempts == 1 and "a bug in the adapter" in row.last_error
    assert h.run(T0 + timedelta(hours=1)).failed == 1  # parked after its retries, as any failure


# -- transports that cannot drop a repeat ---------------------------------------------------


class Killed(BaseException):
    """The process dies mid-send (not an Exception: nothing in dealer catches it)."""


@dataclass
class DyingPublisher(ScriptedPublisher):
    """Sends as :class:`ScriptedPublisher`, says whether its transport drops a repeat
    (``dedupe``), and dies while sending the post ``dies_at`` (a key)."""

    dedupe: bool = True
    dies_at: str = ""

    def dedupes(self, post: OutgoingPost, destination: object = None) -> bool:
        return self.dedupe

    def send(self, post: OutgoingPost) -> str:
        if post.key == self.dies_at:
            raise Killed(post.key)
        return super().send(post)


@pytest.mark.parametrize("dedupe, delivered_before_the_death", [(True, []), (False, ["k0", "k1", "k2"])])
def test_a_post_whose_transport_cannot_drop_a_repeat_is_committed_alone(  # type: ignore[no-untyped-def]
    make_harness, dedupe, delivered_before_the_death
) -> None:
    """A batch is committed after all its sends: a death mid-batch leaves the batch's sent
    posts pending, sent again by the next life with the same keys, which a transport that
    drops repeats (Discord's nonce, a file named by the post) makes harmless. A transport
    that cannot (a webhook, Discourse, mail) gets each post committed right after its send,
    so a death repeats at most the post it died on."""
    h = make_harness()
    publisher = DyingPublisher(dedupe=dedupe, dies_at="k3")
    h.dealer.publisher = publisher
    queue(h, ("pm", "alice"), ("pm", "bob"), ("table", None), ("pm", "carol"), ("pm", "dave"))
    with pytest.raises(Killed):
        h.run(T0)
    assert [k for k, s in statuses(h).items() if s == "delivered"] == delivered_before_the_death
    # The next life (a new daemon: it does not know what the dead one sent) sends what
    # is still pending, in order.
    publisher.dies_at = ""
    again = make_harness()
    again.dealer.publisher = publisher
    again.run(T0 + timedelta(seconds=1))
    assert set(statuses(again).values()) == {"delivered"}
    repeated = ["k0", "k1", "k2"] if dedupe else []
    assert publisher.sent == ["k0", "k1", "k2"] + repeated + ["k3", "k4"]


def test_which_transports_drop_a_repeat() -> None:
    from dealer.publish.directory import DirectoryPublisher
    from dealer.publish.discord import DiscordPublisher
    from dealer.publish.discourse import DiscoursePublisher
    from dealer.publish.smtp import SmtpPublisher
    from dealer.publish.stdout import StdoutPublisher
    from dealer.routes import Destination

    post = OutgoingPost(1, "k", "#t", None, None, "note", "s", "b", T0)
    discord = DiscordPublisher(rest=None)  # type: ignore[arg-type]
    assert discord.dedupes(post, Destination("discord", "channel/123", "discord"))  # the nonce
    assert not discord.dedupes(post, Destination("discord", "webhook", "discord"))
    assert DirectoryPublisher(Path(tempfile.mkdtemp())).dedupes(post)  # the file is the post's
    assert not DiscoursePublisher("http://forum.example", "key", "dealer", client=object()).dedupes(post)
    assert not SmtpPublisher("127.0.0.1", 25, sender="dealer@example.org").dedupes(post)
    assert not StdoutPublisher().dedupes(post)


# -- commits that need not wait for the disk (Postgres) -----------------------------------


@pytest.mark.parametrize("dedupe, failing, unrecorded, sent, commits", [
    # One batch; a loss re-sends both posts, which their platform drops.
    (True, {}, {}, ["k0", "k1"], ["off"]),
    # Each post committed alone after its send, durably.
    (False, {}, {}, ["k0", "k1"], ["on", "on"]),
    # A refusal in the batch (it may have recorded parts of its post).
    (True, {"table": None}, {}, ["k0"], ["on"]),
    # A send of an earlier transaction, marked now (the process would not send it again).
    (True, {}, {"k0": "x:1"}, ["k1"], ["on"]),
])
def test_on_postgres_marks_of_posts_whose_platform_drops_a_repeat_commit_without_waiting_for_the_disk(  # type: ignore[no-untyped-def]
    make_harness, database_url, dedupe, failing, unrecorded, sent, commits
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("synchronous_commit is Postgres's (SQLite's WAL commits are not flushed)")
    h = make_harness()
    publisher = DyingPublisher(dedupe=dedupe, failing=failing)
    h.dealer.publisher = publisher
    h.dealer.unrecorded_sends.update(unrecorded)
    queue(h, ("pm", "alice"), ("table", None))
    seen = commit_settings(h.dealer.engine)
    h.run(T0)
    assert seen == commits
    assert statuses(h) == {"k0": "delivered", "k1": "pending" if failing else "delivered"}
    assert publisher.sent == sent


def test_on_postgres_a_message_is_applied_durably_and_its_reply_marked_without_waiting(  # type: ignore[no-untyped-def]
    harness, database_url
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("synchronous_commit is Postgres's")
    seen = commit_settings(harness.dealer.engine)
    harness.send("stranger", "hello", T0)
    report = harness.run(T0 + timedelta(minutes=1))
    assert report.messages == 1 and report.delivered == 1
    # The message itself was stored in autocommit, at the server's setting ("on").
    assert seen == ["on", "off"]  # its step (and reply) durably; the reply's mark not


def test_a_bounded_delivery_sends_as_many_batches_as_asked(make_harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The count of posts a batch marked once took the place of the count of batches: a
    # bound of 2 then stopped after one batch of 3 posts, or never after a batch of 1.
    monkeypatch.setattr(delivery, "DELIVERY_BATCH", 3)
    h = make_harness()
    publisher = ScriptedPublisher()
    h.dealer.publisher = publisher
    queue(h, *[("table", None)] * 10)
    report = PassReport(now=T0)
    assert h.dealer.deliver(report, batches=2) == 6 and report.more
    report = PassReport(now=T0)
    assert h.dealer.deliver(report, batches=2) == 4 and not report.more
    assert publisher.sent == [f"k{n}" for n in range(10)]
