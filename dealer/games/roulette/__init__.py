"""Stationary Roulette (RULES SR-1 to SR-12)."""

from dealer.games.roulette.rules import StationaryRoulette

__all__ = ["StationaryRoulette"]
