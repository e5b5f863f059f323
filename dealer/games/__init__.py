"""The games dealer runs; each module holds one ruleset's pure rules."""

from __future__ import annotations

from dealer.games.base import Rules

_REGISTRY: dict[str, type[Rules]] = {}


def register(cls: type[Rules]) -> type[Rules]:
    """Class decorator: make a ruleset available under its ``kind``."""
    _REGISTRY[cls.kind] = cls
    return cls


def rules_for(kind: str) -> Rules:
    """The ruleset of ``kind`` (``roulette``, ``races``, ``hall``)."""
    _load_all()
    try:
        return _REGISTRY[kind]()
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown game kind {kind!r}; known kinds: {known}") from None


def kinds() -> list[str]:
    """Every known game kind."""
    _load_all()
    return sorted(_REGISTRY)


def _load_all() -> None:
    import importlib

    for module in ("roulette", "races", "hall"):
        try:
            importlib.import_module(f"dealer.games.{module}")
        except ModuleNotFoundError as exc:  # a ruleset not written yet is simply absent
            if exc.name != f"dealer.games.{module}":
                raise
