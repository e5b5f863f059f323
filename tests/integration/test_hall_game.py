"""The Gilded Hall through the daemon: joins, purchases, packs, gifts and phase seeds,
with every draw verifiable once its phase's seed is revealed (GH-40)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select

from dealer.shell.admin import add_player, create_game, grant

from dealer.views import game_view, player_view
from dealer.store.models import Draw, Holding, LedgerEntry
from dealer.verify import verify_game

T0 = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)


def test_a_hall_cycle_through_the_daemon(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        # Wallets: alice won 30 chips at roulette; they are no part of the cycle (GH-1).
        add_player(session, "alice", T0, vertebrae=5, chips=30)
        add_player(session, "bob", T0, vertebrae=10)
        create_game(session, "hall", "h1", T0, settings={"starting_vertebrae": "60"})
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "join\nbuy deck pack\nopen deck pack", at, channel="#game-actions")
    harness.send("bob", "join", at + timedelta(minutes=1), channel="#game-actions")
    harness.send("alice", "gift bob", at + timedelta(minutes=2), channel="#game-actions")
    harness.send("bob", "seed bob was here", at + timedelta(minutes=3))
    harness.run(at + timedelta(minutes=5))

    alice = harness.admin(lambda s: player_view(s, "alice", "h1"))
    bob = harness.admin(lambda s: player_view(s, "bob", "h1"))
    # alice started with 60 vertebrae, paid 18 for the Deck Pack (GH-5) and opened it: 5 cards
    # (GH-4); her 30 wallet chips did not win the cycle when she joined.
    assert alice["vertebrae"] == 60 - 18 and len(alice["cards"]) == 5 and alice["packs"] == {}
    assert alice["chips"] == 0
    # bob was active (he joined this phase) and had fewer than 5 cards: 1 + 1 cards (GH-7).
    assert len(bob["cards"]) == 2 and bob["vertebrae"] == 60
    wallet = harness.admin(lambda s: player_view(s, "alice"))
    assert (wallet["chips"], wallet["vertebrae"], wallet["cards"]) == (30, 5, [])
    view = harness.admin(lambda s: game_view(s, "h1"))
    assert view["status"] == "running" and sorted(view["players"]) == ["alice", "bob"]
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

    # A grant into the wallet changes nothing in the cycle; one into the cycle does, and
    # victory at 25 chips (GH-8) closes the cycle at once and reveals the running phase's seed.
    harness.admin(lambda s: grant(s, "alice", "chips", 25, T0 + DAY))
    assert harness.admin(lambda s: game_view(s, "h1"))["status"] == "running"
    assert harness.admin(lambda s: grant(s, "alice", "chips", 24, T0 + DAY, "h1")) == ("chips", 24)
    assert harness.admin(lambda s: game_view(s, "h1"))["status"] == "running"
    harness.admin(lambda s: grant(s, "alice", "chips", 1, T0 + DAY + timedelta(hours=1), "h1"))
    view = harness.admin(lambda s: game_view(s, "h1"))
    assert view["status"] == "finished" and view["winner"] == "alice"
    assert view["scores"] == {"alice": 25, "bob": 0}
    harness.run(T0 + DAY + timedelta(hours=2))
    (victory,) = [p for p in harness.public() if p["kind"] == "victory"]
    assert "The host granted alice 24 chips (GH-1)." in victory["body"]
    assert harness.admin(lambda s: verify_game(s, "h1")).unrevealed == []
    totals = harness.admin(
        lambda s: dict(s.execute(select(Holding.item, func.sum(Holding.amount)).group_by(Holding.item)).all())
    )
    assert set(totals.values()) == {0}
    # Every account the cycle used lives in its scope (h1/...); the wallets are apart.
    accounts = harness.admin(lambda s: set(s.scalars(select(Holding.account))))
    assert accounts - {"mint", "player:alice", "player:bob"} == {
        "h1/player:alice", "h1/player:bob", "h1/house", "h1/void"}
    entries = harness.admin(lambda s: s.execute(
        select(LedgerEntry.game_id, LedgerEntry.source, LedgerEntry.target)).all())
    assert all(game == "h1" for game, source, target in entries if "h1/" in source + target)


def test_posts_after_a_refused_purchase_and_a_failed_acceptance(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0)
        create_game(session, "hall", "h1", T0, players=["alice", "bob", "carol"],
                    settings={"starting_vertebrae": "24"})
        grant(session, "bob", "AS", 1, T0, "h1")
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "buy chip", at)  # 25 > 24 vertebrae
    harness.send("bob", "offer AS to carol for nothing\noffer AS to alice for nothing", at)
    harness.send("alice", "accept offer 2", at + timedelta(minutes=1))
    harness.send("carol", "accept offer 1", at + timedelta(minutes=2))  # bob's Ace is gone
    harness.run(at + timedelta(minutes=5))

    (refusal,) = [p for p in harness.pms("alice") if p["kind"] == "error"]
    assert ("What you can send now in game h1:\n- buy random card — 5 vertebrae (GH-5)\n"
            "- buy handy pack — 12 vertebrae (GH-5)\n- buy deck pack — 18 vertebrae (GH-5)\n"
            "- (with 24 vertebrae you cannot buy: legendary pack (50), chip (25))\n"
            ) in refusal["body"]
    failed = harness.pms("carol")[-1]
    assert failed["kind"] == "notice" and "could not be completed when you accepted it: bob " \
        "does not hold Ace of Spades (it has 0)" in failed["body"]
    assert harness.admin(lambda s: game_view(s, "h1"))["detail"]["open_offers"] == []

    harness.run(T0 + DAY)
    summary = harness.public()[-1]["body"]
    assert "- Offer 1 from bob to carol (Ace of Spades for nothing) failed when carol accepted it" \
        in summary
    assert "lapsed unanswered" not in summary
