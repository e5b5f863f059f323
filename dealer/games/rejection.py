"""A command the rules refuse: :class:`Rejected`, below the rules and the command declarations."""

from __future__ import annotations


class Rejected(Exception):
    """A refusal: ``what`` in the player's terms, the ``rule`` id, and what is ``allowed`` instead."""

    def __init__(self, what: str, rule: str | None = None, allowed: list[str] | None = None):
        super().__init__(what)
        self.what = what
        self.rule = rule
        self.allowed = list(allowed or [])
