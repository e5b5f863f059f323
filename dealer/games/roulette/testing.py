"""An in-memory Stationary Roulette game (:class:`~dealer.testing.RulesShell`) with helpers
in the game's terms: phases, chips, the house."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dealer.games.base import Context
from dealer.games.roulette import StationaryRoulette
from dealer.games.roulette.model import phase_name
from dealer.ledger import CHIPS
from dealer.testing import T0, RulesShell, Sent, hours, standalone_context

__all__ = ["RULES", "SEED", "T0", "Sent", "Shell", "hours", "new_context"]

SEED = "5eed" * 16
RULES = StationaryRoulette()


class Shell(RulesShell):
    """Drive one game of Stationary Roulette (game ``g1``, seed ``SEED``) through time."""

    @classmethod
    def create(cls, chips: dict[str, int] | None = None, start: datetime = T0, now: datetime = T0,
               render: bool = True, **settings: Any) -> "Shell":
        """A new game between the players of ``chips`` (default alice and bob, 100 each)."""
        chips = chips if chips is not None else {"alice": 100, "bob": 100}
        shell = cls(RULES, seed=SEED, render=render)
        for name, amount in chips.items():
            shell.grant(name, CHIPS, amount)  # from the mint, so the ledger totals are zero
        shell.open(list(chips), settings, start, now)
        return shell

    def during(self, hour: float = 1) -> datetime:
        """A time ``hour`` hours into the current phase."""
        return self.state.phase_starts[-1] + hours(hour)

    def play_phase(self, close: bool = True, **lines: str | list[str]) -> None:
        """Submit each player's lines in the current phase, an hour apart, then (``close``) end it."""
        hour = 1.0
        for name, sent in lines.items():
            for line in [sent] if isinstance(sent, str) else sent:
                self.accept(name, line, self.during(hour))
                hour += 1
        if close and self.state.status == "running":
            self.fire_due(self.deadlines[phase_name(self.state.phase)])

    def chips(self, name: str) -> int:
        """Player ``name``'s chips."""
        return self.has(name, CHIPS)

    def house(self) -> int:
        """The house's chips."""
        return self.balances.get(("house", CHIPS), 0)


def new_context(now: datetime, balances: dict, deadlines: dict) -> Context:
    """A standalone context for game ``g1`` at ``now`` (fixed server seed ``SEED``)."""
    ctx = standalone_context(
        now, game_id="g1", kind="roulette", channel="#stationary-roulette",
        balances=dict(balances), server_seed=SEED,
    )
    ctx.deadlines = dict(deadlines)
    return ctx

