"""What makes a preparation or a bet valid (SR-2, SR-4, SR-5), as player-facing problems."""

from __future__ import annotations

from dealer.games.roulette.model import (
    BLACK,
    COLOURS,
    GOLD,
    MAX_BET_COLOURS,
    MIN_GOLD,
    MIN_SILVER,
    SILVER,
    STAKE,
    Bet,
    Prepare,
)


def layout_problems(command: Prepare) -> list[str]:
    """SR-2: gold >= 25, silver >= 5, black = 0, gold + silver = 40."""
    problems = []
    if command.gold < MIN_GOLD:
        problems.append(f"gold must have at least {MIN_GOLD} points, not {command.gold}")
    if command.silver < MIN_SILVER:
        problems.append(f"silver must have at least {MIN_SILVER} points, not {command.silver}")
    if command.black != 0:
        problems.append(f"black cannot have any points, not {command.black}")
    total = command.gold + command.silver + command.black
    if total != STAKE:
        problems.append(f"the layout must hold exactly {STAKE} points, not {total}")
    return problems


def bet_problems(command: Bet) -> list[str]:
    """SR-5: exactly 40 points on at most two colours (I-1: a colour with 0 points is not bet on)."""
    problems = []
    total = command.gold + command.silver + command.black
    if total != STAKE:
        problems.append(f"a bet uses exactly {STAKE} points, not {total}")
    used = [c for c in COLOURS if command.on(c) > 0]
    if len(used) > MAX_BET_COLOURS:
        problems.append(f"a bet uses at most {MAX_BET_COLOURS} colours, not {len(used)}")
    return problems


def colours_left(used: dict[str, int], limit: int) -> dict[str, int]:
    """SR-4: how many more times each colour may still be prepared as the winning colour."""
    return {c: max(0, limit - used.get(c, 0)) for c in COLOURS}


def describe_left(left: dict[str, int]) -> str:
    """``gold 5, silver 4, black 0``."""
    return ", ".join(f"{c} {left[c]}" for c in (GOLD, SILVER, BLACK))
