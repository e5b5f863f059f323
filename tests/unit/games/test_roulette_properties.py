"""Stationary Roulette properties over random whole games (hypothesis).

Random legal, illegal and missing submissions, random stacks and settings: chips are
conserved (ledger totals stay zero), no wallet goes negative, black losses never pass the
cap, nothing forbidden is reached, and every game ends with a valid result.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dealer.games.roulette.model import BLACK_LOSS_CAP, COLOURS, phase_name
from dealer.games.roulette.testing import RULES, Shell, hours
from dealer.ledger import CHIPS, MINT, player

PLAYERS = ("alice", "bob")

valid_preparation = st.builds(
    lambda colour, gold: f"prepare {colour} gold {gold} silver {40 - gold}",
    st.sampled_from(COLOURS), st.integers(25, 35),
)
one_colour_bet = st.builds(lambda colour: f"bet {colour} 40", st.sampled_from(COLOURS))
two_colour_bet = st.builds(
    lambda pair, first: f"bet {pair[0]} {first} {pair[1]} {40 - first}",
    st.sampled_from([("gold", "silver"), ("gold", "black"), ("silver", "black")]),
    st.integers(1, 39),
)
junk = st.sampled_from([
    "bet gold 41", "bet gold 10 silver 10 black 20", "prepare black gold 20 silver 20",
    "prepare gold 30 silver 10", "bet black -4", "hello", "reminders off", "reminders on",
    "bet gold 20 gold 20", "prepare silver gold 30 silver 10 black 1",
])
line = st.one_of(valid_preparation, valid_preparation, one_colour_bet, two_colour_bet, junk)


def check_invariants(sh: Shell, total: int, limit: int) -> None:
    """What must hold after every step."""
    totals = {item: 0 for (_, item) in sh.balances}
    for (account, item), amount in sh.balances.items():
        totals[item] += amount
        assert account == MINT or amount >= 0, (account, amount)
    assert all(v == 0 for v in totals.values()), totals
    held = sum(sh.chips(p) for p in PLAYERS) + sh.house()
    assert held == total  # chips only move between the players and the house
    for name in PLAYERS:
        assert 0 <= sh.state.black_losses[name] <= BLACK_LOSS_CAP
        assert sh.state.points[name] >= 0
        assert all(n <= limit for n in sh.state.colours_used[name].values())
    # chips received through black are exactly the chips paid through black: counted
    # towards the cap (SR-9) or paid for a round without a bet (SR-10, I-20)
    paid = sum(sh.state.black_losses.values()) + sum(sh.state.idle_black.values())
    assert sum(sh.state.chips_stolen.values()) == paid


def check_result(sh: Shell) -> None:
    """A finished game has a valid winner or a draw (SR-9, SR-11)."""
    state = sh.state
    summary = RULES.summary(state)
    assert summary.status == "finished" and sh.deadlines == {}
    points = state.points
    tp = summary.detail["tournament_points"]
    assert sorted(tp.values()) in ([0, 1], [0.5, 0.5])
    if state.forfeited:
        assert state.black_losses[state.forfeited] == BLACK_LOSS_CAP
        assert summary.winner == state.opponent(state.forfeited) and state.end_transfer == 0
        return
    assert state.phase == state.last_round
    if summary.winner is None:
        assert points["alice"] == points["bob"]
        assert state.chips_stolen["alice"] == state.chips_stolen["bob"]
        assert state.end_transfer == 0
        return
    loser = state.opponent(summary.winner)
    lead = points[summary.winner] - points[loser]
    assert lead > 0 or (lead == 0 and state.chips_stolen[summary.winner] > state.chips_stolen[loser])
    assert 0 <= state.end_transfer <= lead // 10
    assert tp[summary.winner] == 1


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    rounds=st.integers(1, 4),
    stacks=st.tuples(st.integers(0, 150), st.integers(0, 150)),
    early_close=st.booleans(),
    colour_limit=st.integers(1, 5),
)
def test_random_games_conserve_chips_and_always_finish(data, rounds, stacks, early_close, colour_limit):
    chips = dict(zip(PLAYERS, stacks))
    sh = Shell.create(chips=chips, rounds=rounds, early_close=early_close,
                      colour_limit=colour_limit, render=False)
    total = sum(stacks)
    check_invariants(sh, total, colour_limit)
    for _ in range(rounds + 1):
        if sh.state.status == "finished":
            break
        phase = sh.state.phase
        plan = [
            (data.draw(st.floats(0, 23.5), label="hour"), name, data.draw(line, label="line"))
            for name in PLAYERS
            for _ in range(data.draw(st.integers(0, 3), label="count"))
        ]
        for hour, name, text in sorted(plan):
            if sh.state.status == "finished":
                break
            sh.send(name, text, sh.state.phase_starts[phase] + hours(hour))
            check_invariants(sh, total, colour_limit)
        if sh.state.status == "running" and sh.state.phase == phase:
            sh.fire_due(sh.deadlines[phase_name(phase)])
            check_invariants(sh, total, colour_limit)
        if data.draw(st.booleans(), label="late message"):
            # sent just before the phase closed, handled after: always refused
            closed = sh.state.ended_at or sh.state.phase_starts[-1]
            late = sh.send("alice", "bet gold 40", closed - timedelta(minutes=1), fire_first=False)
            assert late is not None
    assert sh.state.status == "finished"
    check_result(sh)
    check_invariants(sh, total, colour_limit)
    assert all(sh.balances[(player(p), CHIPS)] >= 0 for p in PLAYERS)


black_heavy_preparation = st.builds(
    lambda colour, gold: f"prepare {colour} gold {gold} silver {40 - gold}",
    st.sampled_from(["black", "black", "gold", "silver"]), st.integers(25, 35),
)
bet_avoiding_black = st.one_of(
    st.builds(lambda c: f"bet {c} 40", st.sampled_from(["gold", "silver"])),
    st.builds(lambda a: f"bet gold {a} silver {40 - a}", st.integers(1, 39)),
    two_colour_bet,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    rounds=st.integers(3, 10),
    stacks=st.tuples(st.integers(0, 300), st.integers(0, 300)),
)
def test_diligent_black_heavy_games_respect_the_cap(data, rounds, stacks):
    """Both players submit every phase (mostly black roulettes, bets mostly off black), so
    the cap, forfeits, both-black rounds and the SR-4 limit are reached often."""
    chips = dict(zip(PLAYERS, stacks))
    sh = Shell.create(chips=chips, rounds=rounds, render=False)
    total = sum(stacks)
    while sh.state.status == "running":
        phase = sh.state.phase
        hour = 1.0
        for name in PLAYERS:
            if phase >= 1 and sh.state.active.get(sh.state.opponent(name)):
                sh.accept(name, data.draw(bet_avoiding_black, label="bet"), sh.during(hour))
                hour += 1
            if phase < rounds:
                # a preparation may be refused by SR-4; then the player tries other colours
                for text in [data.draw(black_heavy_preparation, label="prep"),
                             "prepare gold gold 30 silver 10", "prepare silver gold 30 silver 10"]:
                    if sh.send(name, text, sh.during(hour)) is None:
                        break
                hour += 1
            check_invariants(sh, total, 5)
        sh.fire_due(sh.deadlines[phase_name(phase)])
        check_invariants(sh, total, 5)
    check_result(sh)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    rounds=st.integers(3, 10),
    stacks=st.tuples(st.integers(0, 300), st.integers(0, 300)),
    bob_prepares=st.booleans(),
)
def test_a_player_who_never_bets_is_never_forfeited_through_black(data, rounds, stacks,
                                                                 bob_prepares):
    """SR-10: bob never bets (and may never prepare either); alice prepares mostly black
    roulettes and bets at random. Whatever bob pays through black is an inactivity
    payment: it never counts towards his cap, so he never forfeits, and chips are still
    conserved."""
    chips = dict(zip(PLAYERS, stacks))
    sh = Shell.create(chips=chips, rounds=rounds, render=False)
    total = sum(stacks)
    while sh.state.status == "running":
        phase = sh.state.phase
        if phase >= 1 and sh.state.active.get("bob"):
            sh.send("alice", data.draw(line, label="alice bet"), sh.during(1))
        if phase < rounds:
            for text in [data.draw(black_heavy_preparation, label="prep"),
                         "prepare gold gold 30 silver 10", "prepare silver gold 30 silver 10"]:
                if sh.send("alice", text, sh.during(2)) is None:
                    break
            if bob_prepares:
                sh.send("bob", data.draw(valid_preparation, label="bob prep"), sh.during(3))
        assert "bob" not in sh.state.bets
        sh.fire_due(sh.deadlines[phase_name(phase)])
        check_invariants(sh, total, 5)
        assert sh.state.black_losses["bob"] == 0
    check_result(sh)
    assert sh.state.forfeited != "bob"
    # bob paid every black roulette alice prepared, up to his chips on hand
    assert sh.state.chips_stolen["alice"] == sh.state.idle_black["bob"]
