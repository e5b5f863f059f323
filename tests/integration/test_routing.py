"""Typed inbound events, several channels per game and child games, on a real store.

Uses the test rulesets of ``board.py``: a board owns ``#board`` and ``#motions``; a whole
message in ``#motions`` is a motion, which edits, deletions and reactions then reach by its
message id; ``duel NAME`` opens a child ``duel`` game whose stakes come from the board's
inventories, and the board hears when the duel ends.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import select

from dealer.shell.admin import add_player, create_game
from dealer.views import game_view
from dealer.views import game_state
from dealer.store.models import Event, Game, GameChannel, Holding, Inbound, Seed

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def minutes(n: int) -> datetime:
    return T0 + timedelta(minutes=n)


def setup(h, channel: str | None = None) -> None:  # type: ignore[no-untyped-def]
    def make(session):  # type: ignore[no-untyped-def]
        for name in ("alice", "bob", "carol"):
            add_player(session, name, T0, chips=10)
        create_game(session, "board", "b1", T0, players=["alice", "bob"], channel=channel)
        create_game(session, "tally", "t1", T0, players=["alice", "carol"])
    h.admin(make)


def board_state(h):  # type: ignore[no-untyped-def]
    return h.admin(lambda s: game_state(s.get(Game, "b1"))[1])


def inbound(h, external_id: str):  # type: ignore[no-untyped-def]
    def read(session):  # type: ignore[no-untyped-def]
        row = session.scalars(select(Inbound).where(Inbound.external_id == external_id)).one()
        return row.status, row.game_id, row.outcome
    return h.admin(read)


def balances(h, scope: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
    def read(session):  # type: ignore[no-untyped-def]
        rows = session.scalars(select(Holding).where(Holding.account.startswith(f"{scope}/")))
        return {r.account: r.amount for r in rows if r.item == "chips"}
    return h.admin(read)


def channels_of(session, game_id: str) -> list[str]:  # type: ignore[no-untyped-def]
    return list(session.scalars(select(GameChannel.channel).where(GameChannel.game_id == game_id)
                                .order_by(GameChannel.channel)))


def test_a_game_owns_its_main_channel_and_the_ones_its_ruleset_declares(harness) -> None:  # type: ignore[no-untyped-def]
    setup(harness, channel="#club")
    channels = harness.admin(lambda s: channels_of(s, "b1"))
    assert channels == ["#club", "#motions"]
    assert harness.admin(lambda s: game_view(s, "b1"))["channel"] == "#club"  # --channel: the main one
    # A command in the main channel and a motion in the other both reach the board.
    harness.send("alice", "duel bob", minutes(1), channel="#club", id="cmd")
    harness.send("bob", "Members pay no fee", minutes(2), channel="#motions", id="mo1")
    # The board's default channel is not its own here: nothing there reaches it.
    harness.send("bob", "duel alice", minutes(3), channel="#board", id="elsewhere")
    harness.run(minutes(5))
    assert inbound(harness, "cmd")[:2] == ("applied", "b1")
    assert inbound(harness, "mo1")[:2] == ("applied", "b1")
    assert inbound(harness, "elsewhere")[:2] == ("ignored", None)
    state = board_state(harness)
    assert state.duels == 1
    assert list(state.motions) == ["mo1"]


def test_a_message_in_a_declared_channel_is_a_proposal_and_its_edits_deletion_and_votes_reach_it(harness) -> None:  # type: ignore[no-untyped-def]
    setup(harness)
    harness.send("alice", "Let the dice be fair", minutes(1), channel="#motions", id="mo1")
    harness.run(minutes(2))
    motion = board_state(harness).motions["mo1"]
    assert (motion.author, motion.text, motion.votes) == ("alice", "Let the dice be fair", [])
    assert any(p["body"].strip() == "alice moves: Let the dice be fair" for p in harness.public())
    assert inbound(harness, "mo1")[:2] == ("applied", "b1")

    # Edited, voted for, vote taken back, voted again by another: each finds the motion's game.
    harness.send("alice", "Let the dice be fairer", minutes(3), kind="edit", target="mo1", channel="#motions", id="ed1")
    harness.send("bob", "", minutes(4), kind="reaction", target="mo1", emoji="👍", channel="#motions", id="r1")
    harness.send("alice", "", minutes(5), kind="reaction", target="mo1", emoji="👍", channel="#motions", id="r2")
    harness.send("bob", "", minutes(6), kind="reaction", target="mo1", emoji="👍", removed=True, channel="#motions", id="r3")
    harness.send("carol", "", minutes(7), kind="reaction", target="mo1", emoji="🎉", channel="#motions", id="r4")
    harness.run(minutes(10))
    motion = board_state(harness).motions["mo1"]
    assert (motion.text, motion.votes) == ("Let the dice be fairer", ["alice"])
    for ident in ("ed1", "r1", "r2", "r3"):
        assert inbound(harness, ident)[:2] == ("applied", "b1"), ident
    status, game, outcome = inbound(harness, "r4")
    assert (status, game, outcome) == ("ignored", "b1", [{"result": "ignored", "detail": "only 👍 votes", "game": "b1"}])
    events = harness.admin(lambda s: [e.type for e in s.scalars(select(Event).where(Event.game_id == "b1"))])
    assert "motion.made" in events and "motion.edited" in events

    # Only the author may edit: bob is told why, privately, and nothing changes.
    harness.send("bob", "Let the dice be loaded", minutes(11), kind="edit", target="mo1", channel="#motions", id="ed2")
    harness.run(minutes(12))
    assert inbound(harness, "ed2")[:2] == ("rejected", "b1")
    (refusal,) = [p for p in harness.pms("bob") if "only the author" in p["body"]]
    assert "edited message mo1" in refusal["body"]
    assert board_state(harness).motions["mo1"].text == "Let the dice be fairer"

    harness.send("alice", "", minutes(13), kind="delete", target="mo1", channel="#motions", id="del1")
    harness.run(minutes(14))
    assert board_state(harness).motions["mo1"].withdrawn


def test_a_reaction_on_one_of_dealers_posts_goes_to_the_game_that_posted_it(harness) -> None:  # type: ignore[no-untyped-def]
    setup(harness)
    harness.run(minutes(1))  # delivers the opening posts
    (opening,) = [p for p in harness.public() if p["game"] == "b1"]
    (tally_opening,) = [p for p in harness.public() if p["game"] == "t1"]
    harness.send("bob", "", minutes(2), kind="reaction", target=str(opening["id"]), emoji="👀", channel="#board", id="r1")
    # The tally's ruleset reads no reaction: recorded as ignored, for the tally.
    harness.send("carol", "", minutes(3), kind="reaction", target=str(tally_opening["id"]), emoji="👀", channel="#tally", id="r2")
    harness.run(minutes(5))
    assert board_state(harness).acks == ["bob"]
    assert inbound(harness, "r1")[:2] == ("applied", "b1")
    assert inbound(harness, "r2") == ("ignored", "t1", [{"result": "ignored", "detail": "no rule uses it", "game": "t1"}])
    assert not harness.pms("carol")  # nothing to tell


def test_a_reaction_or_edit_on_a_players_message_goes_to_the_game_it_was_applied_to(harness) -> None:  # type: ignore[no-untyped-def]
    setup(harness)
    # alice plays in both games: her PM goes to the tally by its game line.
    harness.send("alice", "game t1\nadd 3", minutes(1), id="pm1")
    harness.send("alice", "duel bob", minutes(2), channel="#board", id="pub1")
    harness.run(minutes(3))
    assert inbound(harness, "pm1")[:2] == ("applied", "t1")
    assert inbound(harness, "pub1")[:2] == ("applied", "b1")
    harness.send("carol", "", minutes(4), kind="reaction", target="pm1", emoji="👍", id="r1")
    harness.send("alice", "add 4", minutes(5), kind="edit", target="pm1", id="e1")
    harness.send("bob", "", minutes(6), kind="reaction", target="pub1", emoji="👍", channel="#board", id="r2")
    harness.send("bob", "", minutes(7), kind="reaction", target="nowhere", emoji="👍", channel="#board", id="r3")
    harness.run(minutes(8))
    assert inbound(harness, "r1")[:2] == ("ignored", "t1")
    assert inbound(harness, "e1")[:2] == ("ignored", "t1")
    # The board counts a reaction on a message that is no motion as an acknowledgement.
    assert inbound(harness, "r2")[:2] == ("applied", "b1")
    assert board_state(harness).acks == ["bob"]
    status, game, outcome = inbound(harness, "r3")
    assert (status, game) == ("rejected", None)
    assert outcome == [{"result": "rejected",
                        "detail": "its target 'nowhere' is no message or post of a game dealer knows"}]
    (told,) = [p for p in harness.pms("bob") if "nowhere" in p["body"]]
    assert "dealer knows no message or post 'nowhere' of a game, so your reaction changes " \
           "nothing." in told["body"].replace("\\", "")


def test_a_child_game_moves_its_parents_items_and_the_parent_hears_its_end(harness) -> None:  # type: ignore[no-untyped-def]
    setup(harness)
    assert balances(harness, "b1") == {"b1/player:alice": 5, "b1/player:bob": 5}
    harness.send("alice", "duel bob", minutes(1), channel="#board", id="d1")
    harness.run(minutes(2))
    child = harness.admin(lambda s: s.get(Game, "b1-duel-1"))
    assert (child.kind, child.parent_id, child.status, child.channel) == ("duel", "b1", "running", "#board")
    # Its own fair-source epoch, deadline and posts; no channel of its own.
    assert harness.admin(lambda s: s.scalar(select(Seed.commitment).where(Seed.game_id == "b1-duel-1"))) is not None
    assert [d["name"] for d in harness.admin(lambda s: game_view(s, "b1-duel-1"))["deadlines"]] == ["end"]
    assert harness.admin(lambda s: channels_of(s, "b1-duel-1")) == []
    assert [p["body"].strip() for p in harness.public() if p["game"] == "b1-duel-1"] == [
        "A duel of b1 opens: alice against bob."
    ]
    # The stakes left the board's inventories for the duel's pool, in the board's scope.
    assert balances(harness, "b1") == {
        "b1/player:alice": 3, "b1/player:bob": 3, "b1/pool:b1-duel-1": 4,
    }
    # The global wallets are untouched.
    assert harness.admin(lambda s: {h.account: h.amount for h in s.scalars(select(Holding).where(Holding.account.in_(["player:alice", "player:bob"])))}) == {"player:alice": 10, "player:bob": 10}

    harness.run(minutes(61))
    view = harness.admin(lambda s: game_view(s, "b1-duel-1"))
    assert view["status"] == "finished"
    winner = view["winner"]
    loser = "bob" if winner == "alice" else "alice"
    # 5 - 2 staked + 4 from the pool + 1 bonus from the board; the pool is empty.
    assert balances(harness, "b1") == {
        f"b1/player:{winner}": 8, f"b1/player:{loser}": 3, "b1/pool:b1-duel-1": 0,
    }
    assert board_state(harness).results == {"b1-duel-1": winner}
    parent_events = harness.admin(lambda s: [(e.type, e.data) for e in s.scalars(select(Event).where(Event.game_id == "b1").order_by(Event.seq))])
    heard = [data for type_, data in parent_events if type_ == "child.finished"]
    assert [(d["game"], d["winner"], d["status"]) for d in heard] == [("b1-duel-1", winner, "finished")]
    assert any(p["body"].strip() == f"b1-duel-1 is over; {winner} takes the bonus." for p in harness.public())
    assert harness.admin(lambda s: game_view(s, "b1"))["status"] == "running"


def test_a_child_game_whose_id_is_taken_is_refused_before_anything_is_written(harness) -> None:  # type: ignore[no-untyped-def]
    setup(harness)

    def squat(session):  # type: ignore[no-untyped-def]
        create_game(session, "tally", "b1-duel-1", T0, players=["alice", "bob"])
    harness.admin(squat)
    harness.send("alice", "duel bob", minutes(1), channel="#board", id="d1")
    harness.run(minutes(2))
    assert inbound(harness, "d1")[0] == "rejected"
    assert board_state(harness).duels == 0
    assert balances(harness, "b1") == {"b1/player:alice": 5, "b1/player:bob": 5}


def test_a_player_reaches_a_child_game_with_its_id_and_the_parent_hears_a_concession(harness) -> None:  # type: ignore[no-untyped-def]
    setup(harness)
    harness.send("alice", "duel bob", minutes(1), channel="#board", id="d1")
    harness.run(minutes(2))
    # bob plays in the board and its duel: the game line chooses the duel.
    harness.send("bob", "game b1-duel-1\nconcede", minutes(3), id="c1")
    harness.run(minutes(4))
    assert inbound(harness, "c1")[:2] == ("applied", "b1-duel-1")
    assert harness.admin(lambda s: game_view(s, "b1-duel-1"))["winner"] == "alice"
    assert board_state(harness).results == {"b1-duel-1": "alice"}
    assert balances(harness, "b1") == {"b1/player:alice": 8, "b1/player:bob": 3, "b1/pool:b1-duel-1": 0}
    # The duel's deadline was cancelled with the concession: nothing more happens at its time.
    harness.run(minutes(61))
    assert board_state(harness).results == {"b1-duel-1": "alice"}


def test_a_child_games_deadline_due_between_two_messages_of_one_pass_fires_between_them(harness) -> None:  # type: ignore[no-untyped-def]
    # The duel opened by the first message ends (its deadline, an hour later) before the
    # second message is sent: applied in one pass, the deadline still comes first, so the
    # late concession finds the duel over.
    setup(harness)
    harness.send("alice", "duel bob", minutes(1), channel="#board", id="d1")
    harness.send("bob", "game b1-duel-1\nconcede", minutes(90), id="c1")
    harness.run(minutes(120))
    view = harness.admin(lambda s: game_view(s, "b1-duel-1"))
    assert view["status"] == "finished"
    assert "deadline.fired" in [e["type"] for e in view["history"]]
    assert inbound(harness, "c1")[0] == "rejected"
