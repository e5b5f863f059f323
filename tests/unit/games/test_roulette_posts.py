"""Stationary Roulette's posts: every template renders, says what players need, and
escapes player text."""

from __future__ import annotations

import re
from pathlib import Path

from dealer.detail import BRIEF
from dealer.games.roulette.testing import T0, Shell, hours
from dealer.render import render_post

TEMPLATES = Path(__file__).resolve().parents[3] / "templates" / "roulette"
BLACK_PREP = "prepare black gold 30 silver 10"
GOLD_PREP = "prepare gold gold 30 silver 10"


def forfeit_game(alice: str = "alice", bob: str = "bob") -> Shell:
    """A game that produces every post kind: bob misses a preparation, opts out of and back
    into reminders, asks for its receipts, and forfeits in round 3 (black losses 40 + 40 + 20 = 100, I-5)."""
    sh = Shell.create(chips={alice: 100, bob: 200})
    sh.accept(bob, "reminders off", sh.during(0.5))
    sh.accept(bob, "reminders on", sh.during(0.6))
    sh.accept(bob, "receipts", sh.during(0.7))
    sh.play_phase(**{alice: BLACK_PREP})  # bob misses his first preparation (SR-10)
    sh.play_phase(**{alice: BLACK_PREP, bob: ["bet gold 40", GOLD_PREP]})
    for _ in range(2):
        sh.play_phase(**{alice: ["bet silver 40", BLACK_PREP], bob: ["bet gold 40", GOLD_PREP]})
    assert sh.state.status == "finished" and sh.state.forfeited == bob
    return sh


def test_every_template_is_used_and_renders():
    sh = forfeit_game()
    used = {s.draft.template for s in sh.sent}
    # A brief version and a reply's footer sit beside their template (dealer/detail.py); the
    # explanations are the shell's (dealer/shell/brief.py).
    files = {f"roulette/{p.name}" for p in TEMPLATES.glob("*.txt")
             if p.name.count(".") == 1 and p.name != "explain.txt"}
    assert used == files
    for sent in sh.sent:
        assert sent.body.strip(), sent.kind
        assert "{{" not in sent.body and "{%" not in sent.body


def test_player_names_are_escaped_in_every_post():
    evil, other = "_x*@everyone", "[b]bob[/b]"
    sh = forfeit_game(evil, other)
    for sent in sh.sent:
        assert "@everyone" not in sent.body, sent.kind
        assert "[b]" not in sent.body, sent.kind
    opening = sh.posts("opening")[0].body
    assert "\\_x\\*@\u2060everyone" in opening and "\\[b\\]bob\\[/b\\]" in opening


def test_posts_state_the_deadline_in_utc_and_relative():
    sh = forfeit_game()
    first_round = sh.posts("phase_start")[1]
    assert "Deadline (round-1): 2026-12-03 10:00 UTC (in 1 day)." in first_round.body
    result = sh.posts("round_result")[0]
    assert "Next: round 2, deadline 2026-12-04 10:00 UTC (in 1 day)." in result.body
    confirmation = sh.replies("alice", "confirmation")[0]
    assert "Deadline: 2026-12-02 10:00 UTC (in 23 hours)." in confirmation.body


def test_the_round_start_post_shows_layouts_and_commitments_but_never_the_colour():
    sh = Shell.create()
    sh.play_phase(alice=BLACK_PREP, bob="prepare silver gold 25 silver 15")
    start = sh.posts("phase_start")[-1]
    assert "alice's roulette for bob: layout gold 30, silver 10, black 0 (SR-7)." in start.body
    assert "bob's roulette for alice: layout gold 25, silver 15, black 0 (SR-7)." in start.body
    for preparer in ("alice", "bob"):
        assert sh.state.active[preparer].commitment in start.body
    roulette_lines = [line for line in start.body.splitlines() if "'s roulette for" in line]
    assert len(roulette_lines) == 2
    for card in start.draft.context["roulettes"]:
        assert "colour" not in card  # the winning colour is never in the post's data
    assert all("winning" not in line for line in roulette_lines)


def test_with_layout_public_off_the_layout_stays_secret_until_the_result():
    sh = Shell.create(layout_public=False, rounds=1)
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    start = sh.posts("phase_start")[-1].body
    assert "alice's roulette for bob: layout secret until the result." in start
    assert "gold 30, silver 10" not in start
    sh.accept("bob", "bet gold 40", sh.during())
    assert "gold 30, silver 10" not in sh.replies("bob", "confirmation")[-1].body
    sh.play_phase(alice="bet gold 40")
    assert "layout gold 30, silver 10, black 0." in sh.posts("round_result")[0].body


def test_the_final_result_reveals_the_server_seed_and_the_tournament_points():
    sh = forfeit_game()
    final = sh.posts("final_result")[0].body
    assert sh.state.players[0] + " 1" in final and "bob 0" in final
    assert "server seed 5eed" in final
    assert "bob forfeited (SR-9): alice wins." in final


def test_the_pending_opening_post_gives_the_start_time():
    sh = Shell.create(start=T0 + hours(30), now=T0)
    body = sh.posts("opening")[0].body
    assert "The game starts at 2026-12-02 16:00 UTC (in 1 day 6 h)" in body


BAD_PLURALS = re.compile(
    r"\b1 (chips|points|rounds|times|vertebraes?|cards|horses|actions|draws|days|hours|minutes|seconds)\b"
    r"|\b\d+ (d|s)\b|\b0 (h|min)\b"
)


def one_chip_game() -> Shell:
    """Worked by hand (SR-8, SR-9, SR-11): one round of 1 day; alice starts with 0 chips,
    bob with 1. Round 1: bob bets black 39 gold 1 on alice's black roulette and owes
    40 - 39 = 1 chip, which he has; alice then pays the black fee with that 1 chip (all
    she has). Alice bets gold 40 on bob's gold roulette: 40 + 20 bonus = 60 points; bob
    earns his layout's 25. Lead 35: floor(35 / 10) = 3 chips due, but bob has 0."""
    sh = Shell.create(chips={"alice": 0, "bob": 1}, rounds=1, round_length="24h",
                      preparation_length="1d1h30m", colour_limit=1)
    sh.play_phase(alice="prepare black gold 30 silver 10", bob="prepare gold gold 25 silver 15")
    sh.play_phase(alice="bet gold 40", bob="bet black 39 gold 1")
    assert sh.state.status == "finished" and sh.state.points == {"alice": 60, "bob": 25}
    return sh


def test_counts_of_one_are_singular_in_every_post():
    sh = one_chip_game()
    opening = sh.posts("opening")[0].body
    assert "a preparation phase of 1 day 1 h 30 min, then 1 round of 1 day each." in opening
    assert "Starting stacks (SR-12): alice 0 chips, bob 1 chip." in opening
    assert "at most 1 time (SR-4)" in opening
    result = sh.posts("round_result")[0].body
    assert "bob owes alice 40 - 39 = 1 chip (SR-9, settled below)." in result
    assert "bob pays alice 1 chip." in result
    assert "alice prepared black and pays the house 1 chip (all they had left; the fee is 10)" in result
    final = sh.posts("final_result")[0].body
    assert ("floor(35 / 10) = 3 chips due, but bob has no chips on hand: "
            "nothing moves (SR-11).") in final
    for sent in sh.sent + forfeit_game().sent:
        assert not BAD_PLURALS.search(sent.body), (sent.kind, BAD_PLURALS.search(sent.body))


def test_a_round_start_after_a_missed_preparation_asks_a_bet_only_of_who_can_bet():
    # bob misses his preparation: in round 1 only bob bets (on alice's roulette); alice has
    # no roulette to bet on, so the post must not ask her for a bet (SR-10, I-8).
    sh = Shell.create(rounds=2)
    sh.play_phase(alice=GOLD_PREP)
    body = sh.posts("phase_start")[-1].body
    assert "bob missed their preparation (SR-10): alice has no roulette to bet on this round." in body
    assert "- from bob: a bet of 40 points on alice's roulette" in body
    assert "- from alice: no bet this round, there is no roulette to bet on." in body
    assert "- from both players: the roulette for round 2" in body
    assert "Each player" not in body
    bet_requests = [line for line in body.splitlines() if "a bet of 40 points" in line]
    assert len(bet_requests) == 1 and "alice" not in bet_requests[0].split(":")[0]


def test_a_round_start_with_both_roulettes_asks_each_bettor_by_name():
    sh = Shell.create(rounds=2)
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    body = sh.posts("phase_start")[-1].body
    assert "- from bob: a bet of 40 points on alice's roulette" in body
    assert "- from alice: a bet of 40 points on bob's roulette" in body
    assert "no roulette to bet on" not in body


def test_a_tiebreak_win_says_there_is_no_transfer_for_the_lead():
    # alice's black roulette: bob bets gold 30 silver 10 -> owes 40, alice +20 (b[black] = 0).
    # bob's gold roulette (gold 30 silver 10): alice bets gold 10 silver 30 -> alice 10,
    # bob I[gold] = 30. Points alice 30, bob 30: tied; chips received through black alice
    # 40, bob 0 -> alice wins on the tiebreak (SR-11) with a lead of 0: nothing moves.
    sh = Shell.create(rounds=1)
    sh.play_phase(alice=BLACK_PREP, bob=GOLD_PREP)
    sh.play_phase(alice="bet gold 10 silver 30", bob="bet gold 30 silver 10")
    assert sh.state.points == {"alice": 30, "bob": 30} and sh.state.winner == "alice"
    body = sh.posts("final_result")[0].body
    assert "alice wins on the tiebreak (SR-11)" in body
    assert "No chip transfer for the lead: the points are equal, so there is no lead" in body
    assert "floor(0" not in body and "pays alice 0" not in body


def test_a_lead_under_10_points_says_there_is_no_transfer():
    # alice's gold roulette (gold 30 silver 10): bob bets gold 25 silver 15 -> alice 30,
    # bob 25. bob's gold roulette (gold 30 silver 10): alice bets gold 30 silver 10 ->
    # alice 30, bob 30. alice 60, bob 55: lead 5 -> floor(5 / 10) = 0 chips (SR-11).
    sh = Shell.create(rounds=1)
    sh.play_phase(alice=GOLD_PREP, bob=GOLD_PREP)
    sh.play_phase(alice="bet gold 30 silver 10", bob="bet gold 25 silver 15")
    assert sh.state.points == {"alice": 60, "bob": 55}
    body = sh.posts("final_result")[0].body
    assert "alice wins with a lead of 5 points (SR-11)." in body
    assert ("No chip transfer for the lead: the winner takes 1 chip per full 10 points of "
            "lead, and the lead is only 5 (SR-11).") in body
    assert "pays alice 0" not in body


def test_every_brief_post_renders_short_with_player_text_escaped():
    # Brief versions (dealer/detail.py) of every post of a whole game, with hostile names.
    for sent in forfeit_game().sent:
        body = render_post(sent.draft, sent.at, "g1", detail=BRIEF)
        assert len(body) <= 900 if sent.kind == "round_result" else len(body) <= 2000, (sent.kind, body)
        # Whole hashes only where a player needs them whole: the seed's commitment and the
        # seed, and the `receipts` answer.
        assert not re.search(r"[0-9a-f]{64}", body) or sent.kind in ("opening", "final_result", "receipts"), body
    evil, other = "_x*@everyone", "[b]bob[/b]"
    sh = forfeit_game(evil, other)
    for sent in sh.sent:
        body = render_post(sent.draft, sent.at, "g1", detail=BRIEF)
        assert body.strip() and "{{" not in body and "{%" not in body, sent.kind
        assert "@everyone" not in body and "[b]" not in body, sent.kind
    brief = render_post(sh.posts("round_result")[0].draft, sh.posts("round_result")[0].at, "g1", detail=BRIEF)
    assert "\\_x\\*@\u2060everyone's roulette for \\[b\\]bob\\[/b\\]" in brief
