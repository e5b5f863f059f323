"""Exoptosis matches through the daemon (GH-10 to GH-19): a whole duel through the directory
inbox and ``dealer run --once`` at controlled times, and a battle opened by the Hall's phase
deadline with its reward checked by ``dealer verify``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from dealer.clock import iso_exact
from dealer.shell.admin import add_player, create_game, grant
from dealer.replay import replay_game
from dealer.verify import verify_game
from dealer.views import game_view, player_view

T0 = datetime(2027, 1, 4, 0, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)


def iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_whole_duel_through_the_inbox_and_run_once(cli) -> None:  # type: ignore[no-untyped-def]
    sent = [0]

    def send(sender: str, body: str, at: datetime, channel: str = "#game-actions") -> None:
        sent[0] += 1
        cli.inbox.mkdir(parents=True, exist_ok=True)
        message = {"id": f"m{sent[0]:03d}", "sender": sender, "channel": channel, "body": body,
                   "sent_at": iso_exact(at)}
        (cli.inbox / f"{sent[0]:03d}.json").write_text(json.dumps(message), encoding="utf-8")

    def run(at: datetime) -> None:
        cli("run", "--once", "--now", iso(at))

    def show(name: str) -> dict:
        return json.loads(cli("player", "show", name, "--game", "h1", "--json").output)

    def posts() -> list[dict]:
        return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(cli.outbox.glob("*.json"))]

    cli("player", "add", "alice")
    cli("player", "add", "bob")
    cli("game", "new", "hall", "--id", "h1", "--players", "alice,bob", "--start-in-past", "--start", iso(T0))
    for name, cards in (("alice", "7C 8C 9C 10C"), ("bob", "2H 3H 4H 5H 6H")):
        for card in cards.split():
            cli("grant", name, card, "1", "--game", "h1")
        cli("grant", name, "chips", "5", "--game", "h1")
    run(T0)  # the Hall opens
    before = {name: show(name) for name in ("alice", "bob")}
    assert before["alice"]["cards"] == ["10 of Clubs", "7 of Clubs", "8 of Clubs", "9 of Clubs"]
    assert (before["alice"]["chips"], before["bob"]["chips"]) == (5, 5)

    at = T0 + timedelta(hours=1)
    send("alice", "duel bob", at)
    send("carol", "accept duel 1", at + timedelta(minutes=1))  # not a player at all
    run(at + timedelta(minutes=2))
    (challenge,) = [p for p in posts() if p["kind"] == "duel_challenge"]
    assert "**alice challenges bob to an Exoptosis duel** (duel 1, GH-19)" in challenge["body"]
    send("alice", "accept duel 1", at + timedelta(minutes=3))  # alice was not challenged
    send("bob", "accept duel 1", at + timedelta(minutes=4))
    run(at + timedelta(minutes=5))
    refusal = [p for p in posts() if p["recipient"] == "alice" and p["kind"] == "error"][-1]
    assert "you were not challenged to duel 1, or it is no longer open (GH-19)" in refusal["body"]
    (opened,) = [p for p in posts() if p["kind"] == "fight_opened"]
    assert "match h1-duel-1** with alice, bob" in opened["body"]
    match = json.loads(cli("game", "show", "h1-duel-1", "--json").output)
    assert (match["kind"], match["status"], match["players"]) == ("exoptosis", "running", ["alice", "bob"])

    # GH-10: hands chosen privately (routed to the match: its command word, the sender's
    # one match of the Hall); a card bob does not hold is refused, nothing changes.
    at += timedelta(hours=1)
    send("alice", "hand 7C 8C 9C 10C", at, channel="pm")
    send("bob", "hand 2H 3H 4H 5H 7C", at + timedelta(minutes=1), channel="pm")
    send("bob", "hand 2H 3H 4H 5H 6H", at + timedelta(minutes=2), channel="pm")
    run(at + timedelta(minutes=3))
    bob_refused = [p for p in posts() if p["recipient"] == "bob" and p["kind"] == "error"][-1]
    assert "7 of Clubs is not in your inventory" in bob_refused["body"] and "(GH-10)" in bob_refused["body"]
    (revealed,) = [p for p in posts() if p["kind"] == "revealed"]
    assert "- alice: 7 of Clubs, 8 of Clubs, 9 of Clubs, 10 of Clubs" in revealed["body"]
    assert show("alice")["cards"] == []  # held by the match (GH-10)

    # GH-11: alice raises 2, bob matches: the window closes early; bob (5 cards) goes first.
    send("alice", "raise 2", at + timedelta(minutes=4))
    send("bob", "match", at + timedelta(minutes=5))
    run(at + timedelta(minutes=6))
    (began,) = [p for p in posts() if p["kind"] == "play_began"]
    assert "Turn order by hand size (GH-12): bob (5), alice (4)." in began["body"]
    assert (show("alice")["chips"], show("bob")["chips"]) == (3, 3)

    # GH-13: red and black alternate (opposite colour); alice empties her hand first.
    at += timedelta(hours=1)
    plays = [("bob", "2H"), ("alice", "7C"), ("bob", "3H"), ("alice", "8C"), ("bob", "4H"),
             ("alice", "9C"), ("bob", "5H"), ("alice", "10C")]
    send("alice", "play 7C", at)  # out of turn: refused (GH-12)
    for i, (who, card) in enumerate(plays):
        send(who, f"play {card}", at + timedelta(minutes=i + 1))
    run(at + timedelta(minutes=10))
    played = [p for p in posts() if p["kind"] == "played"]
    assert len(played) == 8 and "**bob plays 2 of Hearts.**" in played[0]["body"]
    assert "- bob: 3 of Hearts, 4 of Hearts, 5 of Hearts, 6 of Hearts (stake 2 chips)" in played[0]["body"]
    assert "Pool: 4 chips." in played[0]["body"] and "Turn 2: alice plays, until" in played[0]["body"]
    first_refusal = [p for p in posts() if p["recipient"] == "alice" and p["kind"] == "error"][-1]
    assert "it is bob's turn, not yours" in first_refusal["body"]
    (result,) = [p for p in posts() if p["kind"] == "result"]
    assert "**alice wins the Exoptosis duel** and takes the pool of 4 chips (GH-16)" in result["body"]

    after = {name: show(name) for name in ("alice", "bob")}
    assert after["alice"]["cards"] == before["alice"]["cards"]  # every card home (GH-10)
    assert after["bob"]["cards"] == before["bob"]["cards"]
    assert (after["alice"]["chips"], after["bob"]["chips"]) == (7, 3)
    match = json.loads(cli("game", "show", "h1-duel-1", "--json").output)
    assert (match["status"], match["winner"]) == ("finished", "alice")
    assert "checked 1 seed" in cli("verify", "h1-duel-1").output
    # Both histories rebuild the stored games: the match's plays and the cycle's child.acted.
    for game in ("h1-duel-1", "h1"):
        assert "match the store" in cli("replay", game).output


def test_a_battle_opens_at_the_next_phase_and_its_reward_verifies(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0)
        create_game(session, "hall", "h1", T0, players=["alice", "bob", "carol"])
        for name, cards in (("alice", "7C 8C 9C 10C"), ("bob", "2H 3H 4H 5H"), ("carol", "KS")):
            for card in cards.split():
                grant(session, name, card, 1, T0, "h1")
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "battle", at, channel="#game-actions")
    harness.send("bob", "battle", at + timedelta(minutes=1), channel="#game-actions")
    harness.send("carol", "battle", at + timedelta(minutes=2), channel="#game-actions")
    harness.send("bob", "battle", at + timedelta(minutes=3), channel="#game-actions")
    harness.run(at + timedelta(minutes=5))
    carol = [p for p in harness.pms("carol") if p["kind"] == "error"][-1]["body"]
    assert "engaging in battle takes at least 4 cards and you hold 1 outside any match (GH-18)" in carol
    bob = [p for p in harness.pms("bob") if p["kind"] == "error"][-1]["body"]
    assert "once per phase (GH-18)" in bob
    assert harness.admin(lambda s: game_view(s, "h1"))["detail"]["phase"] == 1

    harness.run(T0 + DAY)  # phase 2 begins: the battle of phase 1 opens
    battle = harness.admin(lambda s: game_view(s, "h1-battle-1"))
    assert battle["players"] == ["alice", "bob"] and battle["detail"]["fight"] == "battle"
    at = T0 + DAY + timedelta(hours=1)
    harness.send("alice", "hand 7C 8C 9C 10C", at)
    harness.send("bob", "hand 2H 3H 4H 5H", at + timedelta(minutes=1))
    harness.send("alice", "match", at + timedelta(minutes=2))
    harness.send("bob", "match", at + timedelta(minutes=3))
    harness.send("bob", "forfeit", at + timedelta(minutes=4), channel="#game-actions")
    harness.run(at + timedelta(minutes=5))
    battle = harness.admin(lambda s: game_view(s, "h1-battle-1"))
    assert (battle["status"], battle["winner"]) == ("finished", "alice")
    reward = battle["detail"]["reward"]
    alice = harness.admin(lambda s: player_view(s, "alice", "h1"))
    # GH-18: exactly one of the three rewards, in alice's inventory beside her 4 cards.
    if reward.startswith("3 random cards"):
        assert len(alice["cards"]) == 7 and (alice["chips"], alice["vertebrae"]) == (0, 0)
    elif reward.endswith("vertebrae"):
        assert 5 <= alice["vertebrae"] == int(reward.split()[0]) <= 16 and len(alice["cards"]) == 4
    else:
        assert reward == "2 chips" and alice["chips"] == 2 and len(alice["cards"]) == 4
    (result,) = [p for p in harness.public() if p["kind"] == "result"]
    assert f"Battle reward, drawn by the fair source (GH-18): {reward}." in result["body"]
    report = harness.admin(lambda s: verify_game(s, "h1-battle-1"))
    assert report.ok and report.seeds == 1 and report.checked >= 1  # the reward's draw(s)
    hall = harness.admin(lambda s: game_view(s, "h1"))
    assert hall["status"] == "running"
    # GH-6: in phase 2 alice and bob only sent match commands: Hall actions all the same, so
    # only carol is inactive in phase 3.
    harness.run(T0 + 2 * DAY)
    assert harness.admin(lambda s: game_view(s, "h1"))["detail"]["inactive"] == ["carol"]
    for game in ("h1-battle-1", "h1"):
        assert harness.admin(lambda s: replay_game(s, game)).ok


def test_no_battle_with_one_engaged_and_a_duel_lapses(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "hall", "h1", T0, players=["alice", "bob"])
        for card in "7C 8C 9C 10C".split():
            grant(session, "alice", card, 1, T0, "h1")
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "battle\nduel bob", at, channel="#game-actions")
    harness.run(at + timedelta(minutes=1))
    harness.run(T0 + DAY)
    kinds = [p["kind"] for p in harness.public()]
    assert "no_battle" in kinds and "duels_lapsed" in kinds
    (lapsed,) = [p for p in harness.public() if p["kind"] == "duels_lapsed"]
    assert "- duel 1: alice challenged bob" in lapsed["body"]
    harness.send("bob", "accept duel 1", T0 + DAY + timedelta(minutes=1), channel="#game-actions")
    harness.run(T0 + DAY + timedelta(minutes=2))
    assert "you were not challenged to duel 1, or it is no longer open" in harness.pms("bob")[-1]["body"]


def test_a_match_created_directly_lives_in_the_only_running_hall(cli) -> None:  # type: ignore[no-untyped-def]
    for name in ("alice", "bob", "carol"):
        cli("player", "add", name)
    result = cli("game", "new", "exoptosis", "--id", "m1", "--players", "alice,bob", ok=False)
    assert "is played in a running hall game; name it with --set hall=ID (running: none)" in result.output
    cli("game", "new", "hall", "--id", "h1", "--players", "alice,bob")
    result = cli("game", "new", "exoptosis", "--id", "m1", "--players", "alice,carol", ok=False)
    assert "carol has not joined hall game h1" in result.output
    cli("game", "new", "exoptosis", "--id", "m1", "--players", "alice,bob")
    cli("grant", "alice", "7H", "1", "--game", "h1")
    # The match is a child of h1: its ledger scope, so its inventories, are the cycle's.
    alice = json.loads(cli("player", "show", "alice", "--game", "m1", "--json").output)
    assert alice["cards"] == ["7 of Hearts"] and "m1" in alice["games"]
    cli("game", "new", "hall", "--id", "h2", "--players", "alice")
    result = cli("game", "new", "exoptosis", "--id", "m2", "--players", "alice,bob", ok=False)
    assert "(running: h1, h2)" in result.output
    cli("game", "new", "exoptosis", "--id", "m2", "--players", "alice,bob", "--set", "hall=h1")


def test_pms_of_a_player_in_a_hall_and_its_match_go_by_command_word(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "hall", "h1", T0, players=["alice", "bob"])
        create_game(session, "exoptosis", "m1", T0, players=["alice", "bob"])
        for card in "7C 8C 9C 10C".split():
            grant(session, "alice", card, 1, T0, "h1")
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "inventory", at)  # a Hall command: the Hall answers
    harness.send("alice", "hand 7C 8C 9C 10C", at + timedelta(minutes=1))  # the match's
    harness.send("alice", "help", at + timedelta(minutes=2))  # both games' commands
    harness.run(at + timedelta(minutes=3))
    inventory, hand, help_reply = [p for p in harness.pms("alice") if p["kind"] != "notice"]
    assert inventory["kind"] == "inventory" and "7 of Clubs" in inventory["body"]
    assert "Your hand is chosen (GH-10)" in hand["body"] and "game m1" in hand["body"]
    body = help_reply["body"]
    hall, match = body.index("Commands for game h1 ("), body.index("Commands for game m1 (")
    assert hall < match
    assert "- inventory" in body[hall:match] and "- hand " not in body[hall:match]
    assert "- hand 7H 8H 9S 10C — choose at least 4 cards" in body[match:]
    assert "- forfeit — leave the match" in body[match:]
    assert ("Each line goes to the game whose command it is; start a message with `game ID` to "
            "send it all to one of your games (h1, m1).") in body


def test_a_player_in_two_matches_is_asked_to_choose(harness) -> None:  # type: ignore[no-untyped-def]
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0)
        create_game(session, "hall", "h1", T0, players=["alice", "bob", "carol"])
        create_game(session, "exoptosis", "m1", T0, players=["alice", "bob"])
        create_game(session, "exoptosis", "m2", T0, players=["alice", "carol"])
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "forfeit", at, channel="#game-actions")  # refused even in public
    harness.send("alice", "game m2\nforfeit", at + timedelta(minutes=1))
    harness.run(at + timedelta(minutes=2))
    first, second = harness.pms("alice")
    assert "You play in several matches (m1, m2); start the message with a line 'game ID'." \
        in first["body"]
    assert "> forfeit\naccepted" in second["body"]
    assert harness.admin(lambda s: game_view(s, "m2"))["status"] == "finished"
    assert harness.admin(lambda s: game_view(s, "m1"))["status"] == "running"


def test_a_duel_of_a_cycle_with_the_longest_id_gets_an_id_that_fits(harness) -> None:  # type: ignore[no-untyped-def]
    """Choice (docs/EXOPTOSIS.md): HALL-duel-N longer than 64 characters keeps the cycle's
    id cut short and a hash of the whole of it, so the match is stored and names its cycle."""
    import hashlib

    hall = "the-gilded-hall-of-the-long-winter-cycle-of-twenty-twenty-seven"
    assert len(hall) == 63
    mark = hashlib.blake2b(hall.encode("utf-8"), digest_size=4).hexdigest()
    expected = f"{hall[:48]}-{mark}-duel-1"  # 48 + 1 + 8 + 1 + 6 characters
    assert len(expected) == 64 and expected.startswith("the-gilded-hall-of-the-long-winter-cycle-of-twen-")

    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "hall", hall, T0, players=["alice", "bob"])
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "duel bob", at, channel="#game-actions")
    harness.send("bob", "accept duel 1", at + timedelta(minutes=1), channel="#game-actions")
    harness.run(at + timedelta(minutes=2))
    (opened,) = [p for p in harness.public() if p["kind"] == "fight_opened"]
    assert f"match {expected}** with alice, bob" in opened["body"]
    match = harness.admin(lambda s: game_view(s, expected))
    assert (match["kind"], match["status"], match["players"]) == ("exoptosis", "running", ["alice", "bob"])


def test_a_match_ends_with_its_cycle_and_nothing_moves_after(harness) -> None:  # type: ignore[no-untyped-def]
    """GH-8 (docs/HALL.md, "The cycle's end"): when a member reaches the victory chips the
    cycle ends, and its open matches end with it: every stake goes back to whoever put it in,
    every card goes home, one post says so; a later command in the match is refused and no
    chip moves in the finished cycle."""
    def setup(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob"):
            add_player(session, name, T0)
        create_game(session, "hall", "h1", T0, players=["alice", "bob"])
        for name, cards in (("alice", "7C 8C 9C 10C"), ("bob", "2H 3H 4H 5H")):
            for card in cards.split():
                grant(session, name, card, 1, T0, "h1")
            grant(session, name, "chips", 10, T0, "h1")
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "duel bob", at, channel="#game-actions")
    harness.send("bob", "accept duel 1", at + timedelta(minutes=1), channel="#game-actions")
    harness.send("alice", "hand 7C 8C 9C 10C", at + timedelta(minutes=2))
    harness.send("bob", "hand 2H 3H 4H 5H", at + timedelta(minutes=3))
    harness.send("alice", "raise 5", at + timedelta(minutes=4))
    harness.send("bob", "match", at + timedelta(minutes=5))
    harness.run(at + timedelta(minutes=6))
    match = harness.admin(lambda s: game_view(s, "h1-duel-1"))
    assert (match["status"], match["detail"]["phase"]) == ("running", "play")

    def chips(name: str) -> int:
        return harness.admin(lambda s: player_view(s, name, "h1"))["chips"]

    assert (chips("alice"), chips("bob")) == (5, 5)  # 5 each in the pool
    # The host's grant brings alice to 25 chips outside the match: she wins the cycle.
    harness.admin(lambda s: grant(s, "alice", "chips", 20, at + timedelta(minutes=7), "h1"))
    hall = harness.admin(lambda s: game_view(s, "h1"))
    assert (hall["status"], hall["winner"]) == ("finished", "alice")
    match = harness.admin(lambda s: game_view(s, "h1-duel-1"))
    assert (match["status"], match["winner"], match["detail"]["result"]) == ("finished", None, "ended")
    assert match["deadlines"] == []
    # Stakes returned (5 + 20 + 5 = 30 for alice, 5 + 5 for bob), cards home.
    assert (chips("alice"), chips("bob")) == (30, 10)
    assert harness.admin(lambda s: player_view(s, "bob", "h1"))["cards"] == [
        "2 of Hearts", "3 of Hearts", "4 of Hearts", "5 of Hearts"]
    assert len(harness.admin(lambda s: player_view(s, "alice", "h1"))["cards"]) == 4
    harness.run(at + timedelta(minutes=8))
    (result,) = [p for p in harness.public() if p["kind"] == "result"]
    assert "**The Exoptosis duel ends with its cycle**: alice won the cycle (GH-8)" in result["body"]
    assert "the stakes (10 chips) are returned" in result["body"]
    assert "Cards home (GH-10):" in result["body"] and "2 of Hearts to bob" in result["body"]
    # Later commands in the match change nothing: the forfeit is refused, nobody is paid.
    harness.send("alice", "game h1-duel-1\nforfeit", at + timedelta(minutes=9))
    harness.run(at + timedelta(minutes=10))
    assert "is over" in harness.pms("alice")[-1]["body"]
    assert (chips("alice"), chips("bob")) == (30, 10)
    for game in ("h1-duel-1", "h1"):
        assert harness.admin(lambda s: replay_game(s, game)).ok
