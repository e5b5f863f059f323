"""Gilded Hall players: the economy (packs, the Croupier, gifts, trades) and fights (battles and
duels), as docs/HALL.md describes them; their part in the government is :mod:`.government`."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from dealer.ledger import VERTEBRAE

from .base import Act, GameView, Player, Temperament, garble
from .government import Citizen
from .races import own_cards

ACTIONS = "#game-actions"

PACKS = ("handy", "deck", "legendary")

SAVING_PHASES = 4
"""A cycle's first phases: a member buys cards first (a fight takes 4, GH-18) and no chip
(but once the run is closing), so a cycle lasts long enough for fights, votes and an
election before it can be won (GH-8)."""


@dataclass
class HallPlayer(Player):
    """Joins, then each turn answers what was put to it, and now and then trades, fights and
    takes part in the government; a Judge rules on what waits for it."""

    citizen: Citizen = field(default_factory=Citizen)
    """Its part in the government, with what it remembers of it."""
    stocked: bool = False
    """It has held 4 cards: it buys cards first no more."""

    def decide(self, view: GameView, rng: random.Random) -> list[Act]:
        """Join first; then answers, an economic move, a fight, the government."""
        state = view.state()
        if state is None or state.status != "running":
            return []
        me = state.member(self.name)
        if me is None:
            return [self.say(view, "join", expect="valid", channel=ACTIONS)]
        others = [m.name for m in state.members if m.name != me.name]
        acts = self._answers(view, rng, state)
        if not acts and (self.closing or rng.random() < 0.6):  # an answer's cost is not yet seen
            acts += self._economy(view, rng, state, me, others)
        acts += self._fight(view, rng, state, others)
        acts += self.citizen.acts(self, view, rng, state)
        return acts

    # --- what was put to it ------------------------------------------------------------

    def _answers(self, view: GameView, rng: random.Random, state) -> list[Act]:
        acts = []
        for offer in state.offers:
            if offer.target.casefold() == self.name.casefold():
                held = view.holdings(self.name)
                affordable = all(held.get(item, 0) >= n for item, n in offer.wants.items())
                verb = "accept" if affordable and rng.random() < 0.7 else "decline"
                acts.append(self.say(view, f"{verb} offer {offer.id}", expect="valid"))
        for duel in state.challenges:
            mine = {n.casefold() for n in duel.challenged} - {n.casefold() for n in duel.accepted}
            if self.name.casefold() in mine:
                verb = "accept" if rng.random() < 0.85 else "decline"
                acts.append(self.say(view, f"{verb} duel {duel.id}", expect="valid"))
        return acts

    # --- the economy (GH-1 to GH-7) ----------------------------------------------------

    def _economy(self, view: GameView, rng: random.Random, state, me, others) -> list[Act]:
        """Cards first, until it has held 4 (a fight takes 4, GH-18); then its vertebrae are
        for chips (GH-8), bought after the cycle's first phases or once the run is closing;
        gifts and offers all along."""
        prices = state.settings
        held = view.holdings(self.name)
        vertebrae = held.get(VERTEBRAE, 0)
        packs = [p for p in PACKS if held.get(f"pack:{p}", 0) > 0]
        cards = own_cards(view, self.name)
        self.stocked = self.stocked or len(cards) >= 4
        if vertebrae >= prices.price_chip and (self.closing or self.stocked and state.phase > SAVING_PHASES):
            return [self.line(view, rng, "buy chip", malformed="buy chip chip",
                              refused="buy 100 chips", channel=ACTIONS)]
        moves: list[tuple[str, str | None]] = []  # (valid line, a refused version)
        if packs:
            moves.append((f"open {rng.choice(packs)} pack",
                          next((f"open {p} pack" for p in PACKS if p not in packs), None)))
        elif not self.stocked and vertebrae >= prices.price_deck_pack:
            moves.append(("buy deck pack", "buy 100 legendary packs"))
        elif not self.stocked and vertebrae >= prices.price_random_card:
            moves.append(("buy random card", "buy 100 legendary packs"))
        if not self.stocked and moves:
            moves = moves[:1]  # cards first
        else:
            if me.gifted is None and others:
                moves.append((f"gift {rng.choice(others)}", f"gift {self.name}"))
            if cards and others:
                offer = (f"offer {rng.choice(cards)} to {rng.choice(others)} for "
                         f"{rng.randint(1, 5)} vertebrae")
                moves.append((offer, f"offer {cards[0]} to {self.name} for nothing"))  # not to oneself
        if not moves:
            return []
        valid, refused = rng.choice(moves)
        malformed = "gift" if valid.startswith("gift") else garble(valid, rng)
        return [self.line(view, rng, valid, malformed=malformed, refused=refused,
                          channel=rng.choice([ACTIONS, "pm"]))]

    # --- fights (GH-18, GH-19) ---------------------------------------------------------

    def _fight(self, view: GameView, rng: random.Random, state, others) -> list[Act]:
        cards = state.cards.get(self.name, len(own_cards(view, self.name)))
        if cards < 4 or self.closing:  # the run ends: no new match
            return []
        if self.name not in state.battlers and rng.random() < 0.5:
            return [self.say(view, "battle", expect="valid", channel=ACTIONS)]
        if others and rng.random() < 0.05:
            return [self.say(view, f"duel {rng.choice(others)}", expect="valid", channel=ACTIONS)]
        return []

def player(name: str, temperament: Temperament) -> HallPlayer:
    """A Hall player."""
    return HallPlayer(name, temperament)

