"""An in-memory Off to the Races table with scripted draws (:meth:`RaceShell.script`)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from dealer.cards import STANDARD_DECK, parse_card
from dealer.fairness import FairSource
from dealer.games.races.table import OffToTheRaces
from dealer.ledger import CHIPS, HOUSE, VOID, player, pool
from dealer.testing import T0, RulesShell, Sent, minutes

__all__ = ["CHANNEL", "GAME", "RULES", "SEED", "T0", "RaceShell", "ScriptedSource", "Sent",
           "minutes"]

SEED = "ace5" * 16
GAME = "race1"
CHANNEL = "#the-raceway"
RULES = OffToTheRaces()



@dataclass
class ScriptedSource(FairSource):
    """A fair source whose next draws from the 52-card deck can be dictated (tests only)."""

    script: deque[int] = field(default_factory=deque)

    def below(self, n: int, purpose: str = "") -> int:
        """The next scripted index when one is queued (for a 52-way draw), else a fair draw."""
        if self.script and n == len(STANDARD_DECK):
            self.counter += 1  # keep later fair draws moving on, as a real draw would
            return self.script.popleft()
        return super().below(n, purpose)


class RaceShell(RulesShell):
    """Drive one table of Off to the Races (``race1``, seed ``SEED``) through time."""

    rng: ScriptedSource

    @classmethod
    def create(cls, chips: dict[str, int] | None = None,
               cards: dict[str, Iterable[str]] | None = None, players: Iterable[str] = (),
               start: datetime = T0, now: datetime = T0, render: bool = True,
               **settings: Any) -> "RaceShell":
        """A new table; ``chips`` and ``cards`` (card names per player) fill the wallets."""
        shell = cls(RULES, rng=ScriptedSource(SEED), game_id=GAME, channel=CHANNEL, render=render)
        for name, amount in (chips or {}).items():
            shell.grant(name, CHIPS, amount)
        for name, owned in (cards or {}).items():
            for text in owned:
                card, holo = parse_card(text)
                shell.grant(name, card.item(holo), 1)
        shell.open(players, settings, start, now)
        return shell

    def script(self, *cards: str) -> None:
        """Make the next draws return ``cards`` (names such as ``KS`` or ``7 of hearts``)."""
        for text in cards:
            card, _ = parse_card(text)
            self.rng.script.append(STANDARD_DECK.index(card))

    def chips(self, account: str) -> int:
        """Chips held by player ``account`` (or by ``house``, ``void``, ``pool``)."""
        special = {"house": HOUSE, "void": VOID, "pool": pool(GAME)}
        return self.balances.get((special.get(account, player(account)), CHIPS), 0)
