"""Exoptosis, the Gilded Hall's card game (RULES GH-10 to GH-19): one match per game, a
child of a Hall cycle; importing it registers the kind ``exoptosis``."""

from dealer.games.exoptosis.rules import Exoptosis

__all__ = ["Exoptosis"]
