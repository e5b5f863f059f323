"""Off to the Races players: sit, enter a horse with a card they own, say ready, bet, and run
the race in the table's channel (RULES OR-1 to OR-8). Some horse names carry markdown and
mentions, which every post must print as text."""

from __future__ import annotations

import random
from dataclasses import dataclass

from dealer.cards import CATALOGUE

from .base import Act, GameView, Player, Temperament, garble

CHANNEL = "#the-raceway"

NAMES = (
    "Thunder Hooves", "**Bold Dash**", "@everyone", "<@123> Rocket", "_Sly_ `Fox`",
    "[url=x]y[/url]", "# Heading", "Red Rum", "Night Mare", "Oats ~~Lite~~", "Gallop > All",
    "Hay | Fever", "Dobbin", "Comet",
)
"""Horse names a player picks from (1 to 18 characters each, OR-2); the markup must show as text."""


def own_cards(view: GameView, name: str) -> list[str]:
    """The cards ``name`` holds as a player writes them: ``KS``, or ``holo KS`` when it holds
    only a holographic one."""
    held = view.holdings(name)
    cards = []
    for card in CATALOGUE:
        if held.get(card.item(), 0) > 0:
            cards.append(card.code)
        elif held.get(card.item(True), 0) > 0:
            cards.append(f"holo {card.code}")
    return cards


@dataclass
class RacesPlayer(Player):
    """Sits with a horse when it owns a card; bets (or passes) once; runs the race if it can."""

    horse: str | None = None
    """The name it means to enter (drawn at its first entry)."""

    def decide(self, view: GameView, rng: random.Random) -> list[Act]:
        """What the table's phase asks of this player."""
        state = view.state()
        if state is None:
            return []
        if state.phase == "seating":
            return self._seating(view, rng, state)
        if state.phase == "betting":
            return self._betting(view, rng, state)
        if state.phase == "racing" and state.horse_of(self.name) is not None:
            valid = "lap" if state.lap_owed else "race"
            wrong = "race" if state.lap_owed else "lap"  # OR-8: the other action is refused
            return [self.line(view, rng, valid, malformed=f"{valid} 3",
                              refused=wrong, channel=CHANNEL)]
        return []

    def _seating(self, view: GameView, rng: random.Random, state) -> list[Act]:
        if self.name in state.left:
            return []
        cards = own_cards(view, self.name)
        if self.name not in state.seated:
            if not cards:
                return [] if self.name in state.interested else [
                    self.say(view, "interested", expect="valid", channel=CHANNEL)]
            return [self.say(view, "sit", expect="valid", channel=CHANNEL)]
        if state.horse_of(self.name) is None:
            taken = {h.name.casefold() for h in state.horses}
            free = [n for n in NAMES if n.casefold() not in taken]
            if self.horse is None or self.horse.casefold() in taken:
                self.horse = rng.choice(free) if free else f"Horse {self.name}"[:18]
            card = rng.choice(cards) if cards else "KS"
            valid = f"horse {self.horse} card {card}"
            clash = next((h.name for h in state.horses), None)
            unowned = next(c.code for c in CATALOGUE
                           if c.code not in cards and f"holo {c.code}" not in cards)
            refused = (f"horse {clash} card {card}" if clash  # OR-2: a name taken
                       else f"horse {self.horse} card {unowned}")  # OR-2: a card not owned
            return [self.line(view, rng, valid, malformed=f"horse {self.horse}",
                              refused=refused, channel=CHANNEL)]
        if self.name not in state.ready:
            return [self.say(view, "ready", expect="valid", channel=CHANNEL)]
        return []

    def _betting(self, view: GameView, rng: random.Random, state) -> list[Act]:
        if any(b.bettor == self.name for b in state.bets) or self.name in state.passed:
            return []
        chips = view.balance(self.name, "chips")
        if chips < 1 or rng.random() < 0.15:
            return [self.say(view, "pass", expect="valid", channel=CHANNEL)]
        horse = rng.choice(state.horses).name
        valid = f"bet {rng.randint(1, max(1, chips // 4))} on {horse}"
        return [self.line(view, rng, valid, malformed=lambda: garble(valid, rng),
                          refused=f"bet {chips + 1000} on {horse}", channel=CHANNEL)]


def player(name: str, temperament: Temperament) -> RacesPlayer:
    """A races player."""
    return RacesPlayer(name, temperament)
