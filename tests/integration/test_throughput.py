"""The throughput paths keep every guarantee (issue 13): deadlines fired in groups, posts
delivered in batches, one timer for the next deadline; on a real store."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import event, select, update

import tally
from dealer.publish import DeliveryFailed, Publisher
from dealer.publish.base import OutgoingPost
from dealer.shell import delivery, passes, timers
from dealer.shell.admin import add_player, create_game
from dealer.shell.passes import PassReport, deadline_group
from dealer.store import queries as Q
from dealer.store.queries import delivery as delivery_queries
from dealer.store.models import Deadline, Event, Inbound, Post

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
CLOSE = T0 + timedelta(hours=1)  # the tally's default length


def tallies(h, names: list[str], first: int = 0) -> None:  # type: ignore[no-untyped-def]
    """One tally per name, two players each (numbered from ``first``), all closing at CLOSE."""
    def setup(session):  # type: ignore[no-untyped-def]
        for i, game in enumerate(names, start=first):
            add_player(session, f"a{i}", T0, chips=10)
            add_player(session, f"b{i}", T0, chips=10)
            create_game(session, "tally", game, T0, players=[f"a{i}", f"b{i}"], settings={"rounds": "1"})
    h.admin(setup)


def deadlines(h) -> dict[str, tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    return h.admin(lambda s: {d.game_id: (d.status, d.error) for d in s.scalars(select(Deadline))})


# -- deadlines in groups ---------------------------------------------------------------


def test_a_group_takes_due_deadlines_in_order_one_per_game_and_stops_at_a_message() -> None:
    due = [(1, T0, "g1"), (2, T0, "g2"), (3, T0 + timedelta(seconds=1), "g1"), (4, T0, "g3")]
    # g1's second deadline waits for the next group (its first may move it); the order of
    # due times is kept, so g3's deadline after it waits too.
    assert deadline_group(due, None) == [(1, T0, "g1"), (2, T0, "g2")]
    # A message sent at or before a deadline goes first.
    assert deadline_group(due, T0) == []
    assert deadline_group([(1, T0, "g1"), (2, T0 + timedelta(seconds=2), "g2")],
                          T0 + timedelta(seconds=1)) == [(1, T0, "g1")]


def test_deadlines_due_together_fire_in_one_transaction(harness) -> None:  # type: ignore[no-untyped-def]
    games = [f"t{i}" for i in range(5)]
    tallies(harness, games)
    commits: list[int] = []
    event.listen(harness.dealer.engine, "commit", lambda _conn: commits.append(1))
    report = PassReport(now=CLOSE)
    harness.dealer.process_due(CLOSE, report)
    assert len(commits) == 1  # the five steps share one commit
    harness.dealer.deliver(report)
    # Each game's opening post (never delivered before) and its result.
    assert report.deadlines == 5 and report.ok and report.delivered == 10
    assert set(deadlines(harness).values()) == {("fired", None)}
    closed = harness.admin(lambda s: sorted(s.scalars(select(Event.game_id).where(Event.type == "tally.closed"))))
    assert closed == games


def test_a_deadline_that_crashes_in_a_group_fails_alone(harness, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    tallies(harness, ["t0", "t1", "t2"])
    original = tally.Tally.on_deadline

    def faulty(self, ctx, state, name):  # type: ignore[no-untyped-def]
        if ctx.game_id == "t1":
            ctx.ledger.move_up_to("player:a1", "player:b1", "chips", 1, "staged, then rolled back")
            raise KeyError("round")
        return original(self, ctx, state, name)

    monkeypatch.setattr(tally.Tally, "on_deadline", faulty)
    with caplog.at_level(logging.INFO):
        report = harness.run(CLOSE)
    assert report.deadlines == 2 and report.failed_deadlines == ["t1:close"]
    assert deadlines(harness) == {
        "t0": ("fired", None), "t1": ("pending", "KeyError: 'round'"), "t2": ("fired", None),
    }
    loud = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert len(loud) == 1 and "deadline close of game t1" in loud[0].getMessage()
    # Nothing of t1's step stayed: its savepoint was rolled back.
    assert harness.admin(lambda s: Q.balance(s, "player:a1", "chips")) == 10
    assert harness.admin(lambda s: s.scalars(select(Event.type).where(
        Event.game_id == "t1", Event.type == "deadline.fired")).all()) == []
    # Fixed, it fires on the next pass, once.
    monkeypatch.setattr(tally.Tally, "on_deadline", original)
    report = harness.run(CLOSE + timedelta(seconds=5))
    assert report.deadlines == 1 and report.ok
    assert deadlines(harness)["t1"] == ("fired", None)


# -- posts in batches ------------------------------------------------------------------


def queue(h, *where: tuple[str, str | None]) -> list[int]:  # type: ignore[no-untyped-def]
    def add(session):  # type: ignore[no-untyped-def]
        start = session.query(Post).count()
        rows = [Post(key=f"k{start + i}", game_id=None, channel=c, recipient=r, kind="note",
                     subject="s", body="b", created_at=T0, status="pending", attempts=0)
                for i, (c, r) in enumerate(where)]
        session.add_all(rows)
        session.flush()
        return [row.id for row in rows]
    return h.admin(add)


def test_a_claim_takes_every_destination_in_order_and_stops_behind_a_waiting_post(harness) -> None:  # type: ignore[no-untyped-def]
    ids = queue(harness, ("table", None), ("pm", "alice"), ("table", None), ("pm", "bob"),
                ("table", None), ("pm", "alice"), ("lobby", None), ("table", None))
    # The third post to the table waits for its backoff: the table's posts after it wait too.
    harness.admin(lambda s: s.execute(update(Post).where(Post.id == ids[4]).values(
        next_attempt_at=T0 + timedelta(minutes=5))))
    with harness.dealer.engine.begin() as connection:
        claim = Q.claim_posts(connection, T0, 50)
        assert [r.key for r in claim.posts] == ["k0", "k1", "k2", "k3", "k5", "k6"]
        assert claim.complete
        claim = Q.claim_posts(connection, T0, 3)
        assert [r.key for r in claim.posts] == ["k0", "k1", "k2"] and not claim.complete
    # Once its backoff is over, the waiting post goes, and the table's last one after it.
    with harness.dealer.engine.begin() as connection:
        later = Q.claim_posts(connection, T0 + timedelta(minutes=5), 50)
        assert [r.key for r in later.posts] == ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"]


def test_a_parked_post_holds_back_its_destination_only(harness) -> None:  # type: ignore[no-untyped-def]
    ids = queue(harness, ("pm", "alice"), ("pm", "bob"), ("pm", "alice"), ("pm", "bob"))
    harness.admin(lambda s: s.execute(update(Post).where(Post.id == ids[0]).values(status="failed")))
    with harness.dealer.engine.begin() as connection:
        assert [r.key for r in Q.claim_posts(connection, T0, 50).posts] == ["k1", "k3"]


def test_a_parked_public_channel_holds_back_its_own_posts_only(harness) -> None:  # type: ignore[no-untyped-def]
    # A public channel's recipient is NULL: its parked post holds back its channel, not the
    # PMs sent through a channel of that name nor another public channel; posts queued
    # before the parked one wait too.
    ids = queue(harness, ("table", None), ("table", "alice"), ("table", None), ("lobby", None),
                ("table", None), ("pm", "alice"))
    harness.admin(lambda s: s.execute(update(Post).where(Post.id == ids[2]).values(status="failed")))
    with harness.dealer.engine.begin() as connection:
        assert [r.key for r in Q.claim_posts(connection, T0, 50).posts] == ["k1", "k3", "k5"]


def _link(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("Alice", "Bob", "Carol"):
            add_player(session, name, T0)
        Q.link_account(session, "alice", "discord", "111", T0)
        Q.link_account(session, "alice", "email", "alice@example.org", T0)
        Q.link_account(session, "bob", "discord", "222", T0)
        Q.link_account(session, "carol", "discord", "333", T0)
    h.admin(setup)


def _mentioning(h, post_id: int, names: list[str]) -> None:  # type: ignore[no-untyped-def]
    h.admin(lambda s: s.execute(update(Post).where(Post.id == post_id).values(mentions=names)))


def _claim_counting(harness) -> tuple[Q.Claim, list[str]]:  # type: ignore[no-untyped-def]
    """A claim of up to 50 posts, and the first word of each statement it sent."""
    statements: list[str] = []
    listen = lambda _c, _cu, statement, *_a: statements.append(statement.split()[0])  # noqa: E731
    event.listen(harness.dealer.engine, "before_cursor_execute", listen)
    try:
        with harness.dealer.engine.begin() as connection:
            return Q.claim_posts(connection, T0, 50), statements
    finally:
        event.remove(harness.dealer.engine, "before_cursor_execute", listen)


def test_a_claim_reads_the_accounts_of_its_posts_players_with_them(harness) -> None:  # type: ignore[no-untyped-def]
    _link(harness)
    ids = queue(harness, ("pm", "ALICE"), ("table", None), ("pm", "dave"), ("lobby", None))
    _mentioning(harness, ids[1], ["Bob", "alice"])
    claim, statements = _claim_counting(harness)
    assert [r.key for r in claim.posts] == ["k0", "k1", "k2", "k3"]
    # By player key, each player's platforms; nobody else's (carol is named by no post),
    # nothing for a name no player has.
    assert claim.accounts == {
        "alice": {"discord": "111", "email": "alice@example.org"}, "bob": {"discord": "222"},
    }
    # On Postgres the page, its posts locked and their players' accounts in one statement
    # (each name as written or in lower case is the player's key: "ALICE", "Bob"); on
    # SQLite the page, then the accounts.
    postgres = harness.dealer.engine.dialect.name == "postgresql"
    assert [s for s in statements if s != "BEGIN"] == (["WITH"] if postgres else ["WITH", "SELECT"])
    # The publisher gets each post's own players' accounts.
    publisher = Recording()
    harness.dealer.publisher = publisher
    harness.dealer.deliver()
    assert publisher.accounts == {
        "k0": {"ALICE": {"discord": "111", "email": "alice@example.org"}},
        "k1": {"Bob": {"discord": "222"}, "alice": {"discord": "111", "email": "alice@example.org"}},
        "k2": {}, "k3": {},
    }


def test_a_claim_reads_apart_the_accounts_of_a_name_whose_key_the_page_did_not_look_up(harness) -> None:  # type: ignore[no-untyped-def]
    # "ZOË" is not ASCII: its key ("zoë", case folded) is neither the name as written nor
    # its lower case as the first page's statement takes it (Postgres), so the claim reads
    # its accounts with a statement of its own; the others' came with the page.
    _link(harness)

    def zoe(session):  # type: ignore[no-untyped-def]
        add_player(session, "Zoë", T0)
        Q.link_account(session, "zoë", "discord", "444", T0)
    harness.admin(zoe)
    queue(harness, ("pm", "ZOË"), ("pm", "Bob"))
    claim, statements = _claim_counting(harness)
    assert [r.key for r in claim.posts] == ["k0", "k1"]
    assert claim.accounts == {"zoë": {"discord": "444"}, "bob": {"discord": "222"}}
    assert [s for s in statements if s != "BEGIN"] == ["WITH", "SELECT"]


def test_a_claim_past_its_first_page_locks_and_reads_the_accounts_of_the_later_posts(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The first page holds only posts waiting behind the table's first (its backoff):
    # the posts the claim takes come from the next page (locked with a statement of their
    # own on Postgres), with their players' accounts.
    monkeypatch.setattr(delivery_queries, "CLAIM_WINDOW", 3)
    _link(harness)
    ids = queue(harness, *[("table", None)] * 3, ("pm", "alice"), ("table", None), ("pm", "Carol"))
    harness.admin(lambda s: s.execute(update(Post).where(Post.id == ids[0]).values(
        next_attempt_at=T0 + timedelta(minutes=5))))
    _mentioning(harness, ids[4], ["bob"])
    with harness.dealer.engine.begin() as connection:
        claim = Q.claim_posts(connection, T0, 2)
    assert [r.key for r in claim.posts] == ["k3", "k5"]
    assert claim.accounts == {"alice": {"discord": "111", "email": "alice@example.org"},
                              "carol": {"discord": "333"}}


def test_on_postgres_a_claim_locks_only_posts_it_may_take(harness, database_url) -> None:  # type: ignore[no-untyped-def]
    # The first page is read and its posts locked in one statement: the one post more
    # (which says whether another claim would find any) and a post waiting for its
    # backoff stay free for another daemon.
    if not database_url.startswith("postgresql"):
        pytest.skip("row locks are Postgres's (SQLite has one writer at a time)")
    ids = queue(harness, ("table", None), ("pm", "alice"), ("lobby", None), ("pm", "bob"))
    harness.admin(lambda s: s.execute(update(Post).where(Post.id == ids[1]).values(
        next_attempt_at=T0 + timedelta(minutes=5))))
    with harness.dealer.engine.begin() as connection:
        claim = Q.claim_posts(connection, T0, 2)
        assert [r.key for r in claim.posts] == ["k0", "k2"] and not claim.complete
        with harness.dealer.engine.connect() as other:
            free = []
            for post_id in ids:
                with other.begin():
                    free.append(other.execute(select(Post.id).where(Post.id == post_id)
                                              .with_for_update(skip_locked=True)).first() is not None)
    assert free == [False, True, False, True]


class Recording(Publisher):
    """Sends every post and keeps the accounts it was given for each."""

    def __init__(self) -> None:
        self.accounts: dict[str, dict[str, dict[str, str]]] = {}

    def send(self, post: OutgoingPost) -> str:
        self.accounts[post.key] = dict(post.accounts)
        return f"x:{post.id}"


def test_on_postgres_a_claim_whose_first_post_is_held_reads_the_accounts_on_their_own(harness, database_url) -> None:  # type: ignore[no-untyped-def]
    if not database_url.startswith("postgresql"):
        pytest.skip("a row lock held by another transaction is Postgres's (SQLite has one writer)")
    _link(harness)
    ids = queue(harness, ("pm", "alice"), ("pm", "bob"), ("pm", "alice"), ("table", None))
    _mentioning(harness, ids[3], ["carol"])
    other = harness.dealer.engine.connect()
    other.begin()
    # Another daemon's batch holds alice's first post, which the claim would carry the
    # accounts with.
    other.execute(select(Post.id).where(Post.id == ids[0]).with_for_update())
    try:
        with harness.dealer.engine.begin() as connection:
            claim = Q.claim_posts(connection, T0, 50)
        # Alice's posts wait behind the held one; the others go, with their accounts.
        assert [r.key for r in claim.posts] == ["k1", "k3"] and not claim.complete
        assert claim.accounts["bob"] == {"discord": "222"} and claim.accounts["carol"] == {"discord": "333"}
    finally:
        other.rollback()
        other.close()


def test_a_claim_with_no_post_waiting_reads_one_post_more_than_it_takes(harness) -> None:  # type: ignore[no-untyped-def]
    # Its first page is the batch and the post that says another claim would find one, not
    # a page of CLAIM_WINDOW posts (each converted as it is read, on SQLite).
    queue(harness, *[("table", None)] * 10)
    pages: list[int] = []

    def seen(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if " LIMIT " in statement:  # Postgres's claim runs on the driver's cursor (no context)
            pages.append(context.compiled_parameters[0]["n"] if context else parameters["n"])

    event.listen(harness.dealer.engine, "before_cursor_execute", seen)
    with harness.dealer.engine.begin() as connection:
        claim = Q.claim_posts(connection, T0, 3)
        assert [r.key for r in claim.posts] == ["k0", "k1", "k2"] and not claim.complete
        claim = Q.claim_posts(connection, T0, 10)
        assert len(claim.posts) == 10 and claim.complete
    assert pages == [4, 11]


def test_a_claim_reads_past_a_page_of_waiting_posts(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Two pages of posts waiting for their backoff come first; the claim still finds the
    # sendable posts behind them, and stops at its limit.
    monkeypatch.setattr(delivery_queries, "CLAIM_WINDOW", 3)
    ids = queue(harness, *[("table", None)] * 6, ("pm", "alice"), ("pm", "bob"), ("pm", "carol"))
    harness.admin(lambda s: s.execute(update(Post).where(Post.id == ids[0]).values(
        next_attempt_at=T0 + timedelta(minutes=5))))
    with harness.dealer.engine.begin() as connection:
        assert [r.key for r in Q.claim_posts(connection, T0, 50).posts] == ["k6", "k7", "k8"]
        claim = Q.claim_posts(connection, T0, 2)
        assert [r.key for r in claim.posts] == ["k6", "k7"] and not claim.complete


class Crashing(Publisher):
    """Sends ``survive`` posts, then the process "dies" in the middle of the batch."""

    def __init__(self, survive: int) -> None:
        self.survive = survive
        self.sent: list[str] = []

    def send(self, post: OutgoingPost) -> str:
        if len(self.sent) == self.survive:
            raise SystemExit("killed")  # not an Exception: nothing catches it, as a SIGKILL
        self.sent.append(post.key)
        return f"x:{post.id}"


def test_a_crash_in_a_batch_re_sends_at_most_that_batch_with_the_same_keys(harness) -> None:  # type: ignore[no-untyped-def]
    queue(harness, *[("table", None)] * 5, *[("pm", "alice")] * 2)
    crashing = Crashing(survive=3)
    harness.dealer.publisher = crashing
    with pytest.raises(SystemExit):
        harness.run(T0)
    assert crashing.sent == ["k0", "k1", "k2"]
    # The batch was rolled back: every post is still pending.
    statuses = harness.admin(lambda s: sorted({p.status for p in s.scalars(select(Post))}))
    assert statuses == ["pending"]
    # A process that lived on would remember its three sends and only mark them
    # (Dealer.unrecorded_sends); a new process after a kill remembers nothing.
    assert set(harness.dealer.unrecorded_sends) == {"k0", "k1", "k2"}
    harness.dealer.unrecorded_sends.clear()
    again = Crashing(survive=99)
    harness.dealer.publisher = again
    report = harness.run(T0)
    assert report.delivered == 7
    # Each destination in order; the three sent before the crash went again, same keys.
    assert [k for k in again.sent if k in {"k0", "k1", "k2", "k3", "k4"}] == ["k0", "k1", "k2", "k3", "k4"]
    assert [k for k in again.sent if k in {"k5", "k6"}] == ["k5", "k6"]


def test_a_batch_is_at_most_delivery_batch_posts(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(delivery, "DELIVERY_BATCH", 3)
    queue(harness, *[("table", None)] * 7)
    commits: list[int] = []
    event.listen(harness.dealer.engine, "commit", lambda _conn: commits.append(1))
    report = harness.dealer.deliver()
    assert report == 7
    # 3 + 3 + 1 posts; the last claim took every post left, so no claim follows it.
    assert len(commits) == 3


# -- one timer ---------------------------------------------------------------------------


def test_a_timer_that_fires_as_it_is_removed_is_no_error(harness) -> None:  # type: ignore[no-untyped-def]
    """The timer's job may fire, and so leave the scheduler, between sync_timers reading it
    and removing it: that is the wanted outcome, not an error for the loop to log and retry."""
    from apscheduler.schedulers.background import BackgroundScheduler

    tallies(harness, ["t0"])
    scheduler = BackgroundScheduler(timezone=timezone.utc)
    scheduler.start(paused=True)

    class FiresWhileRead:
        """The scheduler, with its timer firing (a date job then leaves) just after it is read."""

        def get_job(self, ident: str):  # type: ignore[no-untyped-def]
            job = scheduler.get_job(ident)
            if job is not None:
                scheduler.remove_job(ident)
            return job

    try:
        assert timers.sync_timers(scheduler, harness.dealer.reader, harness.dealer.wake, after=T0) == 1
        harness.run(CLOSE)
        assert timers.sync_timers(FiresWhileRead(), harness.dealer.reader, harness.dealer.wake, after=CLOSE) == 0
        assert scheduler.get_jobs() == []
    finally:
        scheduler.shutdown(wait=False)


def test_the_timer_costs_one_read_whatever_the_number_of_games(harness) -> None:  # type: ignore[no-untyped-def]
    from apscheduler.schedulers.background import BackgroundScheduler

    tallies(harness, [f"t{i}" for i in range(12)])
    statements: list[str] = []
    event.listen(harness.dealer.reader, "before_cursor_execute",
                 lambda _c, _cu, statement, *_a: statements.append(statement))
    scheduler = BackgroundScheduler(timezone=timezone.utc)
    scheduler.start(paused=True)
    try:
        assert timers.sync_timers(scheduler, harness.dealer.reader, harness.dealer.wake, after=T0) == 1
        assert [job.next_run_time for job in scheduler.get_jobs()] == [CLOSE]
        selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        assert len(selects) == 1 and "LIMIT" in selects[0].upper()
        # Nothing changed: the timer stays as it is.
        assert timers.sync_timers(scheduler, harness.dealer.reader, harness.dealer.wake, after=T0) == 1
        harness.run(CLOSE)
        assert timers.sync_timers(scheduler, harness.dealer.reader, harness.dealer.wake, after=CLOSE) == 0
        assert scheduler.get_jobs() == []
    finally:
        scheduler.shutdown(wait=False)


# -- a pass's fixed costs ----------------------------------------------------------------


def test_what_is_due_is_read_in_one_statement_each_earliest_first(harness) -> None:  # type: ignore[no-untyped-def]
    tallies(harness, ["t0", "t1", "t2"])
    # The deadlines' order: t1 earliest, then t0 and t2 at CLOSE (by id).
    harness.admin(lambda s: s.execute(update(Deadline).where(Deadline.game_id == "t1").values(
        due_at=CLOSE - timedelta(minutes=1))))
    for n, at in enumerate([CLOSE + timedelta(minutes=1), CLOSE - timedelta(minutes=30), CLOSE]):
        harness.send("a0", "add 1", at, game="t0", id=f"m{n}")
    harness.dealer.ingest(CLOSE + timedelta(minutes=2))
    external = harness.admin(lambda s: {r.id: r.external_id for r in s.scalars(select(Inbound))})
    games = harness.admin(lambda s: {d.id: d.game_id for d in s.scalars(select(Deadline))})
    statements: list[str] = []
    listen = lambda _c, _cu, statement, *_a: statements.append(statement)  # noqa: E731
    event.listen(harness.dealer.engine, "before_cursor_execute", listen)
    try:
        with harness.dealer.engine.connect() as connection:
            due = Q.due_now(connection, CLOSE, set(), set(), 10, 10)
            assert [s.split()[0] for s in statements if s.split()[0] != "BEGIN"] == ["SELECT"]
            assert [external[i] for i, _ in due.messages] == ["m1", "m2", "m0"]
            assert [games[i] for i, _, _ in due.deadlines] == ["t1", "t0", "t2"]
            assert due.deadlines[0][1:] == (CLOSE - timedelta(minutes=1), "t1")
            # Only what is due by then: t1's deadline alone a minute before CLOSE.
            early = Q.due_now(connection, CLOSE - timedelta(minutes=1), set(), set(), 10, 10)
            assert [games[i] for i, _, _ in early.deadlines] == ["t1"]
            # Skipped ones are left out and each limit still counts what is left.
            first_message, first_deadline = due.messages[0][0], due.deadlines[0][0]
            skipping = Q.due_now(connection, CLOSE, {first_message}, {first_deadline}, 1, 1)
            assert [external[i] for i, _ in skipping.messages] == ["m2"]
            assert [games[i] for i, _, _ in skipping.deadlines] == ["t0"]
    finally:
        event.remove(harness.dealer.engine, "before_cursor_execute", listen)


def test_unchanged_overrides_are_not_applied_to_the_store_again(make_harness) -> None:  # type: ignore[no-untyped-def]
    h = make_harness(deadline_overrides="t1=+1h")
    tallies(h, ["t1"])
    begins: list[int] = []
    event.listen(h.dealer.engine, "begin", lambda _conn: begins.append(1))
    assert h.dealer.apply_overrides(T0) == ["t1: close 2026-12-01T11:00:00Z -> 2026-12-01T12:00:00Z"]
    assert len(begins) == 1
    assert h.dealer.apply_overrides(T0 + timedelta(seconds=1)) == []
    assert len(begins) == 1  # read the same: no transaction
    h.dealer.settings = h.settings.model_copy(update={"deadline_overrides": "t1=+2h"})
    assert h.dealer.apply_overrides(T0 + timedelta(seconds=2))  # a new override: applied
    assert len(begins) == 2
    # After OVERRIDES_RECHECK seconds the store is read again, and found in line.
    h.dealer.overrides_in_store = (h.dealer.overrides_in_store[0], -passes.OVERRIDES_RECHECK)
    assert h.dealer.apply_overrides(T0 + timedelta(seconds=3)) == []
    assert len(begins) == 3


def test_parked_posts_are_counted_when_the_count_may_have_changed(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    counts: list[int] = []
    real = Q.count_parked

    def count(connection):  # type: ignore[no-untyped-def]
        counts.append(1)
        return real(connection)

    monkeypatch.setattr(Q, "count_parked", count)
    refusing = Refusing()
    harness.dealer.publisher = refusing
    harness.dealer.settings = harness.settings.model_copy(update={"publish_retries": 1, "publish_park_after": 0})
    assert harness.run(T0).parked == 0 and len(counts) == 1  # a new daemon counts once
    assert harness.run(T0).parked == 0 and len(counts) == 1  # nothing parked since
    queue(harness, ("table", None))
    assert harness.run(T0).parked == 1 and len(counts) == 2  # this pass parked one
    assert harness.run(T0).parked == 1 and len(counts) == 3  # counted while any is parked
    harness.admin(lambda s: delivery.retry_posts(s, None))
    refusing.refuse = False
    assert harness.run(T0).parked == 0 and len(counts) == 4
    assert harness.run(T0).parked == 0 and len(counts) == 4
    harness.dealer.parked_checked -= passes.PARKED_RECHECK  # a minute later: counted again
    harness.run(T0)
    assert len(counts) == 5


class Refusing(Publisher):
    """Refuses every post while ``refuse`` is set."""

    refuse = True

    def send(self, post: OutgoingPost) -> str:
        if self.refuse:
            raise DeliveryFailed("the transport is down")
        return post.key


def test_a_settled_group_of_messages_ends_the_pass_without_reading_again(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tallies(harness, ["t1"])
    reads: list[int] = []
    real = Q.due_now

    def pending(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(Q, "due_now", pending)
    for n in range(3):
        harness.send("a0", "add 1", T0 + timedelta(minutes=n), game="t1")
    report = harness.run(T0 + timedelta(minutes=5))
    assert report.messages == 3 and len(reads) == 1
    # A group cut short by its limit is followed by another read, which finds the last
    # message: its group settles the pass.
    monkeypatch.setattr(passes, "MESSAGE_GROUP", 2)
    for n in range(3):
        harness.send("a0", "add 1", T0 + timedelta(minutes=10 + n), game="t1")
    report = harness.run(T0 + timedelta(minutes=15))
    assert report.messages == 3 and len(reads) == 1 + 2


def test_a_pass_with_nothing_to_do_costs_the_same_whatever_the_number_of_games(harness) -> None:  # type: ignore[no-untyped-def]
    def idle_statements(at: datetime) -> list[str]:
        harness.run(at)  # a first pass: the overrides and the parked posts are read then
        statements: list[str] = []
        listen = lambda _c, _cu, statement, *_a: statements.append(" ".join(statement.split()))  # noqa: E731
        engine, reader = harness.dealer.engine, harness.dealer.reader
        # On Postgres the reader is the engine's pool in autocommit: its events are the engine's.
        engines = [engine] if reader.pool is engine.pool else [engine, reader]
        for engine in engines:
            event.listen(engine, "before_cursor_execute", listen)
        report = harness.run(at + timedelta(seconds=1))
        for engine in engines:
            event.remove(engine, "before_cursor_execute", listen)
        assert (report.messages, report.deadlines, report.delivered) == (0, 0, 0)
        return statements

    tallies(harness, ["t0", "t1"])
    few = idle_statements(T0)
    tallies(harness, [f"t{i}" for i in range(2, 40)], first=2)
    many = idle_statements(T0 + timedelta(minutes=1))
    assert few == many
    # Two reads, each bounded by a LIMIT, not the games' rows: what is due (messages and
    # deadlines together) and the outbox's first page (the parked posts read with it).
    selects = [s for s in few if s.startswith(("SELECT", "WITH"))]
    assert len(selects) == 2, few
    assert all(" LIMIT " in s for s in selects), selects


def test_a_claim_that_fills_up_at_the_end_of_a_page_is_not_complete(harness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(delivery_queries, "CLAIM_WINDOW", 2)
    queue(harness, *[("table", None)] * 3)
    with harness.dealer.engine.begin() as connection:
        claim = Q.claim_posts(connection, T0, 2)
        assert [r.key for r in claim.posts] == ["k0", "k1"] and not claim.complete
        claim = Q.claim_posts(connection, T0, 3)
        assert [r.key for r in claim.posts] == ["k0", "k1", "k2"]
