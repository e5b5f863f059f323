"""The games dealer runs; each module holds one ruleset's pure rules."""

from __future__ import annotations

from dealer.games.base import Rules

_REGISTRY: dict[str, type[Rules]] = {}
_INSTANCES: dict[str, Rules] = {}
_loaded = False


def register(cls: type[Rules]) -> type[Rules]:
    """Class decorator: make a ruleset available under its ``kind``."""
    _REGISTRY[cls.kind] = cls
    _INSTANCES.pop(cls.kind, None)
    return cls


def rules_for(kind: str) -> Rules:
    """The ruleset of ``kind`` (``roulette``, ``races``, ``hall``); rulesets are stateless,
    so one instance of each serves every game."""
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


def command_words() -> frozenset[str] | None:
    """The first words of every known ruleset's commands; None when a ruleset declares
    none (then any line may be one of its commands)."""
    _load_all()
    words: set[str] = set()
    for cls in _REGISTRY.values():
        if not cls.command_words:
            return None
        words |= cls.command_words
    return frozenset(words)


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    for module in ("roulette", "races", "hall"):
        importlib.import_module(f"dealer.games.{module}")
