"""Off to the Races (RULES OR-1 to OR-11); importing this registers the ruleset."""

from dealer.games.races.table import OffToTheRaces

__all__ = ["OffToTheRaces"]
