"""The Gilded Hall through the daemon: joins, purchases, packs, gifts and phase seeds,
with every draw verifiable once its phase's seed is revealed (GH-40)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select

from dealer.registry import add_player, create_game, game_view, grant, player_view
from dealer.store.models import Draw, Holding
from dealer.verify import verify_game

T0 = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)


def test_a_hall_cycle_through_the_daemon(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, vertebrae=60, chips=20)
        add_player(session, "bob", T0, vertebrae=10)
        create_game(session, "hall", "h1", T0)
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "join\nbuy deck pack\nopen deck pack", at, channel="#game-actions")
    harness.send("bob", "join", at + timedelta(minutes=1), channel="#game-actions")
    harness.send("alice", "gift bob", at + timedelta(minutes=2), channel="#game-actions")
    harness.send("bob", "seed bob was here", at + timedelta(minutes=3))
    harness.run(at + timedelta(minutes=5))

    alice = harness.admin(lambda s: player_view(s, "alice"))
    bob = harness.admin(lambda s: player_view(s, "bob"))
    # alice paid 18 vertebrae for the Deck Pack (GH-5) and opened it: 5 cards (GH-4).
    assert alice["vertebrae"] == 42 and len(alice["cards"]) == 5 and alice["packs"] == {}
    # bob was active (he joined this phase) and had fewer than 5 cards: 1 + 1 cards (GH-7).
    assert len(bob["cards"]) == 2
    view = harness.admin(lambda s: game_view(s, "h1"))
    assert sorted(view["players"]) == ["alice", "bob"]
    assert view["seeds"][0]["client_seeds"] == ["bob: bob was here"]
    # One reply per message: join, purchase and pack opened in the first; gift sent.
    replies = harness.pms("alice")
    assert [p["kind"] for p in replies] == ["confirmation", "confirmation"]
    assert replies[0]["body"].count("\naccepted:\n") == 3
    assert "> gift bob\naccepted:" in replies[1]["body"]
    # What the rules tell another player stays its own message: bob's gift notice.
    assert [p["kind"] for p in harness.pms("bob")] == ["confirmation", "notice", "seed_added"]

    # Phase 1 ends: its seed is revealed and phase 2's commitment published.
    harness.run(T0 + DAY + timedelta(minutes=1))
    view = harness.admin(lambda s: game_view(s, "h1"))
    assert view["seeds"][0]["server_seed"] is not None
    assert view["seeds"][1]["server_seed"] is None
    phase_post = [p for p in harness.public() if view["seeds"][0]["server_seed"] in p["body"]]
    assert phase_post and view["seeds"][1]["commitment"] in phase_post[0]["body"]
    report = harness.admin(lambda s: verify_game(s, "h1"))
    draws = harness.admin(lambda s: s.scalar(select(func.count()).select_from(Draw)))
    assert report.ok and report.checked == draws > 0 and report.unrevealed == [1]

    # Victory at 25 chips (GH-8) closes the cycle and reveals the running phase's seed.
    harness.admin(lambda s: grant(s, "alice", "chips", 5, T0 + DAY))
    harness.send("alice", "buy random card", T0 + DAY + timedelta(hours=1), channel="#game-actions")
    harness.run(T0 + DAY + timedelta(hours=2))
    view = harness.admin(lambda s: game_view(s, "h1"))
    assert view["status"] == "finished" and view["winner"] == "alice"
    assert harness.admin(lambda s: verify_game(s, "h1")).unrevealed == []
    totals = harness.admin(
        lambda s: dict(s.execute(select(Holding.item, func.sum(Holding.amount)).group_by(Holding.item)).all())
    )
    assert set(totals.values()) == {0}
