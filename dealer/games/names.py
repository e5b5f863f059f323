"""Player names in command lines: the longest run of words that names a player."""

from __future__ import annotations

from typing import Iterable, Sequence, TypeVar

from dealer.text import player_key


Named = TypeVar("Named")


def find_named(items: Iterable[Named], name: str) -> Named | None:
    """The item whose ``name`` a player wrote as ``name`` (``player_key``; a leading ``@`` allowed)."""
    items = list(items)
    for wanted in (player_key(name), player_key(name.removeprefix("@"))):
        found = next((i for i in items if player_key(i.name) == wanted), None)  # type: ignore[attr-defined]
        if found is not None:
            return found
    return None


def _name_key(words: Sequence[str]) -> str:
    return player_key(" ".join(words).removeprefix("@"))


def split_name(words: Sequence[str], known: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    """The first name in ``words``, as ``known`` has it (else the first word), and the words after."""
    names = {player_key(name): name for name in known}
    for end in range(len(words), 0, -1):
        if "," in words[:end]:
            continue
        found = names.get(_name_key(words[:end]))
        if found is not None:
            return found, tuple(words[end:])
    return words[0], tuple(words[1:])


def read_names(words: str | Sequence[str], known: Iterable[str]) -> list[str]:
    """The names in ``words``, separated by spaces, commas or ``and``, as ``known`` has them."""
    rest = tuple(words.replace(",", " , ").split()) if isinstance(words, str) else tuple(words)
    known = list(known)
    names = []
    while rest:
        found, after = split_name(rest, known)
        separator = rest[0] == "," or rest[0].lower() == "and"
        if not (separator and after == rest[1:] and found == rest[0]):
            names.append(found)  # a separator is skipped unless a known name starts with it
        rest = after
    return names
