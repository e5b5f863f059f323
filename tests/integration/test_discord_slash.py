"""Slash commands against the fake Discord: interactions deferred at once, stored through the
inbox path as the text line they stand for, answered by an ephemeral follow-up (or by DM
once the token is too old), and autocompleted from the game's state."""

from __future__ import annotations

import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).parent))
from discord_harness import ACTIONS, RACEWAY, DiscordTable, add_players, tables  # noqa: E402

from dealer.inbox.memory import MemoryInbox  # noqa: E402
from dealer.shell.admin import create_game, grant  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402
from dealer.shell.platforms import build_publisher  # noqa: E402
from dealer.store.models import Inbound, Post  # noqa: E402
from dealer.views import game_view, player_view  # noqa: E402

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)
ALICE, BOB, CAROL = 210000000000000001, 210000000000000002, 210000000000000003
ROUTES = (f"#stationary-roulette=discord:channel/{RACEWAY};#the-raceway=discord:channel/{ACTIONS};"
          "pm=discord:dm")


@pytest.fixture
def table(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    yield from tables(database_url, tmp_path, T0, routes=ROUTES)


def _players(t: DiscordTable, *names_ids: tuple[str, int], chips: int = 100) -> None:
    add_players(t, T0, names_ids, chips)


def _roulette_for_two(t: DiscordTable) -> None:
    """alice and bob, linked, in the roulette r1 (no reminders) opening at T0."""
    _players(t, ("alice", ALICE), ("bob", BOB))
    t.admin(lambda s: create_game(s, "roulette", "r1", T0, players=["alice", "bob"],
                                  settings={"remind_before": ""}))


def _prepare(t: DiscordTable, user: int, minute: int, layout: str = "gold 30 silver 10") -> dict[str, Any]:
    """``/roulette prepare`` gold, ``minute`` minutes after T0."""
    return invoke(t, user, "roulette", "prepare", T0 + timedelta(minutes=minute), winning="gold", layout=layout)


def _answered(t: DiscordTable, data: dict[str, Any]) -> dict[str, Any]:
    """Wait for the interaction's answer (its callback); return it."""
    found = t.fake.interactions[data["id"]]
    assert t.fake.wait_for(lambda: bool(found["answers"]), 10), "no answer to the interaction"
    return found["answers"][0]


def invoke(t: DiscordTable, user: int, command: str, sub: str, at: datetime,
           channel: int = RACEWAY, **options: Any) -> dict[str, Any]:
    """``user`` runs ``/command sub`` at ``at``: deferred (ephemeral) within 3 s, then stored."""
    t.now = at
    data = t.fake.user_invokes(channel, user, command, sub, options)
    answer = _answered(t, data)
    assert (answer["type"], answer["data"]["flags"]) == (5, 64) and answer["after"] < 3.0
    t.stored(data["id"])
    return data


def complete(t: DiscordTable, user: int, command: str, sub: str, focused: str,
             channel: int = RACEWAY, **options: Any) -> list[dict[str, str]]:
    """The choices Discord would show while ``user`` types the option ``focused``."""
    data = t.fake.user_invokes(channel, user, command, sub, options, focused=focused)
    answer = _answered(t, data)
    assert answer["type"] == 8 and answer["after"] < 3.0
    return answer["data"]["choices"]


def replies(t: DiscordTable) -> list[Post]:
    with t.dealer.sessions() as session:
        return list(session.scalars(select(Post).where(Post.key.like("in:%:reply:%")).order_by(Post.id)))


# Scripted as tests/integration/test_roulette_game.py's whole game, by hand to 590 : 600.
WINNING = {"alice": {p: "gold" if p <= 4 else "silver" if p <= 8 else "black" for p in range(10)},
           "bob": {p: "gold" if p <= 4 else "silver" for p in range(10)}}
LAYOUT = {"alice": {"gold": "gold 30 silver 10", "silver": "gold 30 silver 10", "black": "gold 35 silver 5"},
          "bob": {"gold": "gold 25 silver 15", "silver": "gold 25 silver 15"}}
BET = {"alice": "silver 40", "bob": "gold 40"}


def test_a_whole_roulette_game_by_slash_commands_in_one_channel(table) -> None:  # type: ignore[no-untyped-def]
    t = table()
    _roulette_for_two(t)
    sent = []
    for phase in range(11):
        at = T0 + phase * DAY + timedelta(hours=1)
        for name, user in (("alice", ALICE), ("bob", BOB)):
            if phase >= 1:
                sent.append(invoke(t, user, "roulette", "bet", at, points=BET[name]))
            if phase <= 9:
                colour = WINNING[name][phase]
                sent.append(invoke(t, user, "roulette", "prepare", at, winning=colour,
                                   layout=LAYOUT[name][colour]))
        t.run(at + timedelta(minutes=1))  # applied, and each answered by its follow-up
        t.run(T0 + (phase + 1) * DAY + timedelta(minutes=5))
    view = t.admin(lambda s: game_view(s, "r1"))
    assert view["status"] == "finished"
    assert view["scores"] == {"alice": 590, "bob": 600}
    assert (t.admin(lambda s: player_view(s, "alice"))["chips"],
            t.admin(lambda s: player_view(s, "bob"))["chips"]) == (129, 61)

    # Every command had one reply, sent as its interaction's ephemeral follow-up: nothing of
    # it in the channel, nor in a DM.
    answers = replies(t)
    assert len(answers) == len(sent) == 40
    for data, reply in zip(sent, answers):
        (follow_up,) = t.fake.follow_ups(data)
        assert follow_up["flags"] == 64 and reply.external_id == follow_up["id"]
        assert "Accepted" in follow_up["content"] or "accepted" in follow_up["content"]
    channel = t.fake.channels[RACEWAY]
    assert channel and all(m["author"]["bot"] for m in channel)  # no player wrote there
    texts = [m["content"] for m in channel] + [m["content"] for u in (ALICE, BOB) for m in t.fake.dm_posts(u)]
    assert not any(f["content"] in texts for d in sent for f in t.fake.follow_ups(d))


def test_a_race_with_horses_and_cards_autocompleted(table) -> None:  # type: ignore[no-untyped-def]
    t = table()
    _players(t, ("Alice", ALICE), ("Bob", BOB), ("Carol", CAROL), chips=50)

    def setup(session):  # type: ignore[no-untyped-def]
        grant(session, "Alice", "king of spades", 1, T0)
        grant(session, "Bob", "7H", 1, T0)
        create_game(session, "races", "derby", T0)
    t.admin(setup)
    at = T0 + timedelta(minutes=1)
    for user, card, name in ((ALICE, "KS", "Thunder Hooves"), (BOB, "7H", "Red Rum")):
        invoke(t, user, "races", "sit", at, channel=ACTIONS)
        t.run(at)
        # The card: one of the player's own.
        assert complete(t, user, "races", "horse", "card", channel=ACTIONS, name=name, card="") == [
            {"name": "King of Spades" if user == ALICE else "7 of Hearts", "value": card}]
        invoke(t, user, "races", "horse", at, channel=ACTIONS, name=name, card=card)
    for user in (ALICE, BOB):
        invoke(t, user, "races", "ready", at, channel=ACTIONS)
    t.run(at + timedelta(minutes=2))
    assert t.admin(lambda s: game_view(s, "derby"))["deadlines"][0]["name"] == "betting"

    # The horses of this race (the players' and the house's), narrowed by what is typed.
    horses = [h["name"] for h in t.admin(lambda s: game_view(s, "derby"))["detail"]["horses"]]
    offered = complete(t, CAROL, "races", "bet", "horse", channel=ACTIONS, amount=20, horse="")
    assert offered == [{"name": h, "value": h} for h in horses]
    assert {"Thunder Hooves", "Red Rum"} < set(horses)
    narrowed = complete(t, CAROL, "races", "bet", "horse", channel=ACTIONS, horse="rum")
    assert narrowed == [{"name": "Red Rum", "value": "Red Rum"}]
    bet = invoke(t, CAROL, "races", "bet", at + timedelta(minutes=3), channel=ACTIONS, amount=20, horse="Red Rum")
    t.run(at + timedelta(minutes=4))
    assert t.admin(lambda s: player_view(s, "Carol"))["chips"] == 30
    (follow_up,) = t.fake.follow_ups(bet)
    assert "Red Rum" in follow_up["content"]
    # The game option completes with the player's games of that kind.
    assert complete(t, CAROL, "races", "bet", "game", channel=ACTIONS, game="") == [
        {"name": "derby", "value": "derby"}]


def test_a_hall_gift_and_offer_with_members_and_cards_autocompleted(table) -> None:  # type: ignore[no-untyped-def]
    t = table(routes=f"#game-actions=discord:channel/{ACTIONS};pm=discord:dm")
    _players(t, ("alice", ALICE), ("bob", BOB), ("carol", CAROL))

    def setup(session):  # type: ignore[no-untyped-def]
        create_game(session, "hall", "h1", T0, players=["alice", "bob", "carol"])
        grant(session, "alice", "AS", 1, T0, "h1")
        grant(session, "alice", "holo 7H", 1, T0, "h1")
    t.admin(setup)
    t.run(T0)
    cards = complete(t, ALICE, "hall", "offer", "gives", channel=ACTIONS, gives="")
    assert {"name": "Ace of Spades", "value": "AS"} in cards
    assert {"name": "7 of Hearts (holo)", "value": "holo 7H"} in cards
    assert complete(t, ALICE, "hall", "gift", "receiver", channel=ACTIONS, receiver="b") == [
        {"name": "bob", "value": "bob"}]
    gift = invoke(t, ALICE, "hall", "gift", T0 + timedelta(minutes=1), channel=ACTIONS, receiver="bob")
    t.run(T0 + timedelta(minutes=2))
    (follow_up,) = t.fake.follow_ups(gift)
    assert "Not accepted" not in follow_up["content"], follow_up["content"]

    # An open offer's number: offered to bob for accept and decline, to alice for withdraw.
    invoke(t, ALICE, "hall", "offer", T0 + timedelta(minutes=3), channel=ACTIONS, gives="AS",
           target="bob", wants="nothing")
    t.run(T0 + timedelta(minutes=4))
    (offer,) = complete(t, BOB, "hall", "accept-offer", "offer", channel=ACTIONS)
    assert offer["value"] == 1 and offer["name"].startswith("accept offer 1 — from alice: Ace of Spades")
    assert [c["value"] for c in complete(t, BOB, "hall", "decline-offer", "offer", channel=ACTIONS)] == [1]
    assert complete(t, BOB, "hall", "withdraw", "offer", channel=ACTIONS) == []
    assert [c["value"] for c in complete(t, ALICE, "hall", "withdraw", "offer", channel=ACTIONS)] == [1]
    accepted = invoke(t, BOB, "hall", "accept-offer", T0 + timedelta(minutes=5), channel=ACTIONS, offer=1)
    t.run(T0 + timedelta(minutes=6))
    assert "> accept offer 1\naccepted" in t.fake.follow_ups(accepted)[0]["content"]
    assert complete(t, BOB, "hall", "accept-offer", "offer", channel=ACTIONS) == []


def test_commands_in_a_dm_and_in_an_unrouted_channel(table) -> None:  # type: ignore[no-untyped-def]
    t = table()
    _roulette_for_two(t)
    t.fake.add_channel(999)
    t.now = T0 + timedelta(minutes=1)
    elsewhere = t.fake.user_invokes(999, ALICE, "roulette", "help", {})
    answer = _answered(t, elsewhere)
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    assert "No game is played in this channel" in answer["data"]["content"]
    assert t.fake.follow_ups(elsewhere) == []
    stale = t.fake.user_invokes(RACEWAY, ALICE, "roulette", "shuffle", {})  # an older dealer's
    answer = _answered(t, stale)
    assert (answer["type"], answer["data"]["flags"]) == (4, 64)
    assert "`dealer discord sync`" in answer["data"]["content"]
    helped = invoke(t, ALICE, "roulette", "help", T0 + timedelta(minutes=1))
    t.now = T0 + timedelta(minutes=2)
    data = t.fake.user_invokes(None, ALICE, "roulette", "prepare", {"winning": "gold", "layout": "gold 30 silver 10"}, dm=True)
    _answered(t, data)
    t.stored(data["id"])
    t.run(T0 + timedelta(minutes=3))
    (follow_up,) = t.fake.follow_ups(data)
    assert "ccepted" in follow_up["content"] and "Not accepted" not in follow_up["content"]
    assert "prepare" in t.fake.follow_ups(helped)[0]["content"]  # what alice can send now

    # In a race too, a /roulette command still finds the player's one roulette; in two
    # roulettes, the game option names one.
    t.admin(lambda s: create_game(s, "races", "derby", T0))
    invoke(t, ALICE, "races", "sit", T0 + timedelta(minutes=4), channel=ACTIONS)
    t.run(T0 + timedelta(minutes=4))
    receipts = t.fake.user_invokes(None, ALICE, "roulette", "receipts", {}, dm=True)
    _answered(t, receipts)
    t.stored(receipts["id"])
    t.admin(lambda s: create_game(s, "roulette", "r2", T0 + timedelta(minutes=5), players=["alice", "bob"]))
    t.now = T0 + timedelta(minutes=6)
    several = t.fake.user_invokes(None, ALICE, "roulette", "receipts", {}, dm=True)
    named = t.fake.user_invokes(None, ALICE, "roulette", "receipts", {"game": "r2"}, dm=True)
    for data in (several, named):
        _answered(t, data)
        t.stored(data["id"])
    t.run(T0 + timedelta(minutes=7))
    assert "r1" in t.fake.follow_ups(receipts)[0]["content"]
    assert "several games" in t.fake.follow_ups(several)[0]["content"]
    assert "r2" in t.fake.follow_ups(named)[0]["content"]


def test_each_interaction_is_deferred_within_3_s_while_a_deadline_burst_runs(table) -> None:  # type: ignore[no-untyped-def]
    t = table()
    _players(t, ("alice", ALICE), ("bob", BOB))
    games = 150

    def setup(session):  # type: ignore[no-untyped-def]
        for i in range(games):
            create_game(session, "roulette", f"g{i}", T0, players=["alice", "bob"], settings={"remind_before": ""})
    t.admin(setup)
    burst_at = T0 + DAY + timedelta(minutes=1)  # every game's phase deadline is due
    done = threading.Event()
    ended: list[float] = []

    def burst() -> None:
        t.run(burst_at)
        ended.append(time.monotonic())
        done.set()

    runner = threading.Thread(target=burst)
    runner.start()
    sent = []
    while not done.is_set() and len(sent) < 20:
        t.now = burst_at
        sent.append(t.fake.user_invokes(RACEWAY, ALICE, "roulette", "receipts", {"game": "g0"}))
        t.fake.wait_for(lambda: bool(t.fake.interactions[sent[-1]["id"]]["answers"]), 10)
    runner.join(120)
    assert done.is_set()
    during = [d for d in sent if t.fake.interactions[d["id"]]["at"] + t.fake.interactions[d["id"]]["answers"][0]["after"] < ended[0]]
    assert during, "the burst ended before any interaction was answered"
    for data in sent:
        (answer,) = t.fake.interactions[data["id"]]["answers"]
        assert answer["type"] == 5 and answer["after"] < 3.0
        t.stored(data["id"])
    with t.dealer.sessions() as session:
        fired = session.scalar(select(func.count()).select_from(Post).where(Post.recipient.is_(None)))
    assert fired >= games  # the burst did fire


def test_a_restart_between_the_deferral_and_the_follow_up_still_delivers(table) -> None:  # type: ignore[no-untyped-def]
    t = table()
    _roulette_for_two(t)
    first = _prepare(t, ALICE, 1)
    late = _prepare(t, BOB, 2, "gold 25 silver 15")
    # The daemon stops before its pass; another starts on the same store.
    assert t.link is not None
    t.link.stop()
    t.link = None
    t.dealer.engine.dispose()
    t.dealer = Dealer(t.settings, inbox=MemoryInbox(), publisher=build_publisher(t.settings, t.rest),
                      clock=lambda: t.now)
    t.run(T0 + timedelta(minutes=5))
    (follow_up,) = t.fake.follow_ups(first)
    assert follow_up["flags"] == 64 and "ccepted" in follow_up["content"]
    assert t.fake.follow_ups(late)  # within its 15 minutes too


def test_a_reply_after_the_tokens_15_minutes_goes_by_dm(table) -> None:  # type: ignore[no-untyped-def]
    t = table()
    _roulette_for_two(t)
    data = _prepare(t, ALICE, 1)
    t.run(T0 + timedelta(minutes=20))  # the daemon was down meanwhile
    assert t.fake.follow_ups(data) == []
    assert any("prepare gold gold 30 silver 10" in m["content"] for m in t.fake.dm_posts(ALICE))


def test_an_interaction_replayed_after_a_resume_is_applied_once(table) -> None:  # type: ignore[no-untyped-def]
    t = table()
    _players(t, ("alice", ALICE), ("bob", BOB), ("carol", CAROL), chips=50)
    t.admin(lambda s: (grant(s, "alice", "KS", 1, T0), grant(s, "bob", "7H", 1, T0),
                       create_game(s, "races", "derby", T0)))
    at = T0 + timedelta(minutes=1)
    for user, card, name in ((ALICE, "KS", "Thunder Hooves"), (BOB, "7H", "Red Rum")):
        invoke(t, user, "races", "sit", at, channel=ACTIONS)
        invoke(t, user, "races", "horse", at, channel=ACTIONS, name=name, card=card)
    for user in (ALICE, BOB):
        invoke(t, user, "races", "ready", at, channel=ACTIONS)
    t.run(at + timedelta(minutes=2))
    bet = invoke(t, CAROL, "races", "bet", at + timedelta(minutes=3), channel=ACTIONS, amount=20, horse="Red Rum")
    resumes = t.fake.resumes
    t.fake.drop()
    t.until(lambda: t.fake.resumes > resumes and t.fake.connected.is_set(), "the gateway to resume")
    t.fake.dispatch("INTERACTION_CREATE", bet)  # Discord delivers it again
    # Answered once (the second answer is refused as acknowledged already), stored once.
    assert t.fake.wait_for(lambda: t.fake.interactions[bet["id"]].get("refused") == 1, 10)
    t.run(at + timedelta(minutes=4))
    with t.dealer.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Inbound).where(Inbound.external_id == bet["id"])) == 1
    assert t.admin(lambda s: player_view(s, "carol"))["chips"] == 30
    assert len(t.fake.follow_ups(bet)) == 1


def test_a_command_the_store_cannot_take_is_answered_at_once(table) -> None:  # type: ignore[no-untyped-def]
    t = table()
    _players(t, ("alice", ALICE), ("bob", BOB))
    assert t.link is not None

    def down(*args: Any) -> Any:
        raise OSError("the store is unreachable")

    t.link.store = down  # type: ignore[method-assign]
    t.now = T0 + timedelta(minutes=1)
    data = t.fake.user_invokes(RACEWAY, ALICE, "roulette", "help", {})
    assert _answered(t, data)["type"] == 5
    assert t.fake.wait_for(lambda: bool(t.fake.follow_ups(data)), 10)
    (follow_up,) = t.fake.follow_ups(data)
    assert follow_up["flags"] == 64 and "could not take your command just now" in follow_up["content"]
    with t.dealer.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Inbound)) == 0


def test_a_match_found_and_its_cards_autocompleted_in_the_halls_channel(table) -> None:  # type: ignore[no-untyped-def]
    t = table(routes=f"#game-actions=discord:channel/{ACTIONS};pm=discord:dm")
    _players(t, ("alice", ALICE), ("bob", BOB))

    def setup(session):  # type: ignore[no-untyped-def]
        create_game(session, "hall", "h1", T0, players=["alice", "bob"])
        create_game(session, "exoptosis", "m1", T0, players=["alice", "bob"])
        for card in "7C 8C 9C 10C".split():
            grant(session, "alice", card, 1, T0, "h1")
    t.admin(setup)
    t.run(T0)
    assert complete(t, ALICE, "exoptosis", "hand", "game", channel=ACTIONS) == [{"name": "m1", "value": "m1"}]
    hand = invoke(t, ALICE, "exoptosis", "hand", T0 + timedelta(minutes=1), channel=ACTIONS,
                  cards="7C 8C 9C 10C")
    t.run(T0 + timedelta(minutes=2))
    assert "Your hand is chosen (GH-10)" in t.fake.follow_ups(hand)[0]["content"]
    assert complete(t, ALICE, "exoptosis", "give", "card", channel=ACTIONS, card="9") == [
        {"name": "9 of Clubs", "value": "9C"}]
