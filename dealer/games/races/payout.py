"""Who gets the pool (OR-9, OR-10): the payments always add up to the prize."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from dealer.games.races.state import Bet, Horse

Reason = Literal["winnings", "refund", "npc", "no_bets", "stood_up", "rounding"]


@dataclass(frozen=True)
class Payment:
    """Chips leaving the pool, to ``bettor`` or, with ``void``, to void (whose winnings they were)."""

    amount: int
    reason: Reason
    bettor: str | None = None
    horse: str | None = None
    void: bool = False


def totals_by_bettor(bets: Sequence[Bet], horse: str | None = None) -> dict[str, int]:
    """Each bettor's total (on ``horse``, or on all horses), in order of first bet."""
    totals: dict[str, int] = {}
    for bet in bets:
        if horse is None or bet.horse == horse:
            totals[bet.bettor] = totals.get(bet.bettor, 0) + bet.amount
    return totals


def payout(prize: int, winners: Sequence[Horse], bets: Sequence[Bet],
           left: set[str]) -> list[Payment]:
    """OR-9: the prize split over the winning horses, then over their bettors; the rest to void."""
    allocation = prize // len(winners)
    payments = [
        payment for horse in winners for payment in _horse_payout(allocation, horse, bets, left)
    ]
    _add_void(payments, prize - allocation * len(winners), "rounding")
    return payments


def _horse_payout(allocation: int, horse: Horse, bets: Sequence[Bet],
                  left: set[str]) -> list[Payment]:
    if horse.npc:
        return _void_list(allocation, "npc", horse.name)
    stakes = totals_by_bettor(bets, horse.name)
    total = sum(stakes.values())
    if total == 0:
        return _void_list(allocation, "no_bets", horse.name)
    payments = []
    for bettor, stake in stakes.items():
        share = allocation * stake // total
        if bettor in left:
            payments.append(Payment(share, "stood_up", bettor, horse.name, void=True))
        else:
            payments.append(Payment(share, "winnings", bettor, horse.name))
    paid = sum(p.amount for p in payments)
    _add_void(payments, allocation - paid, "rounding", horse.name)
    return payments


def refund(prize: int, bets: Sequence[Bet]) -> list[Payment]:
    """OR-10: floor(prize x S / T) back to each bettor who put in S of T; the rest to void."""
    stakes = totals_by_bettor(bets)
    total = sum(stakes.values())
    if total == 0:
        return []
    payments = [
        Payment(prize * stake // total, "refund", bettor) for bettor, stake in stakes.items()
    ]
    _add_void(payments, prize - sum(p.amount for p in payments), "rounding")
    return payments


def _void_list(amount: int, reason: Reason, horse: str | None = None) -> list[Payment]:
    payments: list[Payment] = []
    _add_void(payments, amount, reason, horse)
    return payments


def _add_void(payments: list[Payment], amount: int, reason: Reason, horse: str | None = None) -> None:
    if amount > 0:
        payments.append(Payment(amount, reason, None, horse, void=True))
