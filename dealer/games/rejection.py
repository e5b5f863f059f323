"""A command the rules refuse: :class:`Rejected`.

Both the rulesets' interface (:mod:`dealer.games.base`, which names it beside
:class:`~dealer.games.base.Rules`) and the command declarations (:mod:`dealer.games.commands`,
whose parser refuses a line with it) raise it, so it lives below both.
"""

from __future__ import annotations


class Rejected(Exception):
    """A command the rules refuse.

    ``what`` says what is wrong in the player's terms, ``rule`` cites the rule id (SR-5),
    and ``allowed`` lists what the player may do instead (the shell adds the commands that
    are valid now when it is empty).
    """

    def __init__(self, what: str, rule: str | None = None, allowed: list[str] | None = None):
        super().__init__(what)
        self.what = what
        self.rule = rule
        self.allowed = list(allowed or [])
