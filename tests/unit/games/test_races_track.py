"""The race's movement and laps (OR-6, OR-7, OR-8) from given cards: pure functions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dealer.cards import BY_CODE, STANDARD_DECK
from dealer.games.races.track import bar, lap_action, lap_trigger, race_action, race_length, shares

K_S, TWO_H, FIVE_C, SIX_H = (BY_CODE[c] for c in ("KS", "2H", "5C", "6H"))
FIELD = [K_S, TWO_H, FIVE_C, SIX_H]  # a black king, two hearts, a black club


def test_length_is_twice_the_field():
    # OR-6: 4 horses -> 2 x 4 = 8; 7 horses -> 14.
    assert race_length(4) == 8
    assert race_length(7) == 14


def test_sharing_suit_rank_or_colour():
    # OR-7: K♥ shares rank with K♠, colour with 2♥ and 6♥ (and suit), nothing with 5♣.
    drawn = BY_CODE["KH"]
    assert [shares(card, drawn) for card in FIELD] == [True, True, False, True]


def test_a_joker_horse_shares_only_its_colour():
    red_joker = BY_CODE["RJ"]
    assert shares(red_joker, BY_CODE["KH"]) and shares(red_joker, BY_CODE["2D"])
    assert not shares(red_joker, BY_CODE["KS"]) and not shares(red_joker, BY_CODE["2C"])


def test_race_action_moves_the_sharing_horses():
    # 9♠ is black: K♠ (suit, colour) and 5♣ (colour) move; the hearts stay.
    action = race_action(FIELD, [0, 0, 0, 0], 8, -1, BY_CODE["9S"])
    assert action.after == (1, 0, 1, 0)
    assert action.moved == (0, 2) and not action.everyone
    assert action.winners == () and action.lap_at is None  # min 0: no k >= 0 passed yet


def test_race_action_moves_everyone_when_nobody_shares():
    # An all-red field and a black card: no suit, rank or colour in common -> all +1.
    reds = [BY_CODE[c] for c in ("2H", "3H", "4D", "5D")]
    action = race_action(reds, [0, 2, 1, 0], 8, -1, BY_CODE["9C"])
    assert action.after == (1, 3, 2, 1)
    assert action.everyone and action.moved == (0, 1, 2, 3)


def test_lap_action_moves_the_sharing_horses_back():
    # OR-8: 3♦ is red -> the two hearts move back; nobody moves if nothing matches.
    action = lap_action(FIELD, [2, 1, 1, 1], BY_CODE["3D"])
    assert action.after == (2, 0, 1, 0) and action.moved == (1, 3)
    reds = [BY_CODE[c] for c in ("2H", "3H")]
    assert lap_action(reds, [1, 1], BY_CODE["9C"]).after == (1, 1)


def test_lap_trigger_over_a_scripted_sequence():
    """OR-8 step by step; positions are (K♠, 2♥, 5♣, 6♥), length 8.

    1 race 9♠ black: K♠ 5♣ +1 -> (1,0,1,0), min 0: k = -1, nothing owed
    2 race 8♥ red: 2♥ 6♥ +1 -> (1,1,1,1), min 1: k = 0 > -1 -> Lap owed (k = 0)
    3 lap 10♠ black: K♠ 5♣ -1 -> (0,1,0,1)
    4 race K♦ red + rank K: K♠ 2♥ 6♥ +1 -> (1,2,0,2), min 0: nothing owed
    5 race 5♣ black: K♠ 5♣ +1 -> (2,2,1,2), min 1: k = 0 is not > 0 (not the first time)
    6 race 2♣ black + rank 2: K♠ 2♥ 5♣ +1 -> (3,3,2,2), min 2: k = 1 > 0 -> Lap owed (k = 1)
    """
    positions, last_k = [0, 0, 0, 0], -1
    steps = [
        ("race", "9S", (1, 0, 1, 0), None),
        ("race", "8H", (1, 1, 1, 1), 0),
        ("lap", "10S", (0, 1, 0, 1), None),
        ("race", "KD", (1, 2, 0, 2), None),
        ("race", "5C", (2, 2, 1, 2), None),
        ("race", "2C", (3, 3, 2, 2), 1),
    ]
    for kind, code, expected, owed in steps:
        if kind == "race":
            action = race_action(FIELD, positions, 8, last_k, BY_CODE[code])
        else:
            action = lap_action(FIELD, positions, BY_CODE[code])
        assert action.after == expected, code
        assert action.lap_at == owed, code
        positions = list(action.after)
        last_k = owed if owed is not None else last_k


def test_a_winning_race_action_owes_no_lap():
    # All-red field at (8,7,7,7), k = 6 already triggered; a black 9♣ moves every horse:
    # (9,8,8,8): min 8 would pass k = 7 for the first time, but 9 > 8 wins: no Lap (OR-8).
    reds = [BY_CODE[c] for c in ("2H", "3H", "4D", "5D")]
    action = race_action(reds, [8, 7, 7, 7], 8, 6, BY_CODE["9C"])
    assert action.after == (9, 8, 8, 8)
    assert action.winners == (0,) and action.lap_at is None
    assert lap_trigger(action.after, 6) == 7  # what would have been owed without the win


def test_several_horses_can_win_at_once():
    # K♠ and 5♣ at 8 of 8, a black card: both reach 9 > 8 and both win (OR-6).
    action = race_action(FIELD, [8, 3, 8, 4], 8, 2, BY_CODE["7C"])
    assert action.winners == (0, 2)


def test_bar_shows_progress_and_the_finish():
    assert bar(3, 8) == "■■■□□□□□ 🏁"
    assert bar(9, 8) == "■■■■■■■■ 🏁■"
    assert bar(0, 4) == "□□□□ 🏁"


def _field():
    return st.lists(st.sampled_from(STANDARD_DECK), min_size=1, max_size=8, unique=True)


@settings(max_examples=150, deadline=None)
@given(cards=_field(), data=st.data())
def test_every_race_ends_and_no_horse_goes_below_zero(cards, data):
    """Whatever cards come, a race ends within a bounded number of actions.

    Each Race Action adds at least 1 to the sum of positions, which stays at most
    N x length before a win; each of the at most length Laps takes at most N away. So
    Race Actions <= N x length + N x length + 1, Laps <= length.
    """
    n, length = len(cards), race_length(len(cards))
    positions, last_k, lap_owed, races, laps = [0] * n, -1, False, 0, 0
    while True:
        drawn = data.draw(st.sampled_from(STANDARD_DECK))
        if lap_owed:
            action = lap_action(cards, positions, drawn)
            lap_owed, laps = False, laps + 1
        else:
            action = race_action(cards, positions, length, last_k, drawn)
            races += 1
            if action.lap_at is not None:
                assert action.lap_at == last_k + 1  # ks are triggered 0, 1, 2 ... in turn
                lap_owed, last_k = True, action.lap_at
        positions = list(action.after)
        assert min(positions) >= 0
        if action.winners:
            assert all(positions[i] == length + 1 for i in action.winners)
            break
        assert max(positions) <= length
        assert races <= 2 * n * length + 1 and laps <= length
