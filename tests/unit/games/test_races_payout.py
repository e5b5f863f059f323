"""OR-9 payouts and OR-10 refunds: worked examples computed by hand, and properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dealer.games.races.payout import Payment, payout, refund
from dealer.games.races.state import Bet, Horse
from dealer.games.races.testing import T0

THUNDER = Horse(name="Thunder Hooves", card="KS", owner="alice")
LIGHTNING = Horse(name="Lightning", card="2H", owner="bob")
NPC = Horse(name="5 of Clubs", card="5C")


def bets(*rows: tuple[str, str, int]) -> list[Bet]:
    return [Bet(bettor=b, horse=h, amount=a, at=T0) for b, h, a in rows]


def paid(payments: list[Payment]) -> dict[str, int]:
    """What each bettor receives (void payments excluded)."""
    out: dict[str, int] = {}
    for p in payments:
        if not p.void:
            out[p.bettor] = out.get(p.bettor, 0) + p.amount
    return out


def voided(payments: list[Payment]) -> list[tuple[str, int]]:
    return [(p.reason, p.amount) for p in payments if p.void]


def test_one_winner_pays_its_bettors_pro_rata():
    # Pool 100, house floor(10 % x 100) = 10, P = 90; Thunder wins alone: allocation 90.
    # On Thunder: alice 30, carol 20, T = 50 -> alice floor(90 x 30 / 50) = 54,
    # carol floor(90 x 20 / 50) = 36; 54 + 36 = 90, nothing to void.
    table = bets(("alice", "Thunder Hooves", 30), ("carol", "Thunder Hooves", 20),
                 ("bob", "Lightning", 50))
    result = payout(90, [THUNDER], table, set())
    assert paid(result) == {"alice": 54, "carol": 36}
    assert voided(result) == []


def test_two_winners_split_the_prize():
    # Pool 101, house floor(10.1) = 10, P = 91; two winners: allocation floor(91 / 2) = 45
    # each, 91 - 90 = 1 to void. alice (41 on Thunder) gets floor(45 x 41 / 41) = 45,
    # bob (30 on Lightning) gets 45, carol (30 on the NPC, which lost) gets nothing.
    table = bets(("alice", "Thunder Hooves", 41), ("bob", "Lightning", 30),
                 ("carol", "5 of Clubs", 30))
    result = payout(91, [THUNDER, LIGHTNING], table, set())
    assert paid(result) == {"alice": 45, "bob": 45}
    assert voided(result) == [("rounding", 1)]


def test_an_npc_winner_pays_nobody():
    # P = 90, the NPC wins alone: its allocation of 90 goes to void, even for dave who
    # bet 20 on it ("a horse that a player entered" is what pays, OR-9).
    table = bets(("alice", "Thunder Hooves", 30), ("dave", "5 of Clubs", 20))
    result = payout(90, [NPC], table, set())
    assert paid(result) == {}
    assert voided(result) == [("npc", 90)]


def test_a_winning_horse_nobody_bet_on():
    # P = 90, Thunder and Lightning win: 45 each. Nobody bet on Lightning -> 45 to void;
    # bob 10 and carol 20 on Thunder, T = 30: bob floor(45 x 10 / 30) = 15,
    # carol floor(45 x 20 / 30) = 30.
    table = bets(("bob", "Thunder Hooves", 10), ("carol", "Thunder Hooves", 20))
    result = payout(90, [THUNDER, LIGHTNING], table, set())
    assert paid(result) == {"bob": 15, "carol": 30}
    assert voided(result) == [("no_bets", 45)]


def test_a_bettor_who_stood_up_wins_nothing():
    # P = 90, Thunder wins; alice (seated, stood up) 30 and carol 20, T = 50:
    # alice's floor(90 x 30 / 50) = 54 goes to void, carol gets floor(90 x 20 / 50) = 36.
    table = bets(("alice", "Thunder Hooves", 30), ("carol", "Thunder Hooves", 20))
    result = payout(90, [THUNDER], table, {"alice"})
    assert paid(result) == {"carol": 36}
    assert [(p.reason, p.bettor, p.amount) for p in result if p.void] == [("stood_up", "alice", 54)]


def test_rounding_remainders_go_to_void():
    # Pool 111: house floor(11.1) = 11, P = 100, Thunder wins: allocation 100.
    # alice, bob, carol 1 each on it, T = 3: each floor(100 x 1 / 3) = 33, 99 paid,
    # 100 - 99 = 1 to void.
    table = bets(("alice", "Thunder Hooves", 1), ("bob", "Thunder Hooves", 1),
                 ("carol", "Thunder Hooves", 1), ("dave", "Lightning", 108))
    result = payout(100, [THUNDER], table, set())
    assert paid(result) == {"alice": 33, "bob": 33, "carol": 33}
    assert voided(result) == [("rounding", 1)]


def test_several_bets_of_one_bettor_on_a_horse_add_up():
    # alice bets 10 then 20 on Thunder (30), carol 20, T = 50, allocation 90: as above.
    table = bets(("alice", "Thunder Hooves", 10), ("carol", "Thunder Hooves", 20),
                 ("alice", "Thunder Hooves", 20))
    assert paid(payout(90, [THUNDER], table, set())) == {"alice": 54, "carol": 36}


def test_refund_pro_rata():
    # OR-10: pool 100, house 10, P = 90. alice put in 30 + 20 = 50, bob 33, carol 17:
    # alice floor(90 x 50 / 100) = 45, bob floor(90 x 33 / 100) = floor(29.7) = 29,
    # carol floor(90 x 17 / 100) = floor(15.3) = 15; 45 + 29 + 15 = 89, 1 to void.
    table = bets(("alice", "Thunder Hooves", 30), ("bob", "Lightning", 33),
                 ("alice", "Lightning", 20), ("carol", "5 of Clubs", 17))
    result = refund(90, table)
    assert paid(result) == {"alice": 45, "bob": 29, "carol": 15}
    assert voided(result) == [("rounding", 1)]


def test_refund_of_the_whole_pool_returns_every_bet():
    # During betting nothing went to the house: prize = pool = 50, so floor(50 x S / 50) = S.
    table = bets(("alice", "Thunder Hooves", 13), ("bob", "Lightning", 37))
    assert paid(refund(50, table)) == {"alice": 13, "bob": 37}
    assert refund(0, []) == []


HORSES = [THUNDER, LIGHTNING, NPC, Horse(name="Dancer", card="RJ", owner="carol")]
BETTORS = ["alice", "bob", "carol", "dave"]


@st.composite
def tables(draw):
    rows = draw(st.lists(
        st.tuples(st.sampled_from(BETTORS), st.sampled_from(HORSES), st.integers(1, 500)),
        max_size=12,
    ))
    table = [Bet(bettor=b, horse=h.name, amount=a, at=T0) for b, h, a in rows]
    pool = sum(b.amount for b in table)
    percent = draw(st.integers(0, 100))
    winners = draw(st.lists(st.sampled_from(HORSES), min_size=1, max_size=4, unique_by=lambda h: h.name))
    left = set(draw(st.lists(st.sampled_from(BETTORS), max_size=2)))
    return table, pool - pool * percent // 100, winners, left


@settings(max_examples=200, deadline=None)
@given(tables())
def test_payout_and_refund_hand_out_exactly_the_prize(case):
    table, prize, winners, left = case
    paid_out = payout(prize, winners, table, left)
    assert sum(p.amount for p in paid_out) == prize
    assert all(p.amount >= 0 for p in paid_out)
    assert not any(p.bettor in left for p in paid_out if not p.void)
    assert not any(p.horse == NPC.name for p in paid_out if not p.void)
    allocation = prize // len(winners)
    assert all(p.amount <= allocation for p in paid_out if not p.void)  # at most a horse's share
    refunded = refund(prize, table)
    assert sum(p.amount for p in refunded) == (prize if table else 0)
    assert all(p.amount >= 0 for p in refunded)
