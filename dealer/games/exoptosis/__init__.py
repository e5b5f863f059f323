"""Exoptosis, the Gilded Hall's card game (RULES GH-10 to GH-19): one match per game, in a cycle."""

from dealer.games.exoptosis.rules import Exoptosis

__all__ = ["Exoptosis"]
