"""The games dealer runs; each module holds one ruleset's pure rules."""

from __future__ import annotations

from dealer.games.base import Rules

BUILT_IN = ("roulette", "races", "hall", "exoptosis")
"""The kinds dealer ships (each a module of this package)."""

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
    _load_all()
    try:
        rules = _INSTANCES[kind] = _REGISTRY[kind]()
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown game kind {kind!r}; known kinds: {known}") from None
    return rules


def hosts_matches(kind: str) -> bool:
    """Whether games of ``kind`` may have child games (some ruleset's ``parent_kind``)."""
    _load_all()
    return any(cls.parent_kind == kind for cls in _REGISTRY.values())


def command_words() -> frozenset[str] | None:
    """The words commands start with (None: any): in a PM, a line with none of them is set aside."""
    _load_all()
    words: set[str] = set()
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
    import importlib

    for module in BUILT_IN:
        importlib.import_module(f"dealer.games.{module}")
