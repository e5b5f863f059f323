"""Stationary Roulette (RULES SR-1 to SR-12): worked examples computed by hand.

Every example states its arithmetic in a comment. Default game: alice and bob with 100
chips each, phases of 24 h, submissions an hour apart inside each phase. ``I-n`` refers to
the interpretations in docs/ROULETTE.md.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from dealer.games import rules_for
from dealer.games.base import Context, Rejected
from dealer.games.roulette.model import Bet, Prepare, Reminders, RouletteSettings, RouletteState
from dealer.games.roulette.testing import RULES, T0, Shell, hours, new_context

BLACK_PREP = "prepare black gold 30 silver 10"
GOLD_PREP = "prepare gold gold 25 silver 15"


def one_round(alice_prep: str, bob_prep: str, alice_bet: str | None, bob_bet: str | None,
              chips: dict[str, int] | None = None) -> Shell:
    """A one-round game: preparations in the preparation phase, bets in round 1."""
    sh = Shell.create(chips=chips, rounds=1)
    sh.play_phase(alice=alice_prep, bob=bob_prep)
    bets = {name: line for name, line in (("alice", alice_bet), ("bob", bob_bet)) if line}
    sh.play_phase(**bets)
    assert sh.state.status == "finished"
    return sh


def chips_after_round(sh: Shell) -> dict[str, int]:
    """Each player's chips as the last round result showed them (before the SR-11 transfer)."""
    return {s["player"]: s["chips"] for s in sh.posts("round_result")[-1].draft.context["standings"]}


# --- creation (SR-1, SR-12) -------------------------------------------------------------


def test_the_ruleset_is_registered():
    rules = rules_for("roulette")
    assert isinstance(rules, type(RULES))
    assert (rules.kind, rules.title, rules.default_channel) == (
        "roulette", "Stationary Roulette", "#stationary-roulette")
    assert rules.open_to_all is False


@pytest.mark.parametrize("players", [["alice"], ["alice", "bob", "carol"], ["alice", "alice"], []])
def test_exactly_two_different_players(players):
    ctx = new_context(T0, {}, {})
    with pytest.raises(Rejected) as exc:
        RULES.start(ctx, players, RouletteSettings(), T0)
    assert exc.value.rule == "SR-1"


def test_minimum_stack_refuses_a_short_player():
    # SR-12: min_stack 50; alice has 49 -> refused; with 50 it is accepted.
    with pytest.raises(Rejected) as exc:
        Shell.create(chips={"alice": 49, "bob": 80}, min_stack=50)
    assert exc.value.rule == "SR-12"
    assert "alice has 49" in exc.value.what
    sh = Shell.create(chips={"alice": 50, "bob": 80}, min_stack=50)
    assert sh.state.starting_stacks == {"alice": 50, "bob": 80}


def test_settings_parse_durations_and_reject_nonsense():
    s = RouletteSettings(round_length="12h", preparation_length="90m", remind_before="",
                         rounds="3", layout_public="false")
    assert s.round_length == timedelta(hours=12) and s.preparation_length == timedelta(minutes=90)
    assert s.rounds == 3 and s.layout_public is False
    assert s.model_dump(mode="json")["round_length"] == "12h"
    for bad in ({"remind_before": "soon"}, {"round_length": "0h"}, {"colour_limit": 0},
                {"rounds": 0}, {"min_stack": -1}, {"bogus": 1}):
        with pytest.raises(ValidationError):
            RouletteSettings(**bad)


def test_a_game_starts_with_the_preparation_phase_and_its_deadlines():
    sh = Shell.create()
    assert sh.state.status == "running" and sh.state.phase == 0
    # preparation closes at T0 + 24 h; reminders 6 h and 1 h before it.
    assert sh.deadlines == {
        "preparation": T0 + hours(24),
        "reminder-preparation-6h": T0 + hours(18),
        "reminder-preparation-1h": T0 + hours(23),
    }
    assert [p.kind for p in sh.posts()] == ["opening", "phase_start"]


def test_a_future_start_keeps_the_game_pending_until_its_deadline():
    later = T0 + hours(48)
    sh = Shell.create(start=later, now=T0)
    assert sh.state.status == "pending"
    assert RULES.summary(sh.state).status == "pending"
    assert sh.deadlines == {"start": later}
    early = sh.send("alice", BLACK_PREP, T0 + hours(1))
    assert early is not None and early.rule == "SR-1" and "not started" in early.what
    # SR-12 / I-16: the starting stack is the wallet when the game starts.
    sh.balances[("player:alice", "chips")] += 7
    sh.balances[("mint", "chips")] -= 7
    sh.fire_due(later)
    assert sh.state.status == "running" and sh.state.phase_starts == [later]
    assert sh.deadlines["preparation"] == later + hours(24)
    assert sh.state.starting_stacks == {"alice": 107, "bob": 100}
    sh.accept("alice", BLACK_PREP, later + hours(1))



def test_a_submission_sent_at_the_start_instant_counts():
    # A message sent at the start counts, in every game: the preparation phase begins first.
    later = T0 + hours(48)
    sh = Shell.create(start=later, now=T0)
    sh.accept("alice", BLACK_PREP, later)
    assert sh.state.status == "running" and sh.state.phase_starts == [later]
    assert "start" not in sh.deadlines and sh.deadlines["preparation"] == later + hours(24)


def test_a_start_in_the_past_only_sets_reminders_still_ahead():
    # Start 20 h ago: preparation closes in 4 h, so the 6 h reminder (2 h ago) is not set.
    sh = Shell.create(start=T0 - hours(20), now=T0)
    assert sh.deadlines == {"preparation": T0 + hours(4), "reminder-preparation-1h": T0 + hours(3)}


# --- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize("line, command", [
    ("prepare black gold 30 silver 10", Prepare("black", 30, 10, 0)),
    ("PREPARE Silver Gold 25 Silver 15 Black 0", Prepare("silver", 25, 15, 0)),
    ("prepare black: gold=30, silver=10", Prepare("black", 30, 10, 0)),
    ("prepare gold silver 5 gold 35", Prepare("gold", 35, 5, 0)),
    ("bet gold 30 silver 10", Bet(30, 10, 0)),
    ("Bet BLACK 40", Bet(0, 0, 40)),
    ("bet gold 40 silver 0", Bet(40, 0, 0)),
    ("reminders off", Reminders(False)),
    ("Reminders ON", Reminders(True)),
])
def test_parse_reads_commands(line, command):
    assert RULES.parse(line) == command


@pytest.mark.parametrize("line, rule, words", [
    ("hello there", None, "not a Stationary Roulette command"),
    ("prepare", "SR-2", "winning colour"),
    ("prepare gold 30 silver 10", "SR-2", "winning colour comes first"),
    ("prepare purple gold 30 silver 10", "SR-2", "winning colour"),
    ("prepare black gold 30 silver", "SR-2", "no amount"),
    ("bet", "SR-5", "names colours"),
    ("bet gold 20 gold 20", "SR-5", "named twice"),
    ("bet gold -5 silver 45", "SR-5", "negative"),
    ("bet gold 30.5 silver 9.5", "SR-5", "whole numbers"),
    ("bet gold 99999999999999999999 silver 1", "SR-5", "far more than 40"),
    ("bet red 40", "SR-5", "not a colour"),
    ("reminders maybe", None, "reminders off"),
])
def test_parse_refuses_malformed_lines(line, rule, words):
    with pytest.raises(Rejected) as exc:
        RULES.parse(line)
    assert exc.value.rule == rule
    assert words in exc.value.what


# --- validation in a phase (SR-2, SR-3, SR-5, SR-6) ---------------------------------------


@pytest.mark.parametrize("line, words", [
    ("prepare gold gold 24 silver 16", "gold must have at least 25 points, not 24"),
    ("prepare gold gold 36 silver 4", "silver must have at least 5 points, not 4"),
    ("prepare gold gold 30 silver 5 black 5", "black cannot have any points, not 5"),
    ("prepare gold gold 30 silver 15", "exactly 40 points, not 45"),
    ("prepare silver gold 25", "silver must have at least 5 points, not 0"),
])
def test_layouts_must_obey_sr2(line, words):
    sh = Shell.create()
    rejected = sh.send("alice", line, sh.during())
    assert rejected is not None and rejected.rule == "SR-2"
    assert words in rejected.what
    assert sh.state.preparations == {} and sh.replies("alice") == []


@pytest.mark.parametrize("line, words", [
    ("bet gold 30 silver 9", "exactly 40 points, not 39"),
    ("bet gold 40 silver 1", "exactly 40 points, not 41"),
    ("bet gold 20 silver 10 black 10", "at most 2 colours, not 3"),
    ("bet gold 0", "exactly 40 points, not 0"),
])
def test_bets_must_obey_sr5(line, words):
    sh = Shell.create()
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    rejected = sh.send("alice", line, sh.during())
    assert rejected is not None and rejected.rule == "SR-5"
    assert words in rejected.what


def test_no_bet_in_the_preparation_phase_and_no_preparation_in_the_last_round():
    sh = Shell.create(rounds=2)
    rejected = sh.send("alice", "bet gold 40", sh.during())
    assert rejected.rule == "SR-3" and "preparation phase" in rejected.what
    assert all(not line.startswith("bet") for line in rejected.allowed)
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    sh.play_phase(alice=[BLACK_PREP], bob=[GOLD_PREP])
    assert sh.state.phase == 2
    rejected = sh.send("alice", BLACK_PREP, sh.during())
    assert rejected.rule == "SR-3" and "last round" in rejected.what
    assert [line.split(" — ")[0] for line in rejected.allowed] == [
        "bet gold 30 silver 10", "reminders off", "receipts"]


def test_a_later_valid_submission_replaces_an_earlier_one_and_an_invalid_one_never_does():
    # SR-6: alice prepares black, then gold (replaces it), then an invalid layout (refused).
    sh = Shell.create(rounds=1)
    sh.accept("alice", BLACK_PREP, sh.during(1))
    sh.accept("alice", "prepare gold gold 35 silver 5", sh.during(2))
    rejected = sh.send("alice", "prepare silver gold 20 silver 20", sh.during(3))
    assert rejected.rule == "SR-2"
    first, second = sh.replies("alice", "confirmation")
    assert second.draft.context["replaced"]["number"] == 1
    assert "It replaces your earlier preparation no. 1" in second.body
    assert sh.state.preparations["alice"].number == 2
    sh.play_phase(bob=GOLD_PREP)
    roulette = sh.state.active["alice"]
    assert (roulette.colour, roulette.layout("gold"), roulette.layout("silver")) == ("gold", 35, 5)
    # SR-4 / I-3: only the locked-in gold counts, not the replaced black.
    assert sh.state.colours_used["alice"] == {"gold": 1, "silver": 0, "black": 0}
    # Bets too: bob bets silver 40, then gold 40; only gold 40 counts.
    sh.play_phase(bob=["bet silver 40", "bet gold 40"], alice="bet gold 40")
    # alice's gold roulette (gold 35): bob's gold 40 earns 40 + 20 bonus = 60, alice 35.
    # bob's gold roulette (gold 25): alice's gold 40 earns 40 + 20 = 60, bob 25.
    assert sh.state.points == {"alice": 35 + 60, "bob": 60 + 25}


def test_a_player_not_in_the_game_is_refused():
    sh = Shell.create()
    # The shell refuses a line from someone who does not play before the rules see it ...
    assert sh.send("carol", BLACK_PREP, sh.during()).what == "You do not play in game g1."
    # ... and the rules refuse it too, should one reach them (SR-1).
    with pytest.raises(Rejected) as refused:
        RULES.handle(sh.context(sh.during()), sh.state, "carol", RULES.parse(BLACK_PREP))
    assert refused.value.rule == "SR-1" and "not playing" in refused.value.what


# --- late messages (I-11) ---------------------------------------------------------------


def test_a_message_sent_before_the_deadline_but_handled_after_it_is_too_late():
    sh = Shell.create(rounds=2)
    sh.accept("bob", GOLD_PREP, sh.during(1))
    sh.fire_due(T0 + hours(24))  # the preparation deadline fires first
    rejected = sh.send("alice", BLACK_PREP, T0 + hours(23), fire_first=False)
    assert rejected.rule == "SR-1"
    assert "too late" in rejected.what and "during the preparation phase" in rejected.what
    assert "closed at 2026-12-02 10:00 UTC" in rejected.what and "it is now round 1" in rejected.what
    # ... so alice missed her preparation (SR-10): bob +60, alice pays 5.
    assert sh.state.points == {"alice": 0, "bob": 60}
    assert sh.chips("alice") == 95 and sh.house() == 5


def test_messages_after_the_end_are_refused():
    sh = one_round(BLACK_PREP, GOLD_PREP, "bet gold 40", "bet gold 40")
    end = sh.state.ended_at
    late = sh.send("alice", "bet gold 40", end - hours(1), fire_first=False)
    assert late.rule == "SR-1" and "during round 1" in late.what
    over = sh.send("alice", "bet gold 40", end + hours(1))
    assert over.rule == "SR-11" and "over" in over.what
    assert sh.send("alice", "reminders off", end + hours(1)).rule == "SR-11"


# --- SR-8 points --------------------------------------------------------------------------


def test_gold_roulette_base_points_without_bonus():
    # alice: gold, layout gold 25 silver 15; bob bets gold 30 silver 10.
    #   alice earns I[gold] = 25, bob earns b[gold] = 30; no bonus (30 != 40, 30 != 0).
    # bob: silver, layout gold 30 silver 10; alice bets gold 20 silver 20.
    #   bob earns I[silver] = 10, alice earns b[silver] = 20; no bonus.
    sh = one_round(GOLD_PREP, "prepare silver gold 30 silver 10",
                   "bet gold 20 silver 20", "bet gold 30 silver 10")
    assert sh.state.points == {"alice": 25 + 20, "bob": 30 + 10}
    assert sh.chips("alice") == 100 and sh.chips("bob") == 100 and sh.house() == 0


def test_all_forty_on_the_winning_colour_earns_the_bettor_20():
    # alice: gold (gold 25 silver 15); bob bets gold 40 -> bob 40 + 20 bonus, alice 25.
    # bob: gold (gold 25 silver 15); alice bets "gold 40 silver 0" (I-1: one colour)
    #   -> alice 40 + 20, bob 25.
    sh = one_round(GOLD_PREP, GOLD_PREP, "bet gold 40 silver 0", "bet gold 40")
    assert sh.state.points == {"alice": 25 + 60, "bob": 60 + 25}


def test_all_forty_on_black_when_black_wins_earns_20_and_owes_nothing():
    # alice: black; bob bets black 40 -> no base points, bob +20 bonus, owes 40 - 40 = 0.
    # alice still pays the 10-chip fee. bob: gold; alice bets gold 25 silver 15 ->
    #   alice 25, bob I[gold] = 25.
    # After the round: alice 100 - 10 = 90, bob 100. End (SR-11): bob 45 - alice 25 = 20
    #   -> floor(20 / 10) = 2 chips from alice to bob: alice 88, bob 102.
    sh = one_round(BLACK_PREP, GOLD_PREP, "bet gold 25 silver 15", "bet black 40")
    assert sh.state.points == {"alice": 25, "bob": 20 + 25}
    assert chips_after_round(sh) == {"alice": 90, "bob": 100} and sh.house() == 10
    assert sh.chips("alice") == 88 and sh.chips("bob") == 102
    assert sh.state.black_losses == {"alice": 0, "bob": 0}


def test_nothing_on_the_winning_colour_gives_the_preparer_20():
    # alice: silver, layout gold 25 silver 15; bob bets gold 40 -> b[silver] = 0:
    #   alice I[silver] 15 + 20 bonus = 35; bob b[silver] = 0.
    # bob: gold (gold 25); alice bets silver 40 -> b[gold] = 0: bob 25 + 20 = 45.
    sh = one_round("prepare silver gold 25 silver 15", GOLD_PREP, "bet silver 40", "bet gold 40")
    assert sh.state.points == {"alice": 35, "bob": 45}


# --- SR-9 chips through black ---------------------------------------------------------------


def test_a_black_steal_then_the_fee():
    # alice: black; bob bets gold 25 black 15 -> owes 40 - 15 = 25; b[black] = 15, no bonus.
    # bob: gold (gold 25); alice bets gold 40 -> alice 40 + 20 = 60, bob 25.
    # chips: bob pays alice 25; then alice pays the house 10.
    #   alice 100 + 25 - 10 = 115; bob 100 - 25 = 75; house 10.
    # End: alice 60 - bob 25 = 35 -> floor(35 / 10) = 3 more chips: alice 118, bob 72.
    sh = one_round(BLACK_PREP, GOLD_PREP, "bet gold 40", "bet gold 25 black 15")
    assert chips_after_round(sh) == {"alice": 115, "bob": 75} and sh.house() == 10
    assert sh.chips("alice") == 118 and sh.chips("bob") == 72
    assert sh.state.black_losses == {"alice": 0, "bob": 25}
    assert sh.state.chips_stolen == {"alice": 25, "bob": 0}
    assert sh.state.points == {"alice": 60, "bob": 25}
    result = sh.posts("round_result")[0]
    assert "bob owes alice 40 - 15 = 25 chips" in result.body
    assert "bob pays alice 25 chips." in result.body
    assert "alice prepared black and pays the house 10 chips" in result.body


def test_both_black_moves_only_the_net_difference():
    # alice's black roulette: bob bets gold 30 black 10 -> bob owes 40 - 10 = 30.
    # bob's black roulette: alice bets silver 15 black 25 -> alice owes 40 - 25 = 15.
    # net: bob pays alice 30 - 15 = 15; then both preparers pay 10 to the house.
    #   alice 100 + 15 - 10 = 105; bob 100 - 15 - 10 = 75; house 20.
    # I-5 / I-6: bob's black losses and alice's chips received are the net 15.
    # points: no base points on black; b[black] is 10 and 25 (neither 0 nor 40): none.
    sh = one_round(BLACK_PREP, BLACK_PREP, "bet silver 15 black 25", "bet gold 30 black 10")
    assert sh.chips("alice") == 105 and sh.chips("bob") == 75 and sh.house() == 20
    assert sh.state.black_losses == {"alice": 0, "bob": 15}
    assert sh.state.chips_stolen == {"alice": 15, "bob": 0}
    assert sh.state.points == {"alice": 0, "bob": 0}
    body = sh.posts("round_result")[0].body
    assert "alice owed 15" in body and "bob owed 30" in body and "net difference of 15" in body


def test_both_black_with_equal_debts_moves_nothing_but_both_pay_the_fee():
    # I-7: each bettor bets gold 20 black 20 -> each owes 20; net 0; fees 10 + 10.
    sh = one_round(BLACK_PREP, BLACK_PREP, "bet gold 20 black 20", "bet gold 20 black 20")
    assert sh.chips("alice") == 90 and sh.chips("bob") == 90 and sh.house() == 20
    assert sh.state.black_losses == {"alice": 0, "bob": 0}
    assert sh.state.chips_stolen == {"alice": 0, "bob": 0}
    assert "Nothing moves." in sh.posts("round_result")[0].body


def test_a_black_payment_is_limited_to_the_chips_on_hand():
    # bob has 25 chips and owes 40 (bet gold 40 on alice's black): he pays 25.
    # alice: 100 + 25 - 10 fee = 115; bob 0; bob's black losses 25 (what moved, I-5).
    # bob's gold roulette: alice bets gold 40 -> alice 60, bob 25; alice's black: b[black]=0
    #   -> alice +20. alice 80, bob 25. End: lead 55 -> floor(55/10) = 5, bob has 0 -> 0.
    sh = one_round(BLACK_PREP, GOLD_PREP, "bet gold 40", "bet gold 40",
                   chips={"alice": 100, "bob": 25})
    assert sh.state.black_losses["bob"] == 25 and sh.state.chips_stolen["alice"] == 25
    assert sh.chips("alice") == 115 and sh.chips("bob") == 0
    assert sh.state.points == {"alice": 80, "bob": 25}
    assert "limited by chips on hand" in sh.posts("round_result")[0].body
    final = sh.posts("final_result")[0]
    assert final.draft.context["transfer_due"] == 5 and final.draft.context["transfer"] == 0


def test_the_black_fee_is_what_the_preparer_has_left():
    # alice has 3 chips and prepares black; bob bets black 40, so owes 0: alice pays 3.
    # (End: alice 60 (gold 40 + 20 on bob's gold 25) - bob 45 = 15 -> 1 chip to alice.)
    sh = one_round(BLACK_PREP, GOLD_PREP, "bet gold 40", "bet black 40",
                   chips={"alice": 3, "bob": 100})
    assert chips_after_round(sh) == {"alice": 0, "bob": 100} and sh.house() == 3
    assert sh.chips("alice") == 1 and sh.chips("bob") == 99
    assert "(all they had left; the fee is 10)" in sh.posts("round_result")[0].body


def test_black_losses_are_capped_at_100_and_the_loser_forfeits():
    # alice prepares black every round; bob bets gold 40 every time -> owes 40 each round,
    # and alice earns the 20 bonus (b[black] = 0). bob has 200 chips.
    # bob prepares gold (gold 30 silver 10); alice bets silver 40 -> b[gold] = 0:
    #   bob earns 30 + 20 = 50 per round.
    # round 1: bob pays 40 (losses 40); round 2: 40 (80); round 3: owes 40, but the cap
    #   leaves 100 - 80 = 20: he pays 20, losses reach 100 -> bob forfeits (SR-9) after
    #   round 3 although he leads on points (150 to 60). No lead transfer (SR-11).
    # alice: 100 + 40 + 40 + 20 - 3 x 10 fees = 170. bob: 200 - 100 = 100. house 30.
    sh = Shell.create(chips={"alice": 100, "bob": 200})
    bob_prep = "prepare gold gold 30 silver 10"
    sh.play_phase(alice=BLACK_PREP, bob=bob_prep)
    sh.play_phase(alice=["bet silver 40", BLACK_PREP], bob=["bet gold 40", bob_prep])
    sh.play_phase(alice=["bet silver 40", BLACK_PREP], bob=["bet gold 40", bob_prep])
    # round 3: neither prepares for round 4; I-9: no SR-10 charge for a round never played.
    sh.play_phase(alice="bet silver 40", bob="bet gold 40")
    assert sh.state.status == "finished" and sh.state.phase == 3
    assert sh.state.black_losses == {"alice": 0, "bob": 100}
    assert sh.state.points == {"alice": 60, "bob": 150}
    assert sh.chips("alice") == 170 and sh.chips("bob") == 100 and sh.house() == 30
    summary = RULES.summary(sh.state)
    assert summary.winner == "alice" and summary.detail["forfeited"] == "bob"
    assert summary.detail["tournament_points"] == {"alice": 1, "bob": 0}
    assert sh.state.end_transfer == 0
    assert [p.kind for p in sh.posts()][-3:] == ["round_result", "forfeit", "final_result"]
    assert "limited by the 100-chip cap" in sh.posts("round_result")[-1].body
    assert sh.deadlines == {}  # the game is over: round-4 was never set, reminders cancelled


# --- SR-10 inactivity ---------------------------------------------------------------------


def test_a_missed_preparation_gives_60_points_costs_5_chips_and_leaves_no_roulette():
    # bob has no preparation when the preparation phase closes:
    #   alice +60 (SR-10); bob pays 5 -> 95; house 5; alice has nothing to bet on in round 1.
    sh = Shell.create(rounds=1)
    sh.play_phase(alice=GOLD_PREP)
    assert sh.state.points == {"alice": 60, "bob": 0}
    assert sh.chips("bob") == 95 and sh.house() == 5
    assert sh.state.active["bob"] is None
    rejected = sh.send("alice", "bet gold 40", sh.during())
    assert rejected.rule == "SR-10" and "no roulette to bet on" in rejected.what
    assert "inactivity" in [p.kind for p in sh.posts()]
    # I-8: only bob owes a bet; alice owes nothing and the round resolves one roulette.
    assert RULES.still_owed(sh.state, "alice") == []
    assert RULES.still_owed(sh.state, "bob") == ["bet"]
    sh.play_phase(bob="bet gold 30 silver 10")
    # alice's gold roulette (gold 25): alice 25, bob 30. Totals: alice 85, bob 30.
    assert sh.state.points == {"alice": 85, "bob": 30}


def test_the_missed_preparation_fee_is_what_the_player_has():
    sh = Shell.create(chips={"alice": 100, "bob": 3}, rounds=1)
    sh.play_phase(alice=GOLD_PREP)
    assert sh.chips("bob") == 0 and sh.house() == 3
    assert "(all they had; the penalty is 5)" in sh.posts("inactivity")[0].body


def test_the_round_is_settled_before_the_missed_preparation_is_charged():
    # I-4: bob has 42 chips, owes 40 through black in round 1 and has no preparation for
    # round 2. Black first: bob pays 40 (42 -> 2), alice pays her 10 fee; then SR-10: bob
    # pays what is left of the 5-chip penalty, 2. (The other order would take 5, then 37.)
    sh = Shell.create(chips={"alice": 100, "bob": 42}, rounds=2)
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    sh.play_phase(alice=["bet gold 40", GOLD_PREP], bob="bet gold 40")
    assert sh.state.black_losses["bob"] == 40
    assert sh.chips("bob") == 0 and sh.house() == 10 + 2
    assert sh.chips("alice") == 100 + 40 - 10
    assert sh.posts("inactivity")[0].draft.context["missed"] == [
        {"player": "bob", "opponent": "alice", "fee": 2}]


def test_a_missing_bet_counts_as_zero_everywhere():
    # alice's gold roulette (gold 25 silver 15): bob places no bet -> b = 0 everywhere,
    #   alice earns 25 + 20 bonus (b[gold] = 0) = 45, bob 0.
    # bob's black roulette: alice places no bet -> owes 40 - 0 = 40, and bob gets the 20
    #   bonus (I-17). bob: 100 + 40 - 10 fee = 130; alice 60; house 10.
    # End: 45 - 20 = 25 -> floor(25 / 10) = 2 chips from bob: alice 62, bob 128.
    sh = one_round(GOLD_PREP, BLACK_PREP, None, None)
    assert sh.state.points == {"alice": 45, "bob": 20}
    assert chips_after_round(sh) == {"alice": 60, "bob": 130} and sh.house() == 10
    assert sh.chips("alice") == 62 and sh.chips("bob") == 128
    assert sh.posts("round_result")[0].body.count("placed no bet: 0 on every colour (SR-10)") == 2


def test_a_player_who_never_bets_on_three_black_roulettes_is_not_forfeited():
    # SR-10: alice prepares black for rounds 1 to 3; bob never bets. bob has 200 chips.
    # Each round, alice's black roulette: bob's missing bet is 0 everywhere -> he owes 40,
    #   alice +20 (b[black] = 0, I-17). bob's gold roulette (gold 25 silver 15): alice bets
    #   gold 40 -> alice 40 + 20 = 60, bob 25. Per round: alice 80, bob 25.
    # chips per round: bob pays alice 40, not counted towards the cap (no bet, SR-10);
    #   alice pays the house 10. After round 3: bob 200 - 120 = 80, alice 100 + 120 - 30 =
    #   190, house 30; bob's black losses 0 (the old reading: 40 + 40 + 20 = 100, forfeit).
    # End (SR-11): alice 240, bob 75, lead 165 -> floor(165 / 10) = 16: alice 206, bob 64.
    sh = Shell.create(chips={"alice": 100, "bob": 200}, rounds=3)
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    sh.play_phase(alice=["bet gold 40", BLACK_PREP], bob=GOLD_PREP)
    sh.play_phase(alice=["bet gold 40", BLACK_PREP], bob=GOLD_PREP)
    sh.play_phase(alice="bet gold 40")
    assert sh.state.status == "finished" and sh.state.forfeited is None
    assert sh.state.black_losses == {"alice": 0, "bob": 0}
    assert sh.state.idle_black == {"alice": 0, "bob": 120}
    assert sh.state.chips_stolen == {"alice": 120, "bob": 0}
    assert sh.state.points == {"alice": 240, "bob": 75}
    assert chips_after_round(sh) == {"alice": 190, "bob": 80} and sh.house() == 30
    assert sh.chips("alice") == 206 and sh.chips("bob") == 64
    assert RULES.summary(sh.state).detail["idle_black"] == {"alice": 0, "bob": 120}
    assert [p.kind for p in sh.posts()][-2:] == ["round_result", "final_result"]
    body = sh.posts("round_result")[-1].body
    assert "bob pays alice 40 chips." in body
    assert "bob placed no bet this round, so these chips do not count towards their 100-chip cap" in body
    assert "lost through black 0 of 100 (and 120 more in rounds without a bet" in body


def test_a_payment_for_a_missing_bet_ignores_the_room_left_under_the_cap():
    # bob (200 chips) bets gold 40 on alice's black roulettes in rounds 1 and 2: 40 + 40 =
    # 80 counted. In round 3 he places no bet: he owes 40 and pays all 40 (SR-10: only his
    # chips on hand limit it; with a bet the cap would have let only 20 move and he would
    # have forfeited). Losses stay 80.
    # points: bob's gold roulette (gold 30 silver 10), alice bets silver 40 -> b[gold] = 0:
    #   bob 30 + 20 per round; alice's black: b[black] = 0 -> alice 20 per round.
    #   alice 60, bob 150. chips: bob 200 - 120 = 80; alice 100 + 120 - 30 = 190; house 30.
    # End: lead 90 -> floor(90 / 10) = 9 from alice: alice 181, bob 89.
    sh = Shell.create(chips={"alice": 100, "bob": 200}, rounds=3)
    bob_prep = "prepare gold gold 30 silver 10"
    sh.play_phase(alice=BLACK_PREP, bob=bob_prep)
    sh.play_phase(alice=["bet silver 40", BLACK_PREP], bob=["bet gold 40", bob_prep])
    sh.play_phase(alice=["bet silver 40", BLACK_PREP], bob=["bet gold 40", bob_prep])
    sh.play_phase(alice="bet silver 40")
    assert sh.state.forfeited is None and sh.state.winner == "bob"
    assert sh.state.black_losses["bob"] == 80 and sh.state.idle_black["bob"] == 40
    assert sh.state.points == {"alice": 60, "bob": 150}
    assert chips_after_round(sh) == {"alice": 190, "bob": 80} and sh.house() == 30
    assert sh.chips("alice") == 181 and sh.chips("bob") == 89
    assert "limited by" not in sh.posts("round_result")[-1].body


def test_a_payment_for_a_missing_bet_is_limited_by_the_chips_on_hand():
    # bob has 25 chips and no bet on alice's black roulette: owes 40, pays 25 (on hand);
    # none of it counts towards his cap. alice +20 (b[black] = 0).
    # bob's gold roulette (gold 25 silver 15): alice bets gold 40 -> alice 60, bob 25.
    # alice 80, bob 25; chips alice 100 + 25 - 10 = 115, bob 0, house 10.
    # End: lead 55 -> floor(55 / 10) = 5 due, bob has none: nothing moves.
    sh = one_round(BLACK_PREP, GOLD_PREP, "bet gold 40", None, chips={"alice": 100, "bob": 25})
    assert sh.state.black_losses["bob"] == 0 and sh.state.idle_black["bob"] == 25
    assert sh.state.points == {"alice": 80, "bob": 25}
    assert sh.chips("alice") == 115 and sh.chips("bob") == 0 and sh.house() == 10
    body = sh.posts("round_result")[0].body
    assert "bob pays alice 25 chips of the 40 owed, limited by chips on hand." in body
    final = sh.posts("final_result")[0].body
    assert "floor(55 / 10) = 5 chips due, but bob has no chips on hand: nothing moves" in final
    assert "pays alice 0" not in final


def test_both_black_the_net_paid_by_a_player_without_a_bet_is_not_counted():
    # I-20. alice's black roulette: bob places no bet -> owes 40; alice +20 (b[black] = 0).
    # bob's black roulette: alice bets gold 10 black 30 -> owes 40 - 30 = 10; no bonus.
    # Net: bob pays alice 40 - 10 = 30. bob placed no bet this round, so none of the 30
    # counts towards his cap; alice received 30 through black (the SR-11 tiebreak tally).
    # Fees 10 each: alice 100 + 30 - 10 = 120, bob 100 - 30 - 10 = 60, house 20.
    # End: alice 20, bob 0 -> floor(20 / 10) = 2: alice 122, bob 58.
    sh = one_round(BLACK_PREP, BLACK_PREP, "bet gold 10 black 30", None)
    assert sh.state.black_losses == {"alice": 0, "bob": 0}
    assert sh.state.idle_black == {"alice": 0, "bob": 30}
    assert sh.state.chips_stolen == {"alice": 30, "bob": 0}
    assert chips_after_round(sh) == {"alice": 120, "bob": 60} and sh.house() == 20
    assert sh.chips("alice") == 122 and sh.chips("bob") == 58
    body = sh.posts("round_result")[0].body
    assert "bob owed 40, alice owed 10; only the net difference of 30 moves." in body
    assert "bob pays alice 30 chips." in body and "bob placed no bet this round" in body


def test_both_black_a_player_without_a_bet_owes_the_most_so_the_bettor_never_pays():
    # I-20: alice bets gold 40 on bob's black roulette (owes 40, bob +20); bob places no bet
    # on alice's (owes 40, alice +20). Equal debts: nothing moves (I-7), nobody's black
    # tallies change. Fees 10 each: 90 and 90; points 20 - 20, nothing received: a draw.
    sh = one_round(BLACK_PREP, BLACK_PREP, "bet gold 40", None)
    assert sh.state.black_losses == {"alice": 0, "bob": 0}
    assert sh.state.idle_black == {"alice": 0, "bob": 0}
    assert sh.chips("alice") == 90 and sh.chips("bob") == 90 and sh.house() == 20
    assert sh.state.winner is None
    assert "Nothing moves." in sh.posts("round_result")[0].body


def test_posts_say_plainly_when_a_payment_finds_no_chips():
    # bob has 0 chips. alice's black roulette: bob bets gold 40 -> owes 40, alice +20.
    # bob's black roulette: alice bets black 40 -> owes 0, alice +20 (all 40 on W = black).
    # Net: bob owes 40 but has nothing: nothing moves. Fees: alice 10, bob has nothing.
    # alice 90, bob 0, house 10. End: lead 40 -> 4 due, bob has none.
    sh = one_round(BLACK_PREP, BLACK_PREP, "bet black 40", "bet gold 40",
                   chips={"alice": 100, "bob": 0})
    assert sh.state.points == {"alice": 40, "bob": 0}
    assert sh.chips("alice") == 90 and sh.chips("bob") == 0 and sh.house() == 10
    body = sh.posts("round_result")[0].body
    assert "bob owes alice 40 chips but has no chips on hand: nothing moves." in body
    assert "bob prepared black but has no chips left for the 10-chip house fee: nothing moves" in body
    assert "pays the house 0" not in body and "pays alice 0" not in body


# --- SR-4 colour limit --------------------------------------------------------------------


def test_the_colour_limit_counts_locked_in_preparations_only():
    # colour_limit 1. Preparation phase: alice prepares black, then replaces it with gold:
    # only gold is locked in. Round 1: gold is used up; black is still allowed.
    sh = Shell.create(rounds=3, colour_limit=1)
    sh.play_phase(alice=[BLACK_PREP, "prepare gold gold 30 silver 10"], bob=GOLD_PREP)
    rejected = sh.send("alice", "prepare gold gold 30 silver 10", sh.during())
    assert rejected.rule == "SR-4"
    assert "already prepared gold as the winning colour 1 time," in rejected.what
    assert "left: gold 0, silver 1, black 1" in rejected.what
    assert {line.split()[1] for line in rejected.allowed} == {"silver", "black"}
    sh.accept("alice", BLACK_PREP, sh.during(2))
    confirmation = sh.replies("alice", "confirmation")[-1]
    assert confirmation.draft.context["left_after"] == {"gold": 0, "silver": 1, "black": 0}
    # The pending black does not count yet, so a replacement with silver is still fine.
    sh.accept("alice", "prepare silver gold 30 silver 10", sh.during(3))
    sh.play_phase(alice="bet gold 40", bob=["bet gold 40", "prepare silver gold 25 silver 15"])
    assert sh.state.colours_used["alice"] == {"gold": 1, "silver": 1, "black": 0}
    assert sh.send("alice", "prepare silver gold 30 silver 10", sh.during()).rule == "SR-4"
    # help offers only a colour that is left
    prepare_help = [h for h in RULES.help(sh.state, "alice") if h.startswith("prepare")]
    assert prepare_help and prepare_help[0].startswith("prepare black ")


# --- SR-11 end of game ----------------------------------------------------------------------


def test_equal_points_are_broken_by_chips_received_through_black():
    # alice's black roulette: bob bets gold 30 silver 10 -> owes 40; alice +20 (b[black]=0).
    # bob's gold roulette (gold 25 silver 15): alice bets gold 5 silver 35 -> alice 5, bob 25.
    # points: alice 20 + 5 = 25, bob 25: tied. Chips received through black: alice 40,
    # bob 0 -> alice wins on the tiebreak; lead 0 -> floor(0/10) = 0 chips move (I-15).
    sh = one_round(BLACK_PREP, GOLD_PREP, "bet gold 5 silver 35", "bet gold 30 silver 10")
    assert sh.state.points == {"alice": 25, "bob": 25}
    summary = RULES.summary(sh.state)
    assert summary.winner == "alice" and sh.state.tiebreak is True
    assert summary.detail["tournament_points"] == {"alice": 1, "bob": 0}
    # chips: alice 100 + 40 - 10 = 130, bob 60; no end transfer.
    assert sh.chips("alice") == 130 and sh.chips("bob") == 60 and sh.state.end_transfer == 0
    assert "wins on the tiebreak" in sh.posts("final_result")[0].body


def test_a_full_tie_is_a_draw_with_half_a_tournament_point_each():
    # Both black; each bettor bets gold 40 -> each owes 40, net 0 (nothing moves); each
    # preparer earns 20 (b[black] = 0). Points 20 - 20, received through black 0 - 0: draw.
    # Fees: 10 each -> 90 and 90.
    sh = one_round(BLACK_PREP, BLACK_PREP, "bet gold 40", "bet gold 40")
    assert sh.state.points == {"alice": 20, "bob": 20}
    summary = RULES.summary(sh.state)
    assert summary.status == "finished" and summary.winner is None
    assert summary.detail["draw"] is True
    assert summary.detail["tournament_points"] == {"alice": 0.5, "bob": 0.5}
    assert sh.chips("alice") == 90 and sh.chips("bob") == 90
    assert "A draw (SR-11)" in sh.posts("final_result")[0].body


def test_the_winner_takes_floor_lead_over_10_chips():
    # alice's gold roulette (gold 35 silver 5): bob bets silver 40 -> b[gold] = 0:
    #   alice 35 + 20 = 55, bob 0.
    # bob's silver roulette (gold 25 silver 15): alice bets gold 3 silver 37 ->
    #   alice 37, bob I[silver] = 15.
    # alice 92, bob 15: lead 77 -> floor(77 / 10) = 7 chips from bob to alice.
    sh = one_round("prepare gold gold 35 silver 5", "prepare silver gold 25 silver 15",
                   "bet gold 3 silver 37", "bet silver 40")
    assert sh.state.points == {"alice": 92, "bob": 15}
    assert sh.chips("alice") == 107 and sh.chips("bob") == 93 and sh.state.end_transfer == 7
    assert "floor(77 / 10) = 7 chips" in sh.posts("final_result")[0].body


def test_the_end_transfer_is_at_most_the_losers_chips_on_hand():
    # Same game, bob has only 4 chips: 7 are due, 4 move.
    sh = one_round("prepare gold gold 35 silver 5", "prepare silver gold 25 silver 15",
                   "bet gold 3 silver 37", "bet silver 40", chips={"alice": 100, "bob": 4})
    assert sh.chips("alice") == 104 and sh.chips("bob") == 0 and sh.state.end_transfer == 4
    assert "limited to the 4 chips bob has on hand" in sh.posts("final_result")[0].body


# --- early close (I-14) ---------------------------------------------------------------------


def test_early_close_adjudicates_as_soon_as_everything_due_is_in():
    sh = Shell.create(rounds=2, early_close=True)
    sh.accept("alice", BLACK_PREP, T0 + hours(1))
    assert sh.state.phase == 0  # bob still owes his preparation
    sh.accept("bob", GOLD_PREP, T0 + hours(2))
    # The preparation phase closed at T0 + 2 h; round 1 runs until T0 + 26 h.
    assert sh.state.phase == 1 and sh.state.phase_starts == [T0, T0 + hours(2)]
    assert sh.deadlines == {
        "round-1": T0 + hours(26),
        "reminder-round-1-6h": T0 + hours(20),
        "reminder-round-1-1h": T0 + hours(25),
    }
    closing = sh.replies("bob", "confirmation")[-1]
    assert closing.draft.context["closes_now"] is True and "closes now" in closing.body
    # A message sent before round 1 began, handled now, is too late for the preparation.
    assert "too late" in sh.send("alice", GOLD_PREP, T0 + hours(1.5), fire_first=False).what
    # Round 1: the last submission due closes it (bets and preparations for round 2).
    sh.accept("alice", "bet gold 40", T0 + hours(3))
    sh.accept("bob", "bet gold 40", T0 + hours(4))
    sh.accept("alice", GOLD_PREP, T0 + hours(5))
    assert sh.state.phase == 1
    sh.accept("bob", GOLD_PREP, T0 + hours(6))
    assert sh.state.phase == 2 and sh.deadlines["round-2"] == T0 + hours(30)
    assert sh.posts("round_result")[0].draft.context["early"] is True
    # Round 2 (last): only bets are due.
    sh.accept("alice", "bet silver 40", T0 + hours(7))
    sh.accept("bob", "bet silver 40", T0 + hours(8))
    assert sh.state.status == "finished" and sh.state.ended_at == T0 + hours(8)
    assert sh.deadlines == {}


def test_early_close_closes_a_last_round_in_which_nothing_is_due():
    # Round 1 of 2: both bet but neither prepares; at the deadline both miss their
    # preparation, so round 2 has no roulette and no preparation: it closes at once.
    sh = Shell.create(rounds=2, early_close=True)
    sh.play_phase(alice=GOLD_PREP, bob=GOLD_PREP, close=False)
    sh.play_phase(alice="bet gold 40", bob="bet gold 40")
    assert sh.state.status == "finished"
    # The preparation phase closed early at T0 + 2 h; round 1 ran its 24 h; round 2
    # opened and closed at that same instant.
    assert sh.state.phase_starts == [T0, T0 + hours(2), T0 + hours(26)]
    assert sh.state.ended_at == T0 + hours(26)
    # points: each gold 40 on a gold 25 roulette: 60 for the bettor, 25 for the preparer;
    # then each missed preparation gives the other 60: 60 + 25 + 60 = 145 each -> draw.
    assert sh.state.points == {"alice": 145, "bob": 145}
    assert sh.chips("alice") == 95 and sh.chips("bob") == 95


def test_without_early_close_the_phase_waits_for_its_deadline():
    sh = Shell.create()
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP, close=False)
    assert sh.state.phase == 0 and "preparation" in sh.deadlines


# --- reminders (I-12) -----------------------------------------------------------------------


def test_reminders_go_to_players_who_owe_and_have_not_opted_out():
    sh = Shell.create(remind_before="6h,1h")
    sh.accept("alice", BLACK_PREP, T0 + hours(1))
    sh.fire_due(T0 + hours(18))  # reminder-preparation-6h
    assert [r.to for r in sh.sent if r.kind == "reminder"] == ["bob"]
    reminder = sh.replies("bob", "reminder")[0]
    assert "the preparation phase closes at 2026-12-02 10:00 UTC (in 6 hours)" in reminder.body
    sh.accept("bob", "reminders off", T0 + hours(19))
    assert "Reminders are off" in sh.replies("bob", "reminders")[0].body
    sh.fire_due(T0 + hours(23))  # reminder-preparation-1h: bob opted out, alice owes nothing
    assert len([r for r in sh.sent if r.kind == "reminder"]) == 1
    sh.fire_due(T0 + hours(24))
    # Round 1: bob turns reminders back on and gets one.
    sh.accept("bob", "reminders on", T0 + hours(25))
    sh.fire_due(T0 + hours(42))
    assert [r.to for r in sh.sent if r.kind == "reminder"] == ["bob", "alice", "bob"]
    # bob missed his preparation, so alice has nothing to bet on and owes only hers (I-8);
    # bob owes his bet on alice's roulette and his preparation.
    assert "the roulette bob bets on in round 2" in sh.replies("alice", "reminder")[0].body
    assert "bet" not in RULES.still_owed(sh.state, "alice")
    assert "a bet on alice's roulette" in sh.replies("bob", "reminder")[-1].body


def test_a_reminder_shows_the_deadline_as_an_admin_moved_it():
    # An override moved "preparation" 12 h later; the 6 h reminder keeps its time (I-12)
    # but tells the player the deadline as it now stands.
    sh = Shell.create()
    sh.deadlines["preparation"] = T0 + hours(36)
    sh.fire_due(T0 + hours(18))
    body = sh.replies("alice", "reminder")[0].body
    assert "closes at 2026-12-02 22:00 UTC (in 18 hours)" in body
    sh.fire_due(T0 + hours(36))
    assert sh.state.phase == 1 and sh.state.phase_starts[1] == T0 + hours(36)
    assert sh.deadlines["round-1"] == T0 + hours(60)  # the next phase starts when it closed


def test_no_reminders_when_remind_before_is_empty():
    sh = Shell.create(remind_before="")
    assert list(sh.deadlines) == ["preparation"]


def test_a_stale_deadline_changes_nothing():
    sh = Shell.create()
    ctx = sh.context(T0 + hours(2))
    state = RULES.on_deadline(ctx, sh.state, "round-5")
    assert state == sh.state and ctx.posts == [] and ctx.ledger.staged == []
    assert ctx.events[0].type == "deadline.ignored"


# --- help and summary ---------------------------------------------------------------------


def test_help_lists_valid_examples_for_the_phase(help_is_valid_now):
    # Each help line is accepted when sent; each command help leaves out is refused.
    sh = Shell.create(rounds=2)
    lines = help_is_valid_now(sh, "alice", sh.during())
    assert [line.split(" — ")[0].split()[0] for line in lines] == ["prepare", "reminders", "receipts"]
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    lines = help_is_valid_now(sh, "alice", sh.during())
    assert [line.split(" — ")[0].split()[0] for line in lines] == ["bet", "prepare", "reminders", "receipts"]
    assert lines[0].startswith("bet gold 30 silver 10 — bet 40 points on bob's roulette active "
                               "in round 1") and lines[0].endswith("(SR-5)")
    assert lines[1].endswith("winning colours left: gold 5, silver 5, black 4 (SR-2, SR-4)")
    sh.accept("alice", "reminders off", sh.during())
    assert help_is_valid_now(sh, "alice", sh.during(2))[-2].startswith("reminders on — ")
    assert RULES.help(sh.state, "carol") == []
    sh.play_phase(alice=["bet gold 40", BLACK_PREP], bob=["bet gold 40", GOLD_PREP])
    # round 2, the last: no preparation (SR-3)
    lines = help_is_valid_now(sh, "alice", sh.during())
    assert [line.split()[0] for line in lines] == ["bet", "reminders", "receipts"]
    sh.play_phase(alice="bet gold 40", bob="bet gold 40")
    assert sh.state.status == "finished" and RULES.help(sh.state, "alice") == []


def test_help_offers_no_bet_without_a_roulette_to_bet_on(help_is_valid_now):
    # SR-10 / I-8: bob missed its preparation, so alice has nothing to bet on in round 1.
    sh = Shell.create(rounds=2)
    sh.play_phase(alice=BLACK_PREP)
    lines = help_is_valid_now(sh, "alice", sh.during())
    assert [line.split()[0] for line in lines] == ["prepare", "reminders", "receipts"]
    assert [line.split()[0] for line in help_is_valid_now(sh, "bob", sh.during())] == [
        "bet", "prepare", "reminders", "receipts"]


def test_summary_detail():
    sh = Shell.create()
    summary = RULES.summary(sh.state)
    assert summary.status == "running" and summary.players == ["alice", "bob"]
    assert summary.scores == {"alice": 0, "bob": 0} and summary.winner is None
    assert summary.detail["round"] == 0 and summary.detail["phase"] == "preparation"
    for key in ("tournament_points", "black_losses", "chips_stolen"):
        assert key in summary.detail
    assert RULES.involves(sh.state, "alice") and not RULES.involves(sh.state, "carol")


def test_a_refused_line_changes_nothing_though_rules_work_in_place():
    # The state handed to a rule is the step's own (base.py); a refusal must still leave
    # the game exactly as it was: refuse() compares state, books, deadlines and posts.
    sh = Shell.create()
    sh.accept("alice", BLACK_PREP, sh.during())
    rejected = sh.refuse("alice", "bet gold 40", sh.during(2))
    assert rejected.rule == "SR-3"


def test_state_survives_a_json_round_trip_mid_game():
    sh = Shell.create()
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    sh.accept("alice", "bet gold 40", sh.during())
    data = sh.state.model_dump(mode="json")
    assert RouletteState.model_validate(data) == sh.state
    assert isinstance(Context, type)  # the contract type the shell builds
