"""The games dealer runs; each module holds one ruleset's pure rules."""

from __future__ import annotations

import importlib

from dealer.games.base import Rules

BUILT_IN = ("roulette", "races", "hall", "exoptosis")
"""The kinds dealer ships (each a module of this package, imported when first needed)."""

COMMAND_WORDS = {
    "roulette": frozenset("bet prep prepare receipt receipts reminder reminders".split()),
    "races": frozenset("bet horse interested lap pass race ready receipt receipts sit stand".split()),
    "hall": frozenset("accept adopted battle buy confidence decline duel gift inv inventory join judge my "
                      "offer open overturn proposals receipt receipts remove resign ruling show "
                      "withdraw".split()),
    "exoptosis": frozenset("add ask fold forfeit give hand match play raise receipt receipts "
                           "terminate".split()),
}
"""The built-in rulesets' command words, declared so that telling a command from a greeting
imports no ruleset; tests/unit/games/test_command_words.py holds them to the rulesets' own."""

PARENT_KINDS = {"exoptosis": "hall"}
"""The built-in rulesets' ``parent_kind``, declared for the same reason."""

_REGISTRY: dict[str, type[Rules]] = {}
_INSTANCES: dict[str, Rules] = {}
_loaded = False


def register(cls: type[Rules]) -> type[Rules]:
    """Class decorator: make a ruleset available under its ``kind``."""
    _REGISTRY[cls.kind] = cls
    _INSTANCES.pop(cls.kind, None)
    return cls


def rules_for(kind: str) -> Rules:
    """The ruleset of ``kind``; rulesets are stateless, so one instance serves every game."""
    rules = _INSTANCES.get(kind)
    if rules is not None:
        return rules
    if kind not in _REGISTRY:
        if kind in BUILT_IN:  # a start imports only the rulesets of the games it steps
            importlib.import_module(f"dealer.games.{kind}")
        else:
            _load_all()
    try:
        rules = _INSTANCES[kind] = _REGISTRY[kind]()
    except KeyError:
        _load_all()
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown game kind {kind!r}; known kinds: {known}") from None
    return rules


def hosts_matches(kind: str) -> bool:
    """Whether games of ``kind`` may have child games (some ruleset's ``parent_kind``)."""
    return kind in PARENT_KINDS.values() or any(cls.parent_kind == kind for cls in _REGISTRY.values())


def command_words() -> frozenset[str] | None:
    """The words commands start with (None: any): in a PM, a line with none of them is set aside."""
    words: set[str] = set().union(*COMMAND_WORDS.values())
    for cls in _REGISTRY.values():
        commands = getattr(cls, "commands", None)
        if commands is None:
            return None
        words |= commands.leading_words
    return frozenset(words)


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILT_IN:
        importlib.import_module(f"dealer.games.{module}")
