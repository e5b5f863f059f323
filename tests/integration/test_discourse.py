"""Discourse in and out against a local fake of its API (served over HTTP) and real signed
webhook deliveries of the documented shape.

The game is the test ruleset ``board`` (tests/integration/board.py): a whole message in
``#motions`` is a motion; edits, deletions and 👍 reactions reach it, as a Hall proposal's
do.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from fake_discourse import API_KEY, BOT, FakeDiscourse, Served  # noqa: E402

from dealer.inbox.discourse import message_from_event, signature  # noqa: E402
from dealer.publish.base import DeliveryFailed, OutgoingPost  # noqa: E402
from dealer.publish.discourse import DiscoursePublisher  # noqa: E402
from dealer.settings import Settings  # noqa: E402
from dealer.shell.admin import AdminError, add_player, create_game, link_account  # noqa: E402
from dealer.shell.discourse import DiscourseHooks, catch_up, discourse_routes  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402
from dealer.shell.webhooks import create_app, webhook_routes  # noqa: E402
from dealer.store.models import Inbound, Post  # noqa: E402
from dealer.views import game_state  # noqa: E402
from dealer.store.models import Game  # noqa: E402
from dealer.store.queries import first_messages  # noqa: E402

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
SECRET = "discourse-webhook-secret"


class Site:
    """The fake Discourse served over HTTP, dealer on it, and dealer's webhook endpoint."""

    def __init__(self, database_url: str, root: Path, channels: tuple[str, ...] = ("#board", "#motions")) -> None:
        self.fake = FakeDiscourse(SECRET, T0)
        for name in ("alice", "bob", "carol"):
            self.fake.user(name)
        self.topics = {channel: self.fake.topic(channel.strip("#").title()) for channel in channels}
        self.board_topic = self.topics.get("#board", 0)
        self.motions_topic = self.topics.get("#motions", 0)
        self.served = Served(self.fake.app())
        self.publisher = DiscoursePublisher(self.served.url, API_KEY, BOT, topics=self.topics)
        settings = Settings(home=str(root), database_url=database_url, _env_file=None,
                            inbox=f"dir:{root / 'inbox'}")
        self.dealer = Dealer(settings, publisher=self.publisher)
        self.now = T0
        self.hooks = DiscourseHooks(self.dealer.engine, SECRET, {v: k for k, v in self.topics.items()}, BOT,
                                    clock=lambda: self.now)
        self.client = TestClient(create_app(webhook_routes(None, discourse_routes(self.hooks))))

    def deliver(self, delivery: tuple[dict[str, str], bytes]):  # type: ignore[no-untyped-def]
        headers, body = delivery
        return self.client.post("/discourse", content=body, headers=headers)

    def at(self, minutes: float) -> datetime:
        self.now = self.fake.now = T0 + timedelta(minutes=minutes)
        return self.now

    def run(self, minutes: float):  # type: ignore[no-untyped-def]
        return self.dealer.run_pass(self.at(minutes))

    def board(self):  # type: ignore[no-untyped-def]
        with self.dealer.sessions.begin() as session:
            return game_state(session.get(Game, "b1"))[1]

    def close(self) -> None:
        self.publisher.close()
        self.served.stop()
        self.dealer.engine.dispose()


@pytest.fixture
def site(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    made = Site(database_url, tmp_path)
    with made.dealer.sessions.begin() as session:
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0, chips=10)
        create_game(session, "board", "b1", T0, players=["alice", "bob"])
    yield made
    made.close()


def bot_posts(site: Site, topic: int) -> list[dict]:  # type: ignore[type-arg]
    return [p for p in site.fake.posts.values() if p["username"] == BOT and p["topic_id"] == topic]


def test_a_motion_posted_edited_liked_and_deleted_on_discourse(site: Site) -> None:
    site.run(1)  # the opening post goes out to the board's topic
    [opening] = bot_posts(site, site.board_topic)
    post_id, created = site.fake.player_posts("alice", site.motions_topic, "Let the dice be fair")
    site.at(2)
    answer = site.deliver(created)
    assert answer.status_code == 200 and answer.json() == {"stored": "new", "id": f"post/{post_id}"}
    site.run(3)
    motion = site.board().motions[f"post/{post_id}"]
    assert (motion.author, motion.text, motion.votes) == ("alice", "Let the dice be fair", [])
    # dealer announced it in the board's topic, through the API.
    assert [p["raw"].split("\n")[-1] for p in bot_posts(site, site.board_topic)][-1] == "alice moves: Let the dice be fair"

    # bob likes the motion: a 👍 vote. alice edits it: the motion follows the edit.
    site.at(4)
    assert site.deliver(site.fake.player_likes("bob", post_id)).json()["stored"] == "new"
    site.at(5)
    assert site.deliver(site.fake.player_edits(post_id, "Let the dice be fairer")).json()["stored"] == "new"
    # bob likes dealer's own opening post: the reaction finds the game that posted it.
    assert site.deliver(site.fake.player_likes("bob", opening["id"])).json()["stored"] == "new"
    site.run(6)
    board = site.board()
    motion = board.motions[f"post/{post_id}"]
    assert (motion.text, motion.votes) == ("Let the dice be fairer", ["bob"])
    assert board.acks == ["bob"]
    site.at(7)
    site.deliver(site.fake.player_deletes(post_id))
    site.run(8)
    assert site.board().motions[f"post/{post_id}"].withdrawn
    with site.dealer.sessions.begin() as session:
        statuses = {r.external_id: r.status for r in session.query(Inbound).filter(Inbound.source == "discourse")}
    assert set(statuses.values()) == {"applied"}
    assert len(statuses) == 5


def test_webhook_signatures_duplicates_and_what_is_not_a_message(site: Site) -> None:
    post_id, created = site.fake.player_posts("alice", site.motions_topic, "A motion")
    headers, body = created
    forged = site.client.post("/discourse", content=body, headers={**headers, "X-Discourse-Event-Signature": signature("wrong", body)})
    assert forged.status_code == 401
    altered = site.client.post("/discourse", content=body.replace(b"A motion", b"A notion"), headers=headers)
    assert altered.status_code == 401
    unsigned = site.client.post("/discourse", content=body, headers={"X-Discourse-Event": "post_created"})
    assert unsigned.status_code == 401
    assert site.deliver(created).json()["stored"] == "new"
    # Discourse redelivers the same event: stored once.
    assert site.deliver(created).json()["stored"] == "duplicate"
    # A post in a topic no channel is mapped to, dealer's own post, a ping: nothing stored.
    elsewhere = site.fake.topic("Off topic")
    assert "ignored" in site.deliver(site.fake.player_posts("bob", elsewhere, "hi")[1]).json()
    assert "ignored" in site.deliver(site.fake.player_posts(BOT, site.motions_topic, "dealer says")[1]).json()
    headers, body = site.fake._delivery("ping", "ping", {"ping": "OK"})
    assert site.client.post("/discourse", content=body, headers=headers).json() == {"pong": True}
    bad = site.fake._delivery("post_created", "post", {"nothing": 1})
    assert site.deliver(bad).status_code == 400
    with site.dealer.sessions.begin() as session:
        assert [r.external_id for r in session.query(Inbound)] == [f"post/{post_id}"]


def test_a_pm_on_discourse_is_answered_in_its_own_topic(site: Site) -> None:
    pm = site.fake.topic("duel?", "private_message", ("bob", BOT))
    post_id, created = site.fake.player_posts("bob", pm, "duel alice")
    site.at(1)
    assert site.deliver(created).json()["stored"] == "new"
    site.run(2)
    [reply] = bot_posts(site, pm)
    assert reply["reply_to_post_number"] == site.fake.posts[post_id]["post_number"]
    assert "> duel alice" in reply["raw"]
    assert site.board().duels == 1


def test_a_linked_discourse_account_is_its_player_and_a_namesake_of_a_linked_player_is_not(site: Site) -> None:
    """Interpretation (docs/DISCOURSE.md): ``dealer player link bob discourse:Bobby`` makes
    the Discourse user Bobby player bob; a Discourse user linked to nobody is the player of
    their name (alice), unless that player linked another Discourse account: then the
    namesake (a Discourse user called bob) is nobody, told once how to be added."""
    with site.dealer.sessions.begin() as session:
        assert link_account(session, "bob", "discourse:Bobby", T0) == ("bob", "discourse:bobby")
        with pytest.raises(AdminError, match="not a Discourse username"):
            link_account(session, "carol", "discourse:carol smith", T0)
    site.at(1)
    motion_id, created = site.fake.player_posts("Bobby", site.motions_topic, "Bobby's motion")
    assert site.deliver(created).json()["stored"] == "new"
    site.at(2)
    alice_id, created = site.fake.player_posts("alice", site.motions_topic, "Alice's motion")
    assert site.deliver(created).json()["stored"] == "new"
    namesake = [site.fake.player_posts("bob", site.motions_topic, f"Not bob's motion {n}") for n in (1, 2)]
    for n, (_, created) in enumerate(namesake):
        site.at(3 + n)
        assert site.deliver(created).json()["stored"] == "new"
    site.run(5)

    motions = site.board().motions
    assert motions[f"post/{motion_id}"].author == "bob"
    assert motions[f"post/{alice_id}"].author == "alice"
    assert all(f"post/{post_id}" not in motions for post_id, _ in namesake)
    with site.dealer.sessions.begin() as session:
        statuses = {r.sender: r.status for r in session.query(Inbound).filter(Inbound.source == "discourse")}
        assert statuses == {"discourse:bobby": "applied", "discourse:alice": "applied", "discourse:bob": "rejected"}
        # An election counts each player's first message, whichever account sent it.
        assert first_messages(session, "b1", T0, T0 + timedelta(hours=1)) == {
            "bob": T0 + timedelta(minutes=1), "alice": T0 + timedelta(minutes=2)}
    # The namesake was told once, by a PM to their own Discourse user, how to be added.
    told = [p for p in site.fake.posts.values()
            if p["username"] == BOT and site.fake.topics[p["topic_id"]]["archetype"] == "private_message"]
    assert len(told) == 1
    assert site.fake.topics[told[0]["topic_id"]]["recipients"] == ("bob",)
    assert "dealer player link NAME discourse:bob" in told[0]["raw"]
    assert "join" not in told[0]["raw"]  # a join command registers Discord accounts only


def test_a_private_post_goes_to_the_linked_discourse_user() -> None:
    publisher = DiscoursePublisher("http://forum.example", API_KEY, BOT, client=object())

    def pm(recipient: str, accounts: dict[str, dict[str, str]] | None = None) -> OutgoingPost:
        return OutgoingPost(id=1, key="k", channel="pm", recipient=recipient, game=None, kind="duel_result",
                            subject="Your duel", body="You won.", created_at=T0, accounts=accounts or {})

    linked = pm("bob", {"bob": {"discourse": "bobby", "discord": "80351110224678912"}})
    assert publisher.payload(linked)["target_recipients"] == "bobby"
    assert publisher.payload(pm("alice"))["target_recipients"] == "alice"
    assert publisher.payload(pm("discourse:dora_w"))["target_recipients"] == "dora_w"


def test_the_catch_up_stores_posts_made_while_dealer_was_down(site: Site) -> None:
    first, created = site.fake.player_posts("alice", site.motions_topic, "First motion")
    site.deliver(created)
    # dealer is down: three posts are made, their webhooks never arrive.
    site.fake.page_size = 2
    missed = [site.fake.player_posts(name, site.motions_topic, f"Motion of {name}")[0]
              for name in ("bob", "alice", "bob")]
    site.fake.player_posts("carol", site.fake.topic("Elsewhere"), "not a game topic")
    new = catch_up(site.dealer.engine, site.publisher, {v: k for k, v in site.topics.items()}, BOT, site.at(30))
    assert new == 3
    assert catch_up(site.dealer.engine, site.publisher, {v: k for k, v in site.topics.items()}, BOT, site.at(31)) == 0
    site.run(32)
    assert sorted(site.board().motions) == sorted(f"post/{i}" for i in [first, *missed])


def test_the_rate_limit_is_honoured(site: Site) -> None:
    site.fake.rate_limited = 1
    post = OutgoingPost(1, "k1", "#board", None, "b1", "notice", "Hello", "hello there", T0)
    with pytest.raises(DeliveryFailed) as refused:
        site.publisher.send(post)
    assert refused.value.retry_after == 7
    assert site.publisher.send(post).startswith("post/")
    # Through the daemon: the refused post waits at least the 7 s Discourse asked for.
    site.fake.rate_limited = 1
    site.run(1)
    with site.dealer.sessions.begin() as session:
        [waiting] = session.query(Post).filter(Post.status == "pending").all()
        assert waiting.next_attempt_at >= site.now + timedelta(seconds=7)
    site.dealer.run_pass(site.now + timedelta(seconds=8))
    with site.dealer.sessions.begin() as session:
        assert session.query(Post).filter(Post.status == "pending").count() == 0


def test_a_wrong_key_and_an_unknown_topic_are_failed_attempts(site: Site) -> None:
    wrong = DiscoursePublisher(site.served.url, "not-the-key", BOT, topics=site.topics)
    post = OutgoingPost(1, "k1", "#board", None, "b1", "notice", "Hello", "hello there", T0)
    with pytest.raises(DeliveryFailed, match="403"):
        wrong.send(post)
    wrong.close()
    with pytest.raises(DeliveryFailed, match="no Discourse topic for #elsewhere"):
        site.publisher.send(OutgoingPost(2, "k2", "#elsewhere", None, None, "notice", "", "x", T0))


def test_post_events_read_by_hand() -> None:
    payload = {"post": {"id": 7, "username": "Alice", "raw": "hello", "topic_id": 3, "topic_archetype": "regular",
                        "created_at": "2026-12-01T10:00:00.000Z", "updated_at": "2026-12-01T10:05:00.000Z",
                        "deleted_at": None}}
    message = message_from_event("post_created", payload, {3: "#motions"}, BOT, T0)
    assert message is not None
    assert (message.id, message.sender, message.channel, message.body, message.sent_at) == (
        "post/7", "discourse:alice", "#motions", "hello", T0)
    edit = message_from_event("post_edited", payload, {3: "#motions"}, BOT, T0)
    assert edit is not None and (edit.id, edit.kind, edit.target) == (
        "post/7/edit/2026-12-01T10:05:00.000Z", "edit", "post/7")
    assert message_from_event("topic_created", {"topic": {}}, {3: "#motions"}, BOT, T0) is None
    assert json.loads(message.model_dump_json())["kind"] == "message"


HOUR = 60
DAY = 24 * HOUR


def test_a_hall_proposal_on_discourse_is_void_once_edited(database_url: str, tmp_path: Path) -> None:
    """GH-20..GH-22 through Discourse: a proposal posted in the #proposals topic, liked (a 👍
    vote) and then edited by its author during its period is void at its tally, popular as it
    was."""
    site = Site(database_url, tmp_path, ("#game-actions", "#proposals"))
    try:
        with site.dealer.sessions.begin() as session:
            for name in ("alice", "bob"):
                add_player(session, name, T0)
            create_game(session, "hall", "h1", T0)
        from dealer.views import game_view
        for minute, name in ((10, "alice"), (11, "bob")):
            site.at(minute)
            site.deliver(site.fake.player_posts(name, site.topics["#game-actions"], "join")[1])
        site.run(12)
        site.at(HOUR)
        proposal_id, created = site.fake.player_posts("alice", site.topics["#proposals"], "Members pay no fee")
        assert site.deliver(created).json()["stored"] == "new"
        site.run(HOUR + 1)
        site.at(DAY + HOUR)  # the proposal's period: the phase after the one it was made in
        assert site.deliver(site.fake.player_likes("bob", proposal_id)).json()["stored"] == "new"
        site.run(DAY + HOUR + 1)
        site.at(DAY + 2 * HOUR)
        assert site.deliver(site.fake.player_edits(proposal_id, "Members pay no fee at all")).json()["stored"] == "new"
        site.run(DAY + 2 * HOUR + 1)
        site.run(2 * DAY + HOUR)  # past the period's end and the vote's grace: tallied
        with site.dealer.sessions.begin() as session:
            proposals = game_view(session, "h1")["proposals"]
        assert [(p["number"], p["status"], p["for"], p["against"]) for p in proposals] == [(1, "void", 1, 0)]
        with site.dealer.sessions.begin() as session:
            statuses = [r.status for r in session.query(Inbound).filter(Inbound.source == "discourse")]
        assert statuses == ["applied"] * 5
    finally:
        site.close()
