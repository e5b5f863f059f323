"""Exoptosis players, in a match of a Hall cycle (RULES GH-10 to GH-17, docs/EXOPTOSIS.md):
choose a hand from their cards, bet, and on their turn send one of the moves ``help`` offers
them (the cards that can be played, with their targets; else a card to add, or whom to ask)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from dealer.games import rules_for
from dealer.ledger import CHIPS

from .base import Act, GameView, Player, Temperament, garble
from .races import own_cards

MOVES = ("play ", "add ", "ask ", "give ")


def offered(view: GameView, name: str) -> list[str]:
    """The moves ``help`` offers ``name`` now (``play 8H``, ``play AS on bob``, ``add 5C`` ...)."""
    lines = rules_for(view.kind).help(view.state(), name)
    return [line.split(" — ")[0] for line in lines if line.startswith(MOVES)]


@dataclass
class ExoptosisPlayer(Player):
    """Chooses a hand, matches (or raises, now and then), and plays what help offers."""

    def decide(self, view: GameView, rng: random.Random) -> list[Act]:
        """What the match's phase asks of this participant."""
        state = view.state()
        seat = state.seat(self.name) if state is not None else None
        if seat is None or seat.out is not None:
            return []
        if state.phase == "setup" and seat.hand is None:
            cards = own_cards(view, self.name)
            if len(cards) < 4:
                return []
            chosen = rng.sample(cards, rng.randint(4, min(len(cards), 7)))
            valid = "hand " + ", ".join(chosen)
            return [self.line(view, rng, valid, malformed=lambda: garble(valid, rng),
                              refused="hand " + chosen[0])]  # GH-10: 4 at least
        if state.phase == "betting" and not seat.settled:
            chips = view.balance(self.name, CHIPS)
            if chips > 0 and rng.random() < 0.25:
                return [self.say(view, f"raise {rng.randint(1, min(chips, 3))}", expect="valid")]
            return [self.say(view, "match", expect="any")]
        if state.phase == "play":
            moves = offered(view, self.name)
            if not moves:
                return []
            valid = rng.choice(moves)
            wrong = "ask " + self.name if valid.startswith("play") else None
            return [self.line(view, rng, valid, malformed=valid.split()[0],  # its word alone
                              refused=wrong)]
        return []


def player(name: str, temperament: Temperament) -> ExoptosisPlayer:
    """An Exoptosis participant."""
    return ExoptosisPlayer(name, temperament)
