"""Stationary Roulette (RULES SR-1 to SR-12): :mod:`.rules` the ruleset, :mod:`.scoring`
the resolution, :mod:`.sealed` receipts and commitments, :mod:`.posts` the posts' contexts."""

from dealer.games.roulette.rules import StationaryRoulette

__all__ = ["StationaryRoulette"]
