"""An in-memory Exoptosis match in a Hall cycle's scope, cards written ``7H``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterable

from dealer.cards import parse_card
from dealer.games.exoptosis.rules import Exoptosis
from dealer.ledger import CHIPS, Scope
from dealer.testing import T0, RulesShell, hours

__all__ = ["HALL", "MATCH", "T0", "MatchShell", "hours", "item"]

HALL = "h1"
MATCH = "h1-duel-1"



def item(code: str) -> str:
    """The ledger item of a card written ``7H``, ``RJ`` or ``holo 7H``."""
    card, holo = parse_card(code)
    return card.item(holo)


class MatchShell(RulesShell):
    """One match of a Hall cycle's members, in memory."""

    def __init__(self, *, seed: str = "e0" * 32, **kwargs: Any) -> None:
        super().__init__(Exoptosis(), seed=seed, game_id=MATCH, **kwargs)

    @property
    def scope(self) -> Scope:
        """The Hall cycle's scope: a child game's accounts are its parent's."""
        return Scope(HALL)

    def deal(self, name: str, *codes: str, chips: int = 0) -> None:
        """Put cards (``7H``, ``holo KS``) and chips into ``name``'s cycle inventory."""
        for code in codes:
            self.grant(name, item(code), 1)
        if chips:
            self.grant(name, CHIPS, chips)

    def inventory(self, name: str) -> list[str]:
        """``name``'s cards outside the match, sorted codes (``holo 7H`` for a holo one)."""
        return sorted(_code(i) for (acct, i), n in self.balances.items()
                      if acct == self.scope.player(name) and i.startswith("card:")
                      for _ in range(n))

    def hand(self, name: str) -> list[str]:
        """``name``'s hand as codes, in the order it holds them."""
        seat = self.state.seat(name)
        return [_code(h.item) for h in seat.hand or []]

    def held(self) -> list[str]:
        """Every card in the match's account, sorted codes."""
        account = self.scope.pool(self.game_id)
        return sorted(_code(i) for (acct, i), n in self.balances.items()
                      if acct == account and i.startswith("card:") for _ in range(n))

    def pool_chips(self) -> int:
        """The chips in the match's pool."""
        return self.balances.get((self.scope.pool(self.game_id), CHIPS), 0)

    def start(self, players: Iterable[str], at: datetime = T0, **settings: Any) -> None:
        """Open the match at ``at``."""
        self.open(list(players), settings, start=at)

    def to_play(self, hands: dict[str, str], at: datetime = T0) -> datetime:
        """Choose every hand and have everyone match at 0, so play begins; the time after."""
        when = at
        for name, cards in hands.items():
            when += timedelta(minutes=1)
            self.accept(name, f"hand {cards}", when)
        for name in hands:
            if self.state.phase != "betting":
                break
            when += timedelta(minutes=1)
            self.accept(name, "match", when)
        return when


def _code(ledger_item: str) -> str:
    parts = ledger_item.split(":")
    return f"holo {parts[1]}" if len(parts) > 2 else parts[1]
