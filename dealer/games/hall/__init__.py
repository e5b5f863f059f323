"""The Gilded Hall (RULES GH): its economy now; Exoptosis, proposals and the Judge later.

Importing the package registers the ruleset under the kind ``hall``.
"""

from dealer.games.hall.rules import Hall

__all__ = ["Hall"]
