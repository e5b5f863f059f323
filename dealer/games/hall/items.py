"""The things in a Hall inventory (GH-1): their names for players, and the item lists of offers."""

from __future__ import annotations

import re

from dealer.cards import CATALOGUE, UnknownCard, card_of_item, parse_card
from dealer.games.base import Rejected
from dealer.ledger import CHIPS, VERTEBRAE, Ledger
from dealer.text import plural

PACK_NAMES = {"handy": "Handy Pack", "deck": "Deck Pack", "legendary": "Legendary Pack"}
CURRENCY_WORDS = {
    "chip": CHIPS, "chips": CHIPS,
    "vertebra": VERTEBRAE, "vertebrae": VERTEBRAE, "vertebraes": VERTEBRAE,
}
_PACK_PHRASE = re.compile(r"^(?:an? )?(handy|deck|legendary)\s+packs?$")
_COUNTED = re.compile(r"^(\d{1,6})\s*(?:x\s+|×\s*)?(.+)$")
_SEPARATOR = re.compile(r"\s*,\s*|\s+and\s+|\s*&\s*|\s*\+\s*")
_CARD_ORDER = {card.code: index for index, card in enumerate(CATALOGUE)}


def pack_item(kind: str) -> str:
    """The ledger item of a pack kind (``handy`` -> ``pack:handy``)."""
    return f"pack:{kind}"


def is_card(item: str) -> bool:
    """Whether ``item`` is a card (plain or holographic)."""
    return card_of_item(item) is not None


def card_label(item: str) -> str:
    """``King of Spades`` or ``holo King of Spades`` (the way a player writes it back)."""
    card, holo = card_of_item(item)  # type: ignore[misc]
    return f"holo {card.name}" if holo else card.name


def label(item: str, amount: int = 1) -> str:
    """An amount of an item as players read it: ``3 chips``, ``Handy Pack``, ``2 × 7 of Hearts``."""
    if item == CHIPS:
        return plural(amount, "chip")
    if item == VERTEBRAE:
        return plural(amount, "vertebra", "vertebrae")
    if item.startswith("pack:"):
        name = PACK_NAMES.get(item[5:], item)
        return name if amount == 1 else f"{amount} × {name}"
    if is_card(item):
        return card_label(item) if amount == 1 else f"{amount} × {card_label(item)}"
    return item if amount == 1 else f"{amount} × {item}"


def labels(items: dict[str, int]) -> list[str]:
    """Labels of a bundle of items, currencies first, then cards in catalogue order, then packs."""
    return [label(item, items[item]) for item in sorted(items, key=_sort_key)]


def _sort_key(item: str) -> tuple[int, int, str]:
    if item == CHIPS:
        return (0, 0, item)
    if item == VERTEBRAE:
        return (1, 0, item)
    parsed = card_of_item(item)
    if parsed is not None:
        card, holo = parsed
        return (2, _CARD_ORDER[card.code] * 2 + int(holo), item)
    return (3, 0, item)


def card_count(ledger: Ledger, account: str) -> int:
    """How many cards ``account`` holds, holographic ones included (GH-7's "5 cards")."""
    return sum(amount for item, amount in ledger.holdings(account).items() if is_card(item))


def inventory(ledger: Ledger, account: str) -> dict[str, object]:
    """What ``account`` holds, ready for the inventory reply (GH-1)."""
    held = ledger.holdings(account)
    cards = {item: n for item, n in held.items() if is_card(item)}
    packs = {item: n for item, n in held.items() if item.startswith("pack:")}
    other = {
        item: n for item, n in held.items()
        if item not in (CHIPS, VERTEBRAE) and item not in cards and item not in packs
    }
    return {
        "chips": held.get(CHIPS, 0),
        "vertebrae": held.get(VERTEBRAE, 0),
        "cards": labels(cards),
        "card_total": sum(cards.values()),
        "holo_total": sum(n for item, n in cards.items() if item.endswith(":holo")),
        "packs": labels(packs),
        "other": labels(other),
    }


def parse_bundle(text: str) -> dict[str, int]:
    """One side of an offer (``2 chips and 7H``, ``nothing``), or :class:`Rejected` (GH-1)."""
    cleaned = text.strip()
    if cleaned.lower() in ("nothing", "none", "-"):
        return {}
    bundle: dict[str, int] = {}
    for part in _SEPARATOR.split(cleaned):
        if not part:
            raise Rejected(f"an empty item in {cleaned!r}", rule="GH-1", allowed=_BUNDLE_HELP)
        item, amount = parse_item(part)
        bundle[item] = bundle.get(item, 0) + amount
    return bundle


def parse_item(text: str) -> tuple[str, int]:
    """Read one item with an optional count: ``3 chips``, ``7H``, ``2 x holo KS``, ``deck pack``."""
    cleaned = " ".join(text.lower().split())
    single = single_item(cleaned)
    if single is not None:
        return single, 1
    counted = _COUNTED.match(cleaned)
    if counted:
        item = single_item(counted.group(2)) or CURRENCY_WORDS.get(counted.group(2))
        if item is not None:
            amount = int(counted.group(1))
            if amount < 1:
                raise Rejected(f"{text.strip()!r}: a count must be at least 1", rule="GH-1")
            return item, amount
    raise Rejected(
        f"{text.strip()!r} is not an item; write chips or vertebrae with a count ('3 chips'), "
        "a pack ('deck pack') or a card ('king of spades', 'KS', 'K♠', '10h', 'red joker'; "
        "'holo 7H' for a holographic one)",
        rule="GH-1",
        allowed=_BUNDLE_HELP,
    )


def single_item(text: str) -> str | None:
    """One unit of an item named without a count (``text`` in lower case), or None."""
    pack = _PACK_PHRASE.match(text)
    if pack:
        return pack_item(pack.group(1))
    if text in ("a chip", "chip", "one chip"):
        return CHIPS
    if text in ("a vertebra", "vertebra", "one vertebra"):
        return VERTEBRAE
    try:
        card, holo = parse_card(text)
    except UnknownCard:
        return None
    return card.item(holo)


_BUNDLE_HELP = [
    "offer 2 chips and 7H to bob for AS — items joined by 'and' or commas",
    "offer holo red joker, 3 vertebrae to bob for deck pack — 'holo ' marks a holographic card",
    "offer nothing to bob for 2 x KS — either side may be 'nothing'; '2 x' repeats an item",
]

