"""Stationary Roulette (RULES SR-1 to SR-12).

- :mod:`.model` — numbers, settings, commands and the stored state;
- :mod:`.parse` — reading a player's line;
- :mod:`.checks` — what makes a preparation or a bet valid (SR-2, SR-4, SR-5);
- :mod:`.scoring` — resolution (SR-8 to SR-11);
- :mod:`.sealed` — receipts and commitments (docs/FAIRNESS.md, "Sealed submissions");
- :mod:`.posts` — the contents of the posts in ``templates/roulette/``;
- :mod:`.rules` — the ruleset: timeline, commands, deadlines;
- :mod:`.testing` — an in-memory shell that plays a game through (tests, REPL).
"""

from dealer.games.roulette.rules import StationaryRoulette

__all__ = ["StationaryRoulette"]
