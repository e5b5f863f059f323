"""The race itself (OR-6, OR-7, OR-8) as pure functions of cards and positions; the caller draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from dealer.cards import Card


def race_length(horses: int) -> int:
    """OR-6: twice the number of horses (NPCs included); a horse wins beyond it."""
    return 2 * horses


def shares(horse: Card, drawn: Card) -> bool:
    """OR-7/OR-8: the horse's card shares the drawn card's suit, rank or colour (a joker: colour only)."""
    same_suit = horse.suit is not None and horse.suit == drawn.suit
    same_rank = horse.rank is not None and horse.rank == drawn.rank
    return same_suit or same_rank or horse.colour == drawn.colour


@dataclass(frozen=True)
class Action:
    """What one Race or Lap Action did."""

    kind: Literal["race", "lap"]
    card: Card
    before: tuple[int, ...]
    after: tuple[int, ...]
    moved: tuple[int, ...]  # indexes of the horses that moved
    everyone: bool  # OR-7: no horse shared anything, so every horse moved
    winners: tuple[int, ...] = ()
    lap_at: int | None = None  # OR-8: the k whose passing now owes a Lap


def race_action(cards: Sequence[Card], positions: Sequence[int], length: int, last_lap_k: int,
                drawn: Card) -> Action:
    """OR-7 then OR-6 and OR-8: move the sharing horses +1 (all if none shares), then judge."""
    sharing = tuple(i for i, card in enumerate(cards) if shares(card, drawn))
    moved = sharing or tuple(range(len(cards)))
    after = tuple(p + 1 if i in moved else p for i, p in enumerate(positions))
    winners = tuple(i for i, p in enumerate(after) if p > length)
    lap_at = None if winners else lap_trigger(after, last_lap_k)
    return Action("race", drawn, tuple(positions), after, moved, not sharing, winners, lap_at)


def lap_trigger(positions: Sequence[int], last_lap_k: int) -> int | None:
    """OR-8: the new k every horse is now beyond (``min(positions) - 1``), or None."""
    k = min(positions) - 1
    return k if k > last_lap_k else None


def lap_action(cards: Sequence[Card], positions: Sequence[int], drawn: Card) -> Action:
    """OR-8 Lap Action: every horse sharing the drawn card moves -1 (none below 1: docs/RACES.md)."""
    moved = tuple(i for i, card in enumerate(cards) if shares(card, drawn))
    after = tuple(p - 1 if i in moved else p for i, p in enumerate(positions))
    return Action("lap", drawn, tuple(positions), after, moved, False)


def bar(position: int, length: int) -> str:
    """A horse's progress in characters that mean nothing in markdown or BBCode."""
    done = max(0, min(position, length))
    beyond = "■" if position > length else ""
    return "■" * done + "□" * (length - done) + " 🏁" + beyond
