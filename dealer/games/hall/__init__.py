"""The Gilded Hall (RULES GH): importing the package registers the kind ``hall``."""

from dealer.games.hall.rules import Hall

__all__ = ["Hall"]
