"""Off to the Races through the in-memory shell: seating, entry, betting, race, payout, endings."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dealer.fairness import commitment
from dealer.games import rules_for
from dealer.games.base import Rejected
from dealer.games.races import OffToTheRaces
from dealer.games.races.commands import EnterHorse, PlaceBet, Sit
from dealer.games.races.state import RacesSettings
from dealer.games.races.testing import SEED, T0, RaceShell, minutes
from dealer.ledger import MINT

RULES = OffToTheRaces()
HOUR = timedelta(hours=1)


def two_horse_table(**settings) -> RaceShell:
    """alice (K♠) and bob (2♥) seated with horses, ready to close; 100 chips each for 4."""
    shell = RaceShell.create(
        chips={"alice": 100, "bob": 100, "carol": 100, "dave": 100},
        cards={"alice": ["KS"], "bob": ["2H"], "carol": ["KS", "red joker"]},
        **settings,
    )
    shell.accept("alice", "sit", T0 + minutes(1))
    shell.accept("bob", "sit", T0 + minutes(2))
    shell.accept("alice", "horse Thunder Hooves card king of spades", T0 + minutes(3))
    shell.accept("bob", "horse Lightning card 2h", T0 + minutes(4))
    shell.accept("alice", "ready", T0 + minutes(5))
    return shell


def betting_table(**settings) -> RaceShell:
    """Seating closed at T0+6m with NPCs 5♣ and 6♥: the field K♠, 2♥, 5♣, 6♥ (length 8)."""
    shell = two_horse_table(**settings)
    shell.script("5C", "6H")
    shell.accept("bob", "ready", T0 + minutes(6))
    assert shell.state.phase == "betting"
    return shell


# --- the contract ---------------------------------------------------------------------


def test_registered_with_its_class_attributes():
    rules = rules_for("races")
    assert isinstance(rules, OffToTheRaces)
    assert (rules.kind, rules.title) == ("races", "Off to the Races")
    assert rules.default_channel == "#the-raceway" and rules.open_to_all


def test_settings_defaults_and_parsing():
    s = RacesSettings()
    assert (s.seating_window, s.min_horses, s.betting_window) == (HOUR, 4, HOUR)
    assert s.house_share_percent == 10 and s.idle_action_after is None
    s = RacesSettings(idle_action_after="30m", seating_window="2h", min_horses="6")
    assert s.idle_action_after == minutes(30) and s.seating_window == 2 * HOUR
    assert RacesSettings.model_validate(s.model_dump(mode="json")) == s
    assert RacesSettings(idle_action_after="off").idle_action_after is None
    with pytest.raises(ValueError):
        RacesSettings(betting_window="0m")
    with pytest.raises(ValueError):
        RacesSettings(min_horses=53)


def test_parse_commands():
    assert RULES.parse("SIT") == Sit()
    # The name may contain " card ": the split is on the last one.
    assert RULES.parse("horse Wild Card Joker card red joker") == EnterHorse("Wild Card Joker", "RJ")
    assert RULES.parse("horse X card card KS") == EnterHorse("X card", "KS")
    assert RULES.parse("Horse  Thunder Hooves card K♠") == EnterHorse("Thunder Hooves", "KS")
    assert RULES.parse("horse Ace CARD Holo 7H") == EnterHorse("Ace", "7H")
    assert RULES.parse("bet 10 on Thunder Hooves") == PlaceBet(10, "Thunder Hooves")
    assert RULES.parse("BET 5 chips on run on sentences") == PlaceBet(5, "run on sentences")
    for bad, rule in [("bet 0 on X", "OR-5"), ("bet -3 on X", "OR-5"), ("bet ² on X", "OR-5"),
                      ("horse Nameless", "OR-2"), ("horse X card queen of cups", "OR-2"),
                      ("horse card KS", "OR-2"), ("dance", None)]:
        with pytest.raises(Rejected) as caught:
            RULES.parse(bad)
        assert caught.value.rule == rule, bad


def test_every_help_line_parses():
    # Examples are help text and tests at once (STYLE.md); the declared ones are checked
    # for every game in test_commands.py, the ones written for the table as it stands here.
    for shell, who in [(two_horse_table(), "alice"), (two_horse_table(), "carol"),
                       (betting_table(), "bob"), (racing_table(), "bob")]:
        for line in RULES.help(shell.state, who):
            # help cannot see the inventory, so the horse line leaves CARD to the player
            RULES.parse(line.split(" — ")[0].replace(" card CARD", " card 7H"))


@pytest.mark.parametrize("name", ["\u2800", "\u3164 \u3164", "\u200b"])
def test_a_name_must_show_something(name):
    with pytest.raises(Rejected) as caught:
        RULES.parse(f"horse {name} card KS")
    assert caught.value.rule == "OR-2" and "visible" in caught.value.what


def test_name_length_18_accepted_19_refused():
    assert RULES.parse("horse " + "x" * 18 + " card KS").name == "x" * 18
    assert RULES.parse("horse   " + "y" * 18 + "   card KS").name == "y" * 18  # trimmed
    with pytest.raises(Rejected) as caught:
        RULES.parse("horse " + "z" * 19 + " card KS")
    assert caught.value.rule == "OR-2" and "19" in caught.value.what


# --- opening and seating (OR-1 to OR-4) -------------------------------------------------


def test_opening_post_publishes_the_commitment():
    shell = RaceShell.create()
    assert shell.state.phase == "seating" and shell.deadlines == {}
    [opened] = shell.posts("opened")
    assert commitment(SEED) in opened.body and "#the-raceway" in opened.body
    assert RULES.summary(shell.state).status == "running"


def test_a_table_with_a_later_start_is_pending_until_it_opens():
    shell = RaceShell.create(players=["alice"], start=T0 + HOUR, chips={"alice": 5})
    assert RULES.summary(shell.state).status == "pending"
    assert shell.deadlines == {"open": T0 + HOUR}
    rejected = shell.refuse("bob", "sit", T0 + minutes(10))
    assert "opens at 2026-12-01 11:00 UTC" in rejected.what
    shell.fire_due(T0 + HOUR)
    assert shell.state.phase == "seating" and shell.state.seated == ["alice"]
    # OR-3: the named player sat at the opening, so the window runs from then.
    assert shell.deadlines == {"seating": T0 + 2 * HOUR}



def test_a_message_sent_at_the_opening_instant_counts():
    # A message sent at the start counts, in every game: the table opens, then seats bob.
    shell = RaceShell.create(players=["alice"], start=T0 + HOUR, chips={"alice": 5})
    shell.accept("bob", "sit", T0 + HOUR)
    assert shell.state.phase == "seating" and shell.state.seated == ["alice", "bob"]
    assert shell.deadlines == {"seating": T0 + 2 * HOUR}  # the opening's deadline is spent
    assert len(shell.posts("opened")) == 1
    assert shell.state.phases[-1].started_at == T0 + HOUR


def test_seating_window_starts_with_the_first_sit():
    shell = RaceShell.create()
    shell.accept("alice", "sit", T0 + minutes(20))
    shell.accept("bob", "sit", T0 + minutes(30))
    assert shell.deadlines == {"seating": T0 + minutes(80)}  # 20 min + 1 h, not moved by bob
    assert shell.refuse("alice", "sit", T0 + minutes(31)).rule == "OR-1"
    assert [r.kind for r in shell.replies("alice")] == ["reply_sat"]
    assert "2026-12-01 11:20 UTC" in shell.posts("seated")[0].body


def test_duplicate_names_differing_in_case_or_spaces_are_refused():
    shell = two_horse_table()
    shell.accept("carol", "sit", T0 + minutes(7))
    for line in ["horse THUNDER HOOVES card red joker", "horse  thunder hooves  card red joker"]:
        rejected = shell.refuse("carol", line, T0 + minutes(8))
        assert rejected.rule == "OR-2" and "already entered" in rejected.what
    shell.accept("carol", "horse Thunder Hoof card red joker", T0 + minutes(9))


def test_duplicate_cards_are_refused_jokers_by_colour():
    shell = two_horse_table()
    shell.accept("carol", "sit", T0 + minutes(7))
    rejected = shell.refuse("carol", "horse Shadow card KS", T0 + minutes(8))
    assert rejected.rule == "OR-2" and "King of Spades" in rejected.what
    shell.accept("carol", "horse Shadow card red joker", T0 + minutes(9))
    # dave owns no joker at all, and the red one runs already.
    shell.accept("dave", "sit", T0 + minutes(10))
    assert "another horse" in shell.refuse("dave", "horse Echo card RJ", T0 + minutes(11)).what
    assert "do not own" in shell.refuse("dave", "horse Echo card BJ", T0 + minutes(11)).what


def test_a_card_not_owned_is_refused_and_holo_counts():
    shell = RaceShell.create(cards={"alice": ["holo 7H"]})
    shell.accept("alice", "sit", T0)
    rejected = shell.refuse("alice", "horse Sprinter card 8h", T0 + minutes(1))
    assert rejected.rule == "OR-2" and "do not own the 8 of Hearts" in rejected.what
    shell.accept("alice", "horse Sprinter card 7h", T0 + minutes(2))  # a holo 7♥ is a 7♥
    # The card stays in the inventory (OR-2): no ledger movement at all.
    assert shell.balances[("player:alice", "card:7H:holo")] == 1


def test_only_a_seated_player_enters_a_horse():
    shell = RaceShell.create(cards={"alice": ["KS"]})
    assert shell.refuse("alice", "horse Nope card KS", T0).allowed == ["sit"]


def test_entering_again_replaces_the_horse():
    shell = two_horse_table()
    shell.accept("alice", "horse Storm card KS", T0 + minutes(5))
    assert [(h.name, h.owner) for h in shell.state.horses] == [("Storm", "alice"), ("Lightning", "bob")]
    assert "replaced the horse Thunder Hooves" in shell.posts("horse_entered")[-1].body
    # Its old name is free again, for anyone.
    shell.accept("carol", "sit", T0 + minutes(6))
    shell.accept("carol", "horse Thunder Hooves card red joker", T0 + minutes(7))


def test_a_refused_entry_is_never_offered_again_and_help_offers_a_free_name():
    # carol owns K♠ and the Red Joker; alice's Thunder Hooves runs as K♠.
    shell = two_horse_table()
    shell.accept("carol", "sit", T0 + minutes(7))
    refused_line = "horse Thunder Hooves card king of spades"
    rejected = shell.refuse("carol", refused_line, T0 + minutes(8))
    offered = [line.split(" — ")[0] for line in rejected.allowed]
    # The name is taken and so is the card: a free name with carol's only free card.
    assert offered == ["horse Silver Blaze card Red Joker"]
    help_lines = RULES.help(shell.state, "carol")
    assert not any(line.startswith(refused_line) for line in help_lines)
    entry = next(line for line in help_lines if line.startswith("horse "))
    assert entry.startswith("horse Silver Blaze card CARD — ")
    assert "already taken: Thunder Hooves (K♠), Lightning (2♥)" in entry
    # What was offered is accepted as it stands.
    shell.accept("carol", offered[0], T0 + minutes(9))


def test_a_refused_card_keeps_the_free_name_and_offers_the_players_own_cards():
    shell = RaceShell.create(cards={"alice": ["7H", "holo 9C", "QD"]})
    shell.accept("alice", "sit", T0)
    rejected = shell.refuse("alice", "horse Sprinter card 8h", T0 + minutes(1))
    assert [line.split(" — ")[0] for line in rejected.allowed] == [
        "horse Sprinter card 7 of Hearts", "horse Sprinter card Queen of Diamonds",
        "horse Sprinter card 9 of Clubs"]
    # A player with no card free to run is told so, and offered to stand.
    shell = RaceShell.create(cards={"alice": ["KS"]})
    shell.accept("alice", "sit", T0)
    shell.accept("bob", "sit", T0 + minutes(1))
    shell.accept("alice", "horse Thunder card KS", T0 + minutes(2))
    rejected = shell.refuse("bob", "horse Echo card KS", T0 + minutes(3))
    assert len(rejected.allowed) == 1 and rejected.allowed[0].startswith("stand — ")
    assert "you hold no card" in rejected.allowed[0]
    ready = shell.refuse("bob", "ready", T0 + minutes(4))
    assert ready.allowed == rejected.allowed
    assert "you hold no card that another horse does not already run as" in (
        shell.replies("bob", "reply_sat")[0].body)


def test_the_sit_reply_offers_an_entry_the_player_could_send():
    # carol sits after alice's Thunder Hooves (K♠) is in: her example is a free name and
    # the first card she holds that no other horse runs as (the Red Joker, not her K♠).
    shell = two_horse_table()
    shell.accept("carol", "sit", T0 + minutes(7))
    assert "e.g. `horse Silver Blaze card Red Joker`" in shell.replies("carol", "reply_sat")[0].body


def test_ready_needs_a_horse():
    shell = RaceShell.create()
    shell.accept("alice", "sit", T0)
    assert shell.refuse("alice", "ready", T0 + minutes(1)).rule == "OR-3"


def test_seating_closes_early_when_everyone_is_ready():
    shell = betting_table()
    closed = shell.posts("seating_closed")[0]
    assert closed.at == T0 + minutes(6)
    # OR-4: 2 horses entered, 2 NPCs drawn: 5♣ and 6♥; length 2 x 4 = 8.
    assert [(h.name, h.card, h.owner) for h in shell.state.horses] == [
        ("Thunder Hooves", "KS", "alice"), ("Lightning", "2H", "bob"),
        ("5 of Clubs", "5C", None), ("6 of Hearts", "6H", None),
    ]
    assert shell.state.length == 8
    assert "seating" not in shell.deadlines
    assert shell.deadlines == {"betting": T0 + minutes(66)}
    assert "NPC horse" in closed.body and "entered by alice" in closed.body


def test_an_npc_equal_to_an_existing_card_or_name_is_drawn_again():
    shell = RaceShell.create(cards={"alice": ["KS"], "bob": ["2H"]}, min_horses=3)
    shell.accept("alice", "sit", T0)
    shell.accept("bob", "sit", T0)
    shell.accept("alice", "horse Thunder card KS", T0 + minutes(1))
    shell.accept("bob", "horse 7 of Clubs card 2H", T0 + minutes(1))
    shell.accept("alice", "ready", T0 + minutes(2))
    shell.script("KS", "7C", "9D")  # K♠ runs already; "7 of Clubs" is bob's horse's name
    shell.accept("bob", "ready", T0 + minutes(3))
    assert [h.card for h in shell.state.horses] == ["KS", "2H", "9D"]
    body = shell.posts("seating_closed")[0].body
    assert "a horse already runs as that card, drawn again" in body
    assert "a horse already has that name, drawn again" in body


def test_a_player_without_a_horse_when_the_window_ends_is_stood_up():
    shell = RaceShell.create(cards={"alice": ["KS"]})
    shell.accept("alice", "sit", T0)
    shell.accept("bob", "sit", T0 + minutes(5))
    shell.accept("alice", "horse Thunder card KS", T0 + minutes(10))
    shell.fire_due(T0 + HOUR)
    assert shell.state.phase == "betting" and shell.state.seated == ["alice"]
    assert len(shell.state.horses) == 4  # 1 entered + 3 NPCs
    assert "Stood up for having no horse: bob" in shell.posts("seating_closed")[0].body
    # OR-9: bob sat and was stood up, so he stays one of the table's players (his bets
    # are routed here) and any winnings of his go to void.
    assert shell.state.left == ["bob"]
    assert RULES.summary(shell.state).players == ["alice", "bob"]


def test_no_horse_at_all_closes_the_table_without_a_race():
    shell = RaceShell.create()
    shell.accept("alice", "sit", T0)
    shell.fire_due(T0 + HOUR)
    assert shell.state.phase == "finished" and shell.state.outcome == "no_race"
    summary = RULES.summary(shell.state)
    assert summary.status == "finished" and summary.winner is None
    assert SEED in shell.posts("no_race")[0].body  # the server seed is revealed
    assert shell.deadlines == {}
    assert "closed" in shell.refuse("alice", "sit", T0 + 2 * HOUR).what


def test_standing_during_seating_withdraws_the_horse():
    shell = two_horse_table()
    shell.accept("bob", "stand", T0 + minutes(6))
    # alice is the only one seated, with a horse, and ready: seating closes at once.
    assert shell.state.phase == "betting"
    assert [h.owner for h in shell.state.horses][:1] == ["alice"]
    assert "bob" not in [h.owner for h in shell.state.horses]


def test_everyone_standing_during_seating_ends_the_table():
    shell = RaceShell.create()
    shell.accept("alice", "sit", T0)
    shell.accept("alice", "stand", T0 + minutes(1))
    assert shell.state.outcome == "abandoned" and shell.deadlines == {}
    body = shell.posts("abandoned")[0].body
    assert "nothing to refund" in body and SEED in body


# --- betting (OR-5) -------------------------------------------------------------------------


def test_a_bet_moves_chips_into_the_pool_at_once():
    shell = betting_table()
    shell.accept("carol", "bet 30 on thunder hooves", T0 + minutes(10))
    assert shell.chips("carol") == 70 and shell.chips("pool") == 30
    assert shell.state.bets[0].horse == "Thunder Hooves"
    assert "70 chips left" in shell.replies("carol", "reply_bet")[0].body


def test_a_bet_larger_than_the_wallet_fails_clearly():
    shell = betting_table()
    rejected = shell.refuse("carol", "bet 101 on Lightning", T0 + minutes(10))
    assert rejected.rule == "OR-5"
    assert rejected.what == "you have 100 chips: a bet of 101 is larger than your wallet"
    assert shell.chips("carol") == 100


def test_counts_of_one_chip_are_singular():
    shell = betting_table()
    shell.accept("carol", "bet 99 on thunder hooves", T0 + minutes(10))
    reply = shell.replies("carol", "reply_bet")[0].body
    assert "99 chips on Thunder Hooves" in reply and "you have 1 chip left" in reply
    rejected = shell.refuse("carol", "bet 2 on Lightning", T0 + minutes(11))
    assert rejected.what == "you have 1 chip: a bet of 2 is larger than your wallet"
    shell.accept("carol", "bet 1 on Lightning", T0 + minutes(12))
    reply = shell.replies("carol", "reply_bet")[1].body
    assert "Bet accepted (OR-5): 1 chip on Lightning (your total on it: 1)." in reply
    assert "you have 0 chips left. Pool: 100 chips." in reply


def test_a_bet_on_an_unknown_horse_lists_the_horses():
    shell = betting_table()
    rejected = shell.refuse("carol", "bet 5 on Pegasus", T0 + minutes(10))
    assert rejected.allowed[0] == "bet 5 on Thunder Hooves"


def test_betting_closes_when_everyone_seated_and_interested_has_bet_or_passed():
    shell = two_horse_table()
    shell.accept("carol", "interested", T0 + minutes(5))
    shell.script("5C", "6H")
    shell.accept("bob", "ready", T0 + minutes(6))
    shell.accept("alice", "bet 10 on Lightning", T0 + minutes(10))
    shell.accept("bob", "pass", T0 + minutes(11))
    assert shell.state.phase == "betting"  # still waiting for carol, who is interested
    shell.accept("dave", "bet 10 on 5 of clubs", T0 + minutes(12))  # dave is not waited for
    assert shell.state.phase == "betting"
    shell.accept("carol", "bet 20 on Thunder Hooves", T0 + minutes(13))
    assert shell.state.phase == "racing" and shell.deadlines == {}
    # Pool 10 + 10 + 20 = 40; house floor(10 % x 40) = 4.
    assert shell.chips("house") == 4 and shell.chips("pool") == 36
    closed = shell.posts("betting_closed")[0].body
    assert "Pool: 40 chips. House share: 4" in closed and "Prize for the winners: 36" in closed


def test_betting_closes_an_hour_after_the_last_bet():
    shell = betting_table()  # opened at 10:06: closes at 11:06 with no bet
    shell.accept("carol", "bet 10 on Lightning", T0 + minutes(30))
    assert shell.deadlines == {"betting": T0 + minutes(90)}  # moved to 10:30 + 1 h
    shell.accept("alice", "pass", T0 + minutes(40))  # a pass does not move it
    assert shell.deadlines == {"betting": T0 + minutes(90)}
    shell.fire_due(T0 + minutes(89))
    assert shell.state.phase == "betting"
    shell.fire_due(T0 + minutes(90))
    assert shell.state.phase == "racing"
    # Pool 10: house floor(1.0) = 1, prize 9.
    assert (shell.chips("house"), shell.chips("pool")) == (1, 9)
    assert "no bet came within the betting window" in shell.posts("betting_closed")[0].body


def test_a_player_standing_during_betting_is_no_longer_waited_for():
    shell = betting_table()
    shell.accept("alice", "pass", T0 + minutes(7))
    shell.accept("carol", "bet 5 on Lightning", T0 + minutes(8))  # carol is not waited for
    shell.accept("alice", "bet 5 on Lightning", T0 + minutes(9))  # a bet after a pass counts
    assert shell.state.phase == "betting" and shell.chips("pool") == 10
    shell.accept("bob", "stand", T0 + minutes(10))  # bob was the last one waited for
    assert shell.state.phase == "racing" and shell.state.seated == ["alice"]


def test_an_interested_player_who_stands_is_still_waited_for():
    shell = two_horse_table()
    shell.accept("bob", "interested", T0 + minutes(5))
    shell.script("5C", "6H")
    shell.accept("bob", "ready", T0 + minutes(6))
    shell.accept("alice", "pass", T0 + minutes(7))
    shell.accept("bob", "stand", T0 + minutes(8))
    assert shell.state.phase == "betting"
    shell.accept("bob", "pass", T0 + minutes(9))
    assert shell.state.phase == "racing"


def test_a_deadline_of_a_closed_phase_does_nothing():
    shell = racing_table()
    ctx = shell.context(T0 + minutes(30))
    assert RULES.on_deadline(ctx, shell.state, "betting") == shell.state
    assert RULES.on_deadline(ctx, shell.state, "seating") == shell.state
    assert ctx.posts == [] and ctx.deadline_changes == {}


def test_betting_with_no_bet_closes_an_hour_after_opening():
    shell = betting_table()
    shell.fire_due(T0 + minutes(66))
    assert shell.state.phase == "racing" and shell.state.pool == 0


def test_a_bet_sent_before_betting_closed_but_handled_after_is_too_late():
    shell = betting_table()
    shell.fire_due(T0 + minutes(66))
    rejected = shell.refuse("carol", "bet 5 on Lightning", T0 + minutes(65), fire_first=False)
    assert rejected.rule == "OR-5"
    assert rejected.what.startswith("too late") and "during betting" in rejected.what
    assert "11:06" in rejected.what


def test_no_bets_before_betting_opens():
    shell = two_horse_table()
    assert shell.refuse("carol", "bet 5 on Lightning", T0 + minutes(5)).allowed == ["interested"]


# --- the race (OR-6 to OR-8) and the payout (OR-9) --------------------------------------


def racing_table(**settings) -> RaceShell:
    """Bets: carol 20 and alice 30 on Thunder Hooves, dave 10 on the NPC 5♣, bob 50 on
    Lightning (bob bets last, so betting closes at 10:13). Pool 110, house 11, P = 99."""
    shell = betting_table(**settings)
    shell.accept("carol", "bet 20 on Thunder Hooves", T0 + minutes(10))
    shell.accept("dave", "bet 10 on 5 of Clubs", T0 + minutes(11))
    shell.accept("alice", "bet 30 on Thunder Hooves", T0 + minutes(12))
    shell.accept("bob", "bet 50 on Lightning", T0 + minutes(13))
    assert shell.state.phase == "racing"
    assert (shell.chips("house"), shell.chips("pool")) == (11, 99)
    return shell


def test_a_full_race_with_laps_and_its_payout():
    """Field K♠ (alice), 2♥ (bob), 5♣ and 6♥ (NPCs), length 8; positions in that order.

    race K♥ -> K♠ 2♥ 6♥: (1,1,0,1)     race K♣ -> K♠ 5♣: (2,1,1,1), min 1: Lap owed (k 0)
    lap 3♦ -> 2♥ 6♥ back: (2,0,1,0)
    race K♥: (3,1,1,1)  race K♣: (4,1,2,1)  race K♥: (5,2,2,2), min 2: Lap owed (k 1)
    lap 3♦: (5,1,2,1)
    race K♥: (6,2,2,2)  race K♣: (7,2,3,2)  race K♥: (8,3,3,3), min 3: Lap owed (k 2)
    lap 3♦: (8,2,3,2)
    race K♠ -> K♠ 5♣: (9,2,4,2): Thunder Hooves wins (9 > 8), no Lap owed.

    Payout: P = 99, one winner: allocation 99; on Thunder Hooves carol 20 and alice 30,
    T = 50: carol floor(99 x 20 / 50) = floor(39.6) = 39, alice floor(99 x 30 / 50) =
    floor(59.4) = 59; 99 - 98 = 1 to void. dave's 10 on the NPC and bob's 50 are lost.
    """
    shell = racing_table()
    draws = ["KH", "KC", "3D", "KH", "KC", "KH", "3D", "KH", "KC", "KH", "3D", "KS"]
    shell.script(*draws)
    expected = [(1, 1, 0, 1), (2, 1, 1, 1), (2, 0, 1, 0), (3, 1, 1, 1), (4, 1, 2, 1),
                (5, 2, 2, 2), (5, 1, 2, 1), (6, 2, 2, 2), (7, 2, 3, 2), (8, 3, 3, 3),
                (8, 2, 3, 2), (9, 2, 4, 2)]
    at = T0 + minutes(20)
    for step, positions in enumerate(expected):
        at += minutes(1)
        if shell.state.lap_owed:
            # OR-8: no Race Action while a Lap is owed; the refusal draws nothing.
            assert shell.refuse("bob", "race", at).allowed == ["lap"]
            shell.accept("bob", "lap", at)
        else:
            assert shell.refuse("alice", "lap", at).rule == "OR-8"
            shell.accept("alice", "race", at)
        assert tuple(h.position for h in shell.state.horses) == positions, step
    assert len(shell.posts("lap_owed")) == 3
    assert shell.state.phase == "finished" and shell.state.winners == ["Thunder Hooves"]
    assert (shell.chips("carol"), shell.chips("alice")) == (100 - 20 + 39, 100 - 30 + 59)
    assert (shell.chips("bob"), shell.chips("dave")) == (50, 90)
    assert (shell.chips("house"), shell.chips("void"), shell.chips("pool")) == (11, 1, 0)
    assert set(shell.totals().values()) == {0}
    result = shell.posts("result")[0].body
    assert "carol bet 20 on Thunder Hooves: receives 39 chips" in result
    assert "alice bet 30 on Thunder Hooves: receives 59 chips" in result
    assert "dave bet 10 on 5 of Clubs: receives 0 chips" in result
    assert "rounding remainder of Thunder Hooves's allocation" in result
    assert SEED in result
    summary = RULES.summary(shell.state)
    assert summary.status == "finished" and summary.winner == "alice" and summary.scores is None
    assert summary.players == ["alice", "bob", "carol", "dave"]
    assert summary.detail["pool"] == 110 and summary.detail["horses"][0]["position"] == 9
    assert "closed" in shell.refuse("alice", "race", at + minutes(1)).what


def test_two_winners_and_an_npc_winner_at_once():
    # K♠ at 8 and 5♣ (NPC) at 8 after these draws; then a black 7♣ moves both to 9.
    # P = 99, W = 2: allocation floor(99 / 2) = 49 each, 1 to void for the split.
    # Thunder Hooves: carol floor(49 x 20 / 50) = floor(19.6) = 19, alice floor(49 x 30 / 50)
    # = floor(29.4) = 29, rounding 1 to void. The NPC's 49 go to void (dave gets nothing).
    # void = 1 + 1 + 49 = 51.
    shell = racing_table()
    # Black cards only ever move K♠ and 5♣; the hearts never leave 0, so no Lap is owed.
    shell.script(*["9S"] * 8, "7C")
    at = T0 + minutes(20)
    while shell.state.phase == "racing":
        at += minutes(1)
        shell.accept("bob", "race", at)
    assert shell.state.winners == ["Thunder Hooves", "5 of Clubs"]
    assert (shell.chips("carol"), shell.chips("alice"), shell.chips("dave")) == (99, 99, 90)
    assert shell.chips("void") == 51 and shell.chips("pool") == 0
    assert "the allocation of the NPC horse 5 of Clubs" in shell.posts("result")[0].body


def test_a_winner_who_stood_up_gets_nothing_but_its_horse_races_on():
    # alice stands during the race: Thunder Hooves keeps racing and wins. OR-7: alice, whose
    # horse is still in the race, may race although she stood up; she and bob take turns.
    shell = racing_table()
    shell.accept("alice", "stand", T0 + minutes(15))
    assert shell.state.left == ["alice"] and shell.state.seated == ["bob"]
    shell.script(*["KS"] * 9)
    at = T0 + minutes(20)
    racer = "alice"
    while shell.state.phase == "racing":
        at += minutes(1)
        shell.accept(racer, "race", at)
        racer = "bob" if racer == "alice" else "alice"
    assert "by alice" in shell.posts("race_action")[0].body
    assert shell.state.winners == ["Thunder Hooves", "5 of Clubs"]  # K♠ black moves 5♣ too
    # W = 2: allocation floor(99 / 2) = 49, 1 to void. Thunder: alice floor(49 x 30 / 50) =
    # 29 to void (stood up), carol floor(49 x 20 / 50) = 19, rounding 1. NPC: 49 to void.
    assert shell.chips("alice") == 70 and shell.chips("carol") == 99
    assert shell.chips("void") == 1 + 29 + 1 + 49
    assert "who stood up before the race ended" in shell.posts("result")[0].body
    # Interpretation (docs/RACES.md): the game's winner is a winning horse's owner who still
    # wins something; alice stood up, her winnings went void, so the table has no winner.
    assert RULES.summary(shell.state).winner is None


def test_only_players_with_a_horse_may_race():
    shell = racing_table()
    rejected = shell.refuse("carol", "race", T0 + minutes(20))
    assert rejected.rule == "OR-7" and "only a player with a horse in the race" in rejected.what
    assert shell.refuse("alice", "sit", T0 + minutes(20)).rule == "OR-3"


def test_an_owner_who_stood_up_may_still_race_and_lap():
    # OR-7: alice stood up during betting; her horse Thunder Hooves races on and she may
    # race and lap. Field K♠ 2♥ 5♣ 6♥: race K♥ -> (1,1,0,1); race K♣ -> (2,1,1,1), every
    # horse beyond 0: a Lap is owed (OR-8); lap 3♦ -> 2♥ and 6♥ back: (2,0,1,0).
    shell = betting_table()
    shell.accept("alice", "stand", T0 + minutes(8))
    shell.accept("bob", "bet 10 on Lightning", T0 + minutes(9))  # bob was the last waited for
    assert shell.state.phase == "racing" and shell.state.seated == ["bob"]
    assert "Players with a horse in the race (alice, bob, seated or not)" in (
        shell.posts("betting_closed")[0].body)
    assert [line.split(" — ")[0] for line in RULES.help(shell.state, "alice")] == ["race", "receipts"]
    shell.script("KH", "KC", "3D")
    shell.accept("alice", "race", T0 + minutes(10))
    shell.accept("alice", "race", T0 + minutes(11))
    assert shell.state.lap_owed
    assert "until a player with a horse in the race (alice, bob) says `lap`" in (
        shell.posts("lap_owed")[0].body)
    assert [line.split(" — ")[0] for line in RULES.help(shell.state, "alice")] == ["lap", "receipts"]
    shell.accept("alice", "lap", T0 + minutes(12))
    assert tuple(h.position for h in shell.state.horses) == (2, 0, 1, 0)
    assert "stays in the race and you may still `race` and `lap` (OR-7)" in (
        shell.replies("alice", "reply_stood")[0].body)


def _race_thunder_home(shell: RaceShell, start: int = 20) -> None:
    """Run the race of ``test_a_full_race_with_laps_and_its_payout``: Thunder Hooves (K♠)
    wins alone, over the field K♠ 2♥ 5♣ 6♥ of length 8."""
    shell.script("KH", "KC", "3D", "KH", "KC", "KH", "3D", "KH", "KC", "KH", "3D", "KS")
    at = T0 + minutes(start)
    while shell.state.phase == "racing":
        at += minutes(1)
        shell.accept("alice", "lap" if shell.state.lap_owed else "race", at)
    assert shell.state.winners == ["Thunder Hooves"]


def test_a_player_who_stood_up_during_seating_wins_nothing():
    # OR-9: carol sits and stands while seating is open, then bets as an outsider.
    # Bets: carol 20 and bob 30 on Thunder Hooves, alice 50 on Lightning: pool 100, house
    # floor(10 %) = 10, P = 90. Thunder Hooves wins alone: allocation 90, T = 50:
    # carol floor(90 x 20 / 50) = 36 -> void (she stood up); bob floor(90 x 30 / 50) = 54.
    # Chips: carol 100 - 20 = 80, bob 100 - 30 + 54 = 124, alice 50, void 36, house 10.
    shell = two_horse_table()
    shell.accept("carol", "sit", T0 + minutes(5.5))
    shell.accept("carol", "stand", T0 + minutes(5.6))
    assert shell.state.left == ["carol"]
    assert "any winnings of yours at this table now go to void" in (
        shell.replies("carol", "reply_stood")[0].body)
    assert "Any winnings carol would have at this table go to void" in shell.posts("stood")[0].body
    shell.script("5C", "6H")
    shell.accept("bob", "ready", T0 + minutes(6))
    shell.accept("carol", "bet 20 on Thunder Hooves", T0 + minutes(10))
    shell.accept("bob", "bet 30 on Thunder Hooves", T0 + minutes(11))
    shell.accept("alice", "bet 50 on Lightning", T0 + minutes(12))
    assert shell.state.phase == "racing" and shell.chips("house") == 10
    _race_thunder_home(shell)
    assert (shell.chips("carol"), shell.chips("bob"), shell.chips("alice")) == (80, 124, 50)
    assert (shell.chips("void"), shell.chips("pool")) == (36, 0)
    result = shell.posts("result")[0].body
    assert "carol bet 20 on Thunder Hooves: receives 0 chips (36 chips of winnings to void" in result
    assert "the winnings of carol on Thunder Hooves, who stood up before the race ended" in result


def test_sitting_again_after_standing_up_in_seating_still_wins_nothing():
    # OR-9: bob stands during seating (Lightning is withdrawn), sits again and re-enters it:
    # he did sit and stand up before the race ended. Same bets and race as above, with
    # carol 20 and bob 30 on Thunder Hooves and alice 50 on Lightning: bob's 54 -> void,
    # carol floor(90 x 20 / 50) = 36. Chips: carol 116, bob 70, alice 50, void 54.
    shell = RaceShell.create(
        chips={"alice": 100, "bob": 100, "carol": 100},
        cards={"alice": ["KS"], "bob": ["2H"]},
    )
    shell.accept("alice", "sit", T0 + minutes(1))
    shell.accept("bob", "sit", T0 + minutes(2))
    shell.accept("alice", "horse Thunder Hooves card king of spades", T0 + minutes(3))
    shell.accept("bob", "horse Lightning card 2h", T0 + minutes(4))
    shell.accept("bob", "stand", T0 + minutes(4.5))
    shell.accept("bob", "sit", T0 + minutes(4.6))
    assert "You stood up from this table earlier" in shell.replies("bob", "reply_sat")[-1].body
    shell.accept("bob", "horse Lightning card 2h", T0 + minutes(4.7))
    shell.accept("alice", "ready", T0 + minutes(5))
    shell.script("5C", "6H")
    shell.accept("bob", "ready", T0 + minutes(6))
    assert [h.name for h in shell.state.horses][:2] == ["Thunder Hooves", "Lightning"]
    assert shell.state.left == ["bob"] and shell.state.seated == ["alice", "bob"]
    shell.accept("carol", "bet 20 on Thunder Hooves", T0 + minutes(10))
    shell.accept("bob", "bet 30 on Thunder Hooves", T0 + minutes(11))
    shell.accept("alice", "bet 50 on Lightning", T0 + minutes(12))
    _race_thunder_home(shell)
    assert (shell.chips("carol"), shell.chips("bob"), shell.chips("alice")) == (116, 70, 50)
    assert shell.chips("void") == 54


def test_a_player_stood_up_for_having_no_horse_wins_nothing():
    # OR-3 stands bob up at the close of seating; OR-9: he sat and stood up before the race
    # ended. Field: alice's K♠ and NPCs 5♥, 6♥, 7♦ (length 8). bob 30 and carol 20 on
    # Thunder: pool 50, house 5, P 45; Thunder wins alone: bob floor(45 x 30 / 50) = 27 ->
    # void, carol floor(45 x 20 / 50) = 18. Chips: bob 70, carol 98, void 27.
    shell = RaceShell.create(chips={"bob": 100, "carol": 100}, cards={"alice": ["KS"]})
    shell.accept("alice", "sit", T0)
    shell.accept("bob", "sit", T0 + minutes(5))
    shell.accept("alice", "horse Thunder Hooves card KS", T0 + minutes(10))
    shell.script("5H", "6H", "7D")
    shell.fire_due(T0 + HOUR)
    assert shell.state.left == ["bob"]
    assert "Any winnings they would have at this table go to void (OR-9)" in (
        shell.posts("seating_closed")[0].body)
    shell.accept("bob", "bet 30 on Thunder Hooves", T0 + minutes(61))
    shell.accept("carol", "bet 20 on Thunder Hooves", T0 + minutes(62))
    shell.accept("alice", "pass", T0 + minutes(63))
    assert shell.state.phase == "racing" and shell.chips("house") == 5
    # K♠ moves only Thunder (the NPCs are red, none a spade or a king): 9 draws -> 9 > 8.
    shell.script(*["KS"] * 9)
    at = T0 + minutes(70)
    while shell.state.phase == "racing":
        at += minutes(1)
        shell.accept("alice", "race", at)
    assert shell.state.winners == ["Thunder Hooves"]
    assert (shell.chips("bob"), shell.chips("carol"), shell.chips("void")) == (70, 98, 27)


def test_a_race_action_before_the_race_is_refused():
    shell = betting_table()
    assert shell.refuse("alice", "race", T0 + minutes(7)).rule == "OR-7"


# --- the idle action (OR-11) ----------------------------------------------------------------


def test_the_dealer_acts_when_nobody_does():
    shell = racing_table(idle_action_after="30m")
    assert shell.deadlines == {"idle": T0 + minutes(43)}  # betting closed at 10:13
    shell.script("KH", "KC", "3D")
    shell.accept("alice", "race", T0 + minutes(20))  # (1,1,0,1)
    assert shell.deadlines == {"idle": T0 + minutes(50)}  # moved by the action
    shell.fire_due(T0 + minutes(50))  # the dealer races: K♣ -> (2,1,1,1), a Lap is owed
    dealer_post = shell.posts("race_action")[-1].body
    assert "by the dealer (nobody acted for 30 minutes, OR-11)" in dealer_post
    assert shell.state.lap_owed and shell.deadlines == {"idle": T0 + minutes(80)}
    shell.fire_due(T0 + minutes(80))  # the owed Lap: 3♦ -> (2,0,1,0)
    assert not shell.state.lap_owed
    assert tuple(h.position for h in shell.state.horses) == (2, 0, 1, 0)
    assert "Lap Action 3** by the dealer" in shell.posts("lap_action")[-1].body


def test_an_action_sent_before_the_last_one_but_handled_after_is_too_late():
    # A race action sent at 10:40 but read after the dealer's idle action of 10:43: applied
    # at 10:40 it would set the idle clock back to 11:10 and write history out of time order.
    shell = racing_table(idle_action_after="30m")
    shell.script("KH")
    shell.fire_due(T0 + minutes(43))  # the dealer races
    assert shell.state.last_action_at == T0 + minutes(43)
    rejected = shell.refuse("alice", "race", T0 + minutes(40), fire_first=False)
    assert rejected.rule == "OR-7" and rejected.what.startswith("too late")
    assert "action 1" in rejected.what
    assert shell.deadlines == {"idle": T0 + minutes(73)}  # where the dealer's action put it


def test_without_the_setting_there_is_no_idle_deadline():
    shell = racing_table()
    assert shell.deadlines == {}


# --- abandonment (OR-10) ----------------------------------------------------------------


def test_everyone_standing_during_the_race_refunds_pro_rata():
    # P = 99 of a 110 pool: carol floor(99 x 20 / 110) = 18, dave floor(99 x 10 / 110) = 9,
    # alice floor(99 x 30 / 110) = 27, bob floor(99 x 50 / 110) = 45; 99 - 99 = 0 to void.
    shell = racing_table()
    shell.accept("alice", "stand", T0 + minutes(20))
    shell.accept("bob", "stand", T0 + minutes(21))
    assert shell.state.outcome == "abandoned"
    assert [shell.chips(p) for p in ("alice", "bob", "carol", "dave")] == [97, 95, 98, 99]
    assert shell.chips("house") == 11 and shell.chips("pool") == 0 and shell.chips("void") == 0
    body = shell.posts("abandoned")[0].body
    assert "carol bet 20: refunded 18 chips" in body and SEED in body


def test_everyone_standing_during_betting_refunds_every_bet_in_full():
    shell = betting_table()
    shell.accept("carol", "bet 33 on Lightning", T0 + minutes(10))
    shell.accept("alice", "bet 7 on Lightning", T0 + minutes(11))
    shell.accept("alice", "stand", T0 + minutes(12))
    shell.accept("bob", "stand", T0 + minutes(13))
    assert shell.state.outcome == "abandoned" and shell.deadlines == {}
    assert (shell.chips("carol"), shell.chips("alice"), shell.chips("house")) == (100, 100, 0)


# --- timing, help, escaping --------------------------------------------------------------------


def test_a_seating_command_handled_after_seating_closed_is_too_late():
    shell = two_horse_table()
    shell.fire_due(T0 + minutes(61))
    rejected = shell.refuse("carol", "sit", T0 + minutes(50), fire_first=False)
    assert rejected.rule == "OR-3" and "during seating" in rejected.what


def test_help_follows_the_phase(help_is_valid_now):
    # Each help line is accepted when sent; each command help leaves out is refused.
    def first_words(shell, who, at):
        return [line.split(" — ")[0] for line in help_is_valid_now(shell, who, at)]

    shell = two_horse_table()
    at = T0 + minutes(5.5)
    assert first_words(shell, "carol", at) == ["sit", "interested"]
    # help cannot see the inventory: the entry leaves CARD to the player, with a free name
    assert first_words(shell, "bob", at) == ["horse Silver Blaze card CARD", "ready",
                                             "interested", "stand", "receipts"]
    assert first_words(shell, "alice", at) == ["horse Thunder Hooves card CARD", "interested",
                                               "stand", "receipts"]
    shell = betting_table()
    at = T0 + minutes(7)
    assert first_words(shell, "carol", at) == ["bet 10 on Thunder Hooves", "pass", "interested"]
    assert first_words(shell, "bob", at) == ["bet 10 on Thunder Hooves", "pass", "interested",
                                             "stand", "receipts"]
    assert "(the field: Thunder Hooves, Lightning, 5 of Clubs, 6 of Hearts)" in (
        RULES.help(shell.state, "carol")[0])
    shell = racing_table()
    at = T0 + minutes(14)
    assert first_words(shell, "bob", at) == ["race", "stand", "receipts"]
    assert first_words(shell, "carol", at) == ["receipts"]  # her bet
    shell.script("KH", "KC")  # K♠ 2♥ 6♥ move, then K♠ 5♣: every horse is past 0, a Lap is owed
    shell.accept("alice", "race", at)
    shell.accept("bob", "race", at + minutes(1))
    assert shell.state.lap_owed
    assert first_words(shell, "alice", at + minutes(2)) == ["lap", "stand", "receipts"]


HOSTILE = ["@everyone", "**bold**", "<@123>", "[url=x]y[/url]"]


def test_player_text_is_inert_in_every_post():
    players = ["p1", "p2", "p3", "p4"]
    cards = ["KS", "2H", "5C", "6H"]
    shell = RaceShell.create(
        chips={p: 50 for p in players} | {"@here": 50},
        cards={p: [c] for p, c in zip(players, cards)},
        idle_action_after="10m",
    )
    for i, (p, name) in enumerate(zip(players, HOSTILE)):
        shell.accept(p, "sit", T0 + minutes(i))
        shell.accept(p, f"horse {name} card {cards[i]}", T0 + minutes(i))
    shell.accept("@here", "sit", T0 + minutes(5))  # a hostile player name, too
    shell.fire_due(T0 + HOUR)  # @here, without a horse, is stood up
    shell.accept("@here", "bet 5 on **bold**", T0 + minutes(61))
    for p, name in zip(players, HOSTILE):
        shell.accept(p, f"bet 5 on {name}", T0 + minutes(62))
    shell.accept("p1", "stand", T0 + minutes(63))  # its horse "@everyone" races on
    while shell.state.phase != "finished":
        shell.fire_due(min(shell.deadlines.values()))
    kinds = {s.kind for s in shell.sent}
    assert {"result", "race_action", "betting_closed", "seating_closed", "stood"} <= kinds
    for sent in shell.sent:
        body = sent.body
        assert "@everyone" not in body and "@here" not in body and "<@123>" not in body
        assert "[url=x]" not in body and "****" not in body
        # Subjects are not escaped by the renderer, so they never carry player text.
        assert not any(text in sent.draft.subject for text in [*HOSTILE, "@here", "p1"])
    field_post = shell.posts("seating_closed")[0].body
    assert "@\u2060everyone" in field_post and r"\*\*bold\*\*" in field_post
    assert "\\<@\u2060123\\>" in field_post
    assert r"\[url=x\]y\[/url\]" in field_post


# --- properties -----------------------------------------------------------------------------

PLAYERS = ["ann", "ben", "cat", "dan"]
EVERYONE = PLAYERS + ["eve"]
CARDS = ["KS", "2H", "5C", "RJ"]


def ops(*commands: str, bets: int = 1) -> st.SearchStrategy:
    """Steps of one phase: a command by anyone, a bet (``bets`` times as likely), a horse
    entry, or a wait."""
    bet = st.tuples(st.just("bet"), st.sampled_from(EVERYONE), st.integers(1, 60),
                    st.integers(0, 5))
    return st.lists(st.one_of(
        st.tuples(st.sampled_from(commands), st.sampled_from(EVERYONE)),
        *[bet] * bets,
        st.tuples(st.just("horse"), st.sampled_from(PLAYERS), st.integers(0, 3)),
        st.tuples(st.just("wait"), st.integers(1, 90)),
    ), max_size=12)


# Who sits first, and whether each enters a horse (mostly yes) and says ready.
prologue = st.lists(
    st.tuples(st.sampled_from(range(len(PLAYERS))), st.sampled_from([True, True, True, False]),
              st.booleans()),
    min_size=1, max_size=4, unique_by=lambda row: row[0],
)


def _line(shell: RaceShell, step: tuple) -> str:
    if step[0] == "horse":
        return f"horse Horse {step[2]} card {CARDS[step[2]]}"
    if step[0] == "bet":
        horses = shell.state.horses
        name = horses[step[3] % len(horses)].name if horses else "Nobody"
        return f"bet {step[2]} on {name}"
    return step[0]


def _check_invariants(shell: RaceShell) -> None:
    """Chips conserved, nothing negative but the mint, and no state the rules forbid."""
    assert set(shell.totals().values()) <= {0}
    assert all(amount >= 0 for (account, _), amount in shell.balances.items() if account != MINT)
    state = shell.state
    assert all(h.position >= 0 for h in state.horses)
    if state.phase in ("betting", "racing"):
        assert all(state.horse_of(p) is not None for p in state.seated)
        assert state.seated, "a table with nobody seated has ended"
        assert shell.chips("pool") == state.prize
    if state.phase == "racing":
        assert all(h.position <= state.length for h in state.horses)
    if state.phase == "finished":
        assert shell.chips("pool") == 0 and shell.deadlines == {}
    # Who ever sat, and who of them has been seen not seated (stood up, in any phase).
    sat, stood = shell.__dict__.setdefault("sat", set()), shell.__dict__.setdefault("stood", set())
    stood |= sat - set(state.seated)
    sat |= set(state.seated)


class Clock:
    """The time of the next step: one minute after the last, or later after a wait."""

    def __init__(self) -> None:
        self.at = T0

    def tick(self, extra: int = 0):
        self.at += minutes(1 + extra)
        return self.at


def _play(shell: RaceShell, clock: Clock, steps: list[tuple]) -> None:
    for step in steps:
        if step[0] == "wait":
            shell.fire_due(clock.tick(step[1]))
        else:
            shell.send(step[1], _line(shell, step), clock.tick())
        _check_invariants(shell)


def _close_phase(shell: RaceShell, clock: Clock, phase: str) -> None:
    """Let the deadline that ends ``phase`` fire, if the table is still in it."""
    if shell.state.phase == phase and shell.deadlines:
        clock.at = max(clock.at, min(shell.deadlines.values()))
        shell.fire_due(clock.at)
        _check_invariants(shell)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seats=prologue,
    seating=ops("sit", "stand", "ready", "interested"),
    betting=ops("pass", "interested", "stand", bets=4),
    racing=ops("race", "race", "race", "lap", "stand"),
    wallets=st.lists(st.integers(5, 80), min_size=5, max_size=5),
    idle=st.sampled_from([None, "20m"]),
    cards=st.lists(st.integers(0, 51), max_size=30),
)
def test_any_table_conserves_chips_and_ends(seats, seating, betting, racing, wallets, idle, cards):
    from dealer.cards import STANDARD_DECK

    shell = RaceShell.create(chips=dict(zip(EVERYONE, wallets)), render=False,
                             cards={p: [c] for p, c in zip(PLAYERS, CARDS)},
                             idle_action_after=idle)
    shell.script(*(STANDARD_DECK[i].code for i in cards))
    clock = Clock()
    for index, horse, ready in seats:
        name = PLAYERS[index]
        shell.send(name, "sit", clock.tick())
        if horse:
            shell.send(name, _line(shell, ("horse", name, index)), clock.tick())
        if ready:
            shell.send(name, "ready", clock.tick())
        _check_invariants(shell)
    _play(shell, clock, seating)
    _close_phase(shell, clock, "seating")
    _play(shell, clock, betting)
    _close_phase(shell, clock, "betting")
    _play(shell, clock, racing)
    # Drive the race to its end: a seated player (or the idle deadline) acts.
    for _ in range(1000):
        if shell.state.phase != "racing":
            break
        if idle:
            _close_phase(shell, clock, "racing")
        else:
            rider = shell.state.seated[0]
            shell.accept(rider, "lap" if shell.state.lap_owed else "race", clock.tick())
            _check_invariants(shell)
    state = shell.state
    assert state.phase == "finished" or (state.phase == "seating" and not state.seated)
    if state.outcome == "raced":
        # OR-9: a player who sat and stood up before the race ended got nothing back.
        for name in shell.stood:
            staked = sum(b.amount for b in state.bets if b.bettor == name)
            assert shell.chips(name) == wallets[EVERYONE.index(name)] - staked, name
    event(f"outcome: {state.outcome}, {'with' if state.bets else 'no'} bets")
    n = len(state.horses)
    assert state.actions <= 2 * n * state.length + 1 + state.length
