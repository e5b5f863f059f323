"""One private reply per message, as a play-by-email judge answers: every command line quoted
in order with "accepted" or "refused"; greetings set aside once at the end."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import select

from dealer.shell.admin import add_player, create_game

from dealer.views import game_view
from dealer.store.models import Game, Inbound, Post

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
AT = T0 + timedelta(hours=1)


def setup_roulette(h) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, chips=100)
        add_player(session, "bob", T0, chips=100)
        create_game(session, "roulette", "r1", T0, players=["alice", "bob"], settings={"remind_before": ""})
    h.admin(setup)


def test_a_four_line_pm_gets_one_reply_that_takes_each_line_in_order(harness) -> None:  # type: ignore[no-untyped-def]
    setup_roulette(harness)
    harness.send("alice", "hi dealer\nprepare black gold 30 silver 10\nbet gold 30 silver 10\nthanks!", AT)
    harness.run(AT + timedelta(minutes=1))

    (reply,) = harness.pms("alice")
    assert reply["kind"] == "reply" and reply["subject"] == "r1: 1 accepted, 1 refused"
    assert reply["key"].endswith(":reply:0")
    body = reply["body"]
    assert body.startswith("Your message of 2026-12-01 13:00 UTC (game r1), line by line:\n")
    prepare = body.index("> prepare black gold 30 silver 10\naccepted:\nAccepted (SR-6): your preparation no. 1")
    bet = body.index("> bet gold 30 silver 10\nrefused: no roulette is active during the preparation phase")
    aside = body.index(
        "Not read as commands, so nothing was done with these lines (one command per line; "
        "send help for the list):\n> hi dealer\n> thanks!"
    )
    assert prepare < bet < aside
    refusal = body[bet:aside]
    assert "(SR-3)" in refusal and "What you can send now in game r1:" in refusal
    assert "- prepare black gold 30 silver 10" in refusal and "Nothing was changed by this line." in refusal
    assert body.count("hi dealer") == 1 and body.count("thanks!") == 1  # not refused, only listed

    preparation = harness.admin(lambda s: s.get(Game, "r1").state["preparations"]["alice"])
    assert (preparation["colour"], preparation["gold"]) == ("black", 30)
    inbound = harness.admin(lambda s: s.scalars(select(Inbound)).one())
    assert inbound.status == "applied"
    assert [(e.get("line"), e["result"]) for e in inbound.outcome] == [
        ("hi dealer", "ignored"),
        ("prepare black gold 30 silver 10", "applied"),
        ("bet gold 30 silver 10", "rejected"),
        ("thanks!", "ignored"),
    ]


def test_a_pm_with_no_command_at_all_gets_one_error_with_help(harness) -> None:  # type: ignore[no-untyped-def]
    setup_roulette(harness)
    harness.send("alice", "hello dealer\nhow are you?", AT)
    harness.run(AT)
    (reply,) = harness.pms("alice")
    assert (reply["kind"], reply["subject"]) == ("error", "No command in your message")
    body = reply["body"]
    assert "refused: dealer reads no line of this message as a command, so nothing was done:" in body
    assert "> hello dealer\n> how are you?" in body
    assert "Commands for game r1 (Stationary Roulette), one per line:" in body
    assert "- help — this list" in body
    assert harness.admin(lambda s: s.scalars(select(Inbound)).one()).status == "rejected"


def test_a_command_word_of_another_game_is_refused_not_set_aside(harness) -> None:  # type: ignore[no-untyped-def]
    setup_roulette(harness)
    harness.send("alice", "sit\nhello", AT)  # `sit` is a command at the raceway, not here
    harness.run(AT)
    (reply,) = harness.pms("alice")
    assert reply["kind"] == "error"
    assert "> sit\nrefused: " in reply["body"]
    assert "Not read as commands, so nothing was done with this line" in reply["body"]
    assert reply["body"].endswith("> hello\n")


def test_shell_lines_are_sections_of_the_same_reply(harness) -> None:  # type: ignore[no-untyped-def]
    setup_roulette(harness)
    harness.send("alice", "game r1\nseed lucky\nhelp\nprepare gold gold 30 silver 10", AT)
    harness.run(AT)
    (reply,) = harness.pms("alice")
    body = reply["body"]
    assert reply["subject"] == "r1: 2 accepted, 1 answered"
    assert body.index("> game r1\nThe lines that follow go to game r1.") < body.index(
        "> seed lucky\naccepted:\nYour seed was added") < body.index(
        "> help\nanswered:\nCommands for game r1") < body.index(
        "> prepare gold gold 30 silver 10\naccepted:")
    assert "Not read as commands" not in body


def test_private_replies_to_others_stay_their_own_and_public_posts_are_kept(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0, vertebrae=20)
        add_player(session, "bob", T0)
        create_game(session, "hall", "h1", T0)
    harness.admin(setup)
    harness.send("bob", "join", AT, channel="#game-actions")
    harness.send("alice", "join\nhi all\ngift bob", AT + timedelta(minutes=1), channel="#game-actions")
    harness.run(AT + timedelta(minutes=2))
    (alice,) = harness.pms("alice")
    assert alice["body"].count("\naccepted:\n") == 2
    # In a public channel a line that is not a command is chatter: not listed, not refused.
    assert "hi all" not in alice["body"]
    assert [p["kind"] for p in harness.pms("bob")] == ["confirmation", "notice"]
    view = harness.admin(lambda s: game_view(s, "h1"))
    assert sorted(view["players"]) == ["alice", "bob"]


def test_public_posts_stay_as_the_rules_made_them(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0)
        create_game(session, "races", "derby", T0)
    harness.admin(setup)
    harness.send("alice", "good evening\nsit\nstand", AT, channel="#the-raceway")
    harness.run(AT)
    message = harness.admin(lambda s: s.scalars(select(Inbound)).one().id)
    posts = harness.admin(
        lambda s: [(p.key, p.recipient, p.kind) for p in s.scalars(select(Post).order_by(Post.id))][1:]
    )
    # Each line's public post keeps its key (message, line, post); the one reply comes last.
    assert posts == [
        (f"in:{message}:1:0", None, "seated"),
        (f"in:{message}:2:0", None, "stood"),
        (f"in:{message}:2:1", None, "abandoned"),  # the last one seated stood up (OR-10)
        (f"in:{message}:reply:0", "alice", "reply"),
    ]


def test_the_reply_key_is_stable_when_a_message_is_applied_again(harness) -> None:  # type: ignore[no-untyped-def]
    """A group that fails is rolled back and its messages applied one by one: the reply is
    queued once, with the same key."""
    import tally

    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        create_game(session, "tally", "t1", T0, players=["alice", "bob"])
    harness.admin(setup)
    original = tally.Tally.handle
    calls = {"n": 0}

    def flaky(self, ctx, state, actor, command):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:  # the group's third step fails once
            raise RuntimeError("a passing fault")
        return original(self, ctx, state, actor, command)

    tally.Tally.handle = flaky
    try:
        harness.send("alice", "add 1\nadd 2", T0 + timedelta(minutes=1))
        harness.send("bob", "add 3", T0 + timedelta(minutes=2))
        harness.run(T0 + timedelta(minutes=3))
    finally:
        tally.Tally.handle = original
    keys = harness.admin(lambda s: [p.key for p in s.scalars(select(Post).where(Post.recipient.is_not(None)))])
    ids = harness.admin(lambda s: [r.id for r in s.scalars(select(Inbound).order_by(Inbound.id))])
    assert keys == [f"in:{ids[0]}:reply:0", f"in:{ids[1]}:reply:0"]
    assert harness.admin(lambda s: game_view(s, "t1"))["scores"] == {"alice": 3, "bob": 3}


def test_player_text_in_the_reply_mentions_nobody(harness) -> None:  # type: ignore[no-untyped-def]
    setup_roulette(harness)
    harness.send("alice", "game @everyone\nprepare **gold** <@1>\nhi @here", AT)
    harness.run(AT)
    (reply,) = harness.pms("alice")
    for text in (reply["subject"], reply["body"]):
        for mention in ("@everyone", "@here", "<@1>", "**gold**"):
            assert mention not in text
    assert "go to game @\u2060everyone." in reply["body"]
    assert "> hi @\u2060here" in reply["body"]
