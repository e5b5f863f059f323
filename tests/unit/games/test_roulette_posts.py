"""Stationary Roulette's posts: every template renders, says what players need, and
escapes player text."""

from __future__ import annotations

from pathlib import Path

from dealer.games.roulette.testing import T0, Shell, hours

TEMPLATES = Path(__file__).resolve().parents[3] / "templates" / "roulette"
BLACK_PREP = "prepare black gold 30 silver 10"
GOLD_PREP = "prepare gold gold 30 silver 10"


def forfeit_game(alice: str = "alice", bob: str = "bob") -> Shell:
    """A game that produces every post kind: bob misses a preparation, opts out of and back
    into reminders, and forfeits in round 3 (black losses 40 + 40 + 20 = 100, I-5)."""
    sh = Shell.create(chips={alice: 100, bob: 200})
    sh.accept(bob, "reminders off", sh.during(0.5))
    sh.accept(bob, "reminders on", sh.during(0.6))
    sh.play_phase(**{alice: BLACK_PREP})  # bob misses his first preparation (SR-10)
    sh.play_phase(**{alice: BLACK_PREP, bob: ["bet gold 40", GOLD_PREP]})
    for _ in range(2):
        sh.play_phase(**{alice: ["bet silver 40", BLACK_PREP], bob: ["bet gold 40", GOLD_PREP]})
    assert sh.state.status == "finished" and sh.state.forfeited == bob
    return sh


def test_every_template_is_used_and_renders():
    sh = forfeit_game()
    used = {s.draft.template for s in sh.sent}
    files = {f"roulette/{p.name}" for p in TEMPLATES.glob("*.txt")}
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
    assert "Deadline (round-1): 2026-12-03 10:00 UTC (in 1 d)." in first_round.body
    result = sh.posts("round_result")[0]
    assert "Next: round 2, deadline 2026-12-04 10:00 UTC (in 1 d)." in result.body
    confirmation = sh.replies("alice", "confirmation")[0]
    assert "Deadline: 2026-12-02 10:00 UTC (in 23 h)." in confirmation.body


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
    assert "The game starts at 2026-12-02 16:00 UTC (in 1 d 6 h)" in body
