"""Stationary Roulette players: a preparation while one is due, a bet on the opponent's active
roulette, in PM (RULES SR-1 to SR-10); sloppy ones send lines that do not parse or break a rule."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .base import Act, GameView, Player, Temperament, garble

COLOURS = ("gold", "silver", "black")


def layout(rng: random.Random) -> tuple[int, int]:
    """A layout of SR-2: gold at least 25, silver at least 5, 40 in all."""
    gold = rng.randint(25, 35)
    return gold, 40 - gold


def stake(rng: random.Random) -> str:
    """A bet of SR-5: 40 points on one colour or split over two."""
    first, second = rng.sample(COLOURS, 2)
    if rng.random() < 0.3:
        return f"{first} 40"
    n = rng.randint(1, 39)
    return f"{first} {n} {second} {40 - n}"


@dataclass
class RoulettePlayer(Player):
    """Prepares while a preparation is due and bets while a bet is due, once per phase."""

    def decide(self, view: GameView, rng: random.Random) -> list[Act]:
        """A preparation and a bet, each only while due and not yet on file."""
        state = view.state()
        if state is None or state.status != "running" or self.name not in state.players:
            return []
        acts = []
        if state.phase < state.last_round and self.name not in state.preparations:
            acts.append(self._prepare(view, rng, state))
        if (state.phase >= 1 and self.name not in state.bets
                and state.active.get(state.opponent(self.name)) is not None):
            acts.append(self._bet(view, rng))
        return [act for act in acts if act is not None]

    def _prepare(self, view: GameView, rng: random.Random, state) -> Act | None:
        used = state.colours_used.get(self.name, {})
        left = [c for c in COLOURS if used.get(c, 0) < state.settings.colour_limit]
        if not left:
            return None
        colour = rng.choice(left)
        gold, silver = layout(rng)
        valid = f"prepare {colour} gold {gold} silver {silver}"
        return self.line(
            view, rng, valid,
            malformed=lambda: garble(valid, rng),
            refused=f"prepare {colour} gold 20 silver 20",  # SR-2: gold under 25
        )

    def _bet(self, view: GameView, rng: random.Random) -> Act:
        valid = f"bet {stake(rng)}"
        return self.line(
            view, rng, valid,
            malformed=lambda: garble(valid, rng),
            refused=rng.choice(["bet gold 50", "bet gold 20 silver 10 black 10"]),  # SR-5
        )


def player(name: str, temperament: Temperament) -> RoulettePlayer:
    """A roulette player."""
    return RoulettePlayer(name, temperament)
