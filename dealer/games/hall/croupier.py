"""The Croupier's prices and what help offers to buy (RULES GH-5)."""

from __future__ import annotations

from dealer.games.commands import Example, help_line
from dealer.text import plural

# GH-5: the Croupier's default prices in vertebrae; a cycle's own are its settings
# (``price_*``, which an adopted proposal may change: GH-23).
PRICES: dict[str, int] = {
    "random card": 5,
    "handy pack": 12,
    "deck pack": 18,
    "legendary pack": 50,
    "chip": 25,
}


def croupier_examples(held: int, prices: dict[str, int] = PRICES) -> list[Example]:
    """GH-5: a ``buy`` example with its price for each item ``held`` vertebrae pay for."""
    return [Example(f"buy {ware}", f"{price} vertebrae", "GH-5")
            for ware, price in prices.items() if price <= held]


def croupier_note(held: int, prices: dict[str, int] = PRICES) -> str | None:
    """GH-5: the items ``held`` vertebrae do not pay for, with their prices (or None)."""
    too_dear = [f"{ware} ({price})" for ware, price in prices.items() if price > held]
    if not too_dear:
        return None
    return f"with {plural(held, 'vertebra', 'vertebrae')} you cannot buy: {', '.join(too_dear)}"


def croupier_lines(held: int, prices: dict[str, int] = PRICES) -> list[str]:
    """GH-5: a ``buy`` line with its price per item ``held`` vertebrae pay for, then those they do not."""
    lines = [help_line(e.line, e.says, e.rule) for e in croupier_examples(held, prices)]
    note = croupier_note(held, prices)
    return lines + [f"({note})"] if note else lines
