"""Off to the Races through the daemon: commands in the public channel, the betting window
closing through the scheduler's deadline, a race run to the end, and every draw verified."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select

from dealer.shell.admin import add_player, create_game, grant

from dealer.views import game_view, player_view
from dealer.store.models import Holding
from dealer.verify import verify_game

T0 = datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)
RACEWAY = "#the-raceway"


def test_a_table_from_sitting_to_payout(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=50)
        add_player(session, "bob", T0, chips=50)
        add_player(session, "carol", T0, chips=50)
        grant(session, "alice", "king of spades", 1, T0)
        grant(session, "bob", "7H", 1, T0)
        create_game(session, "races", "derby", T0)
    harness.admin(setup)
    at = T0 + timedelta(minutes=1)
    # Seating closes as soon as everyone seated has a horse and is ready (OR-3): alice
    # says ready only after bob has sat down.
    harness.send("alice", "sit\nhorse @everyone Hooves card KS", at, channel=RACEWAY)
    harness.send("bob", "sit\nhorse Red Rum card 7h\nready", at + timedelta(seconds=30), channel=RACEWAY)
    harness.send("alice", "ready", at + timedelta(minutes=1), channel=RACEWAY)
    harness.send("carol", "what a nice day for a race", at + timedelta(minutes=2), channel=RACEWAY)
    harness.run(at + timedelta(minutes=3))
    view = harness.admin(lambda s: game_view(s, "derby"))
    assert view["deadlines"][0]["name"] == "betting"

    # carol bets without sitting (OR-5); her chips leave the wallet at once.
    harness.send("carol", "bet 20 on Red Rum", at + timedelta(minutes=4), channel=RACEWAY)
    harness.send("alice", "bet 10 on @everyone hooves", at + timedelta(minutes=5), channel=RACEWAY)
    harness.run(at + timedelta(minutes=6))
    assert harness.admin(lambda s: player_view(s, "carol"))["chips"] == 30
    # bob never bets or passes: betting closes an hour after the last bet (OR-5).
    harness.run(at + timedelta(minutes=5) + timedelta(hours=1))
    closed = [p for p in harness.public() if p["kind"] == "betting_closed"]
    assert len(closed) == 1 and "30" in closed[0]["body"]  # the pool: 20 + 10; house floor(3) = 3

    # Race to the end: alice and bob take turns; a Lap is done whenever one is owed.
    t = at + timedelta(hours=2)
    for _ in range(200):
        if harness.admin(lambda s: game_view(s, "derby"))["status"] == "finished":
            break
        t += timedelta(minutes=1)
        harness.send("alice", "race", t, channel=RACEWAY)
        harness.send("alice", "lap", t + timedelta(seconds=30), channel=RACEWAY)
        harness.run(t + timedelta(seconds=40))
    view = harness.admin(lambda s: game_view(s, "derby"))
    assert view["status"] == "finished"
    assert harness.admin(lambda s: verify_game(s, "derby")).ok
    result = [p for p in harness.public() if p["kind"] == "result"][-1]["body"]
    assert view["seeds"][0]["server_seed"] in result
    # Player text never mentions anyone in any post.
    assert all("@everyone" not in p["body"] for p in harness.posts())
    chips = harness.admin(
        lambda s: dict(s.execute(select(Holding.item, func.sum(Holding.amount)).group_by(Holding.item)).all())
    )["chips"]
    assert chips == 0


def test_help_after_a_refused_entry_never_offers_that_entry(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=50)
        add_player(session, "bob", T0, chips=50)
        grant(session, "alice", "king of spades", 1, T0)
        grant(session, "bob", "7H", 1, T0)
        create_game(session, "races", "derby", T0)
    harness.admin(setup)
    at = T0 + timedelta(minutes=1)
    refused = "horse Thunder Hooves card king of spades"
    harness.send("alice", "sit\n" + refused, at, channel=RACEWAY)
    # bob copies alice's line: the name is taken and he does not hold the card.
    harness.send("bob", "sit\n" + refused, at + timedelta(minutes=1), channel=RACEWAY)
    harness.send("bob", "help", at + timedelta(minutes=2), game="derby")
    harness.run(at + timedelta(minutes=3))
    bodies = [p["body"] for p in harness.pms("bob")]
    error = next(b for b in bodies if "already entered" in b)
    assert "horse Silver Blaze card 7 of Hearts" in error
    help_reply = next(b for b in bodies if "Commands for game derby" in b)
    assert "horse Silver Blaze card CARD" in help_reply
    for body in (error, help_reply):
        assert "- " + refused not in body
    # The suggestion is accepted as offered.
    harness.send("bob", "horse Silver Blaze card 7 of Hearts", at + timedelta(minutes=4), channel=RACEWAY)
    harness.run(at + timedelta(minutes=5))
    view = harness.admin(lambda s: game_view(s, "derby"))
    assert [h["name"] for h in view["detail"]["horses"]] == ["Thunder Hooves", "Silver Blaze"]


def test_chatter_at_the_raceway_is_ignored_and_command_words_are_answered(harness) -> None:  # type: ignore[no-untyped-def]
    # In a public channel a line whose first word is no command word of the game is chatter
    # (no reply); one that starts with a command word is a command: applied, or refused
    # privately with the form and an example.
    from dealer.store.models import Inbound

    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "carol", T0, chips=50)
        create_game(session, "races", "derby", T0)
    harness.admin(setup)
    at = T0 + timedelta(minutes=1)
    harness.send("carol", "good luck everyone!\nsit\nrace you to the finish!\nbet on the grey\n"
                          "lol", at, channel=RACEWAY)
    harness.run(at + timedelta(minutes=1))
    outcome = harness.admin(lambda s: s.scalars(select(Inbound)).one().outcome)
    assert [(entry["line"], entry["result"]) for entry in outcome] == [
        ("good luck everyone!", "ignored"), ("sit", "applied"),
        ("race you to the finish!", "rejected"), ("bet on the grey", "rejected"),
        ("lol", "ignored")]
    assert [entry.get("detail") for entry in outcome if entry["result"] == "ignored"] == [
        "chatter", "chatter"]
    (reply,) = harness.pms("carol")  # one reply per message: the refusals, not the chatter
    body = reply["body"]
    assert "good luck" not in body and "lol" not in body
    assert "'race' takes nothing after it" in body and "(OR-7)" in body
    assert "the form is 'bet N on HORSE', for example 'bet 10 on Thunder Hooves'" in body
    assert "(OR-5)" in body
    # What may be sent instead is what is valid now (carol sits; no race has begun).
    assert "\n- race —" not in body and "\n- stand — leave the table" in body


def test_a_message_sent_at_the_opening_instant_counts_in_every_game(harness) -> None:  # type: ignore[no-untyped-def]
    """Through the daemon's pass, which hands a message over before a deadline of its very
    instant fires: a table, a roulette game and a Hall cycle that open at 19:00 each take a
    command sent at 19:00 (a message sent at the start counts, in every game)."""
    opens = T0 + timedelta(hours=1)

    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=50)
        add_player(session, "bob", T0, chips=50)
        create_game(session, "races", "derby", T0, start=opens)
        create_game(session, "roulette", "r1", T0, players=["alice", "bob"], start=opens)
        create_game(session, "hall", "h1", T0, start=opens)
    harness.admin(setup)
    harness.send("alice", "sit", opens, channel=RACEWAY)
    harness.send("alice", "game r1\nprepare gold gold 30 silver 10", opens)
    harness.send("bob", "join", opens, channel="#game-actions")
    harness.run(opens)
    assert not [p for p in harness.posts() if p["kind"] == "error"]
    derby = harness.admin(lambda s: game_view(s, "derby"))
    assert derby["status"] == "running" and derby["players"] == ["alice"]
    assert harness.admin(lambda s: game_view(s, "r1"))["status"] == "running"
    hall = harness.admin(lambda s: game_view(s, "h1"))
    assert hall["status"] == "running" and hall["players"] == ["bob"]
    assert [d["name"] for d in hall["deadlines"]] == ["phase-2"]
