"""The Gilded Hall's card catalogue (GH-2) and the card-name parser (``KS``, ``holo 7H``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

SUITS = ("hearts", "diamonds", "spades", "clubs")
SUIT_LETTER = {"hearts": "H", "diamonds": "D", "spades": "S", "clubs": "C"}
SUIT_SYMBOL = {"hearts": "♥", "diamonds": "♦", "spades": "♠", "clubs": "♣"}
SUIT_COLOUR = {"hearts": "red", "diamonds": "red", "spades": "black", "clubs": "black"}
RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
RANK_NAME = {"A": "Ace", "J": "Jack", "Q": "Queen", "K": "King"}
# GH-2: the seed's table gives the King 12, the same value as the Queen; dealer follows it.
RANK_VALUE = {"A": 1, **{str(n): n for n in range(2, 11)}, "J": 11, "Q": 12, "K": 12}
SPECIAL_RANKS = {"A", "J", "Q", "K"}


@dataclass(frozen=True, order=True)
class Card:
    """One row of the catalogue."""

    code: str
    rank: str | None  # None for a joker
    suit: str | None  # None for a joker
    colour: str

    @property
    def is_joker(self) -> bool:
        return self.rank is None

    @property
    def value(self) -> int | None:
        """The card's value (None for a joker)."""
        return None if self.rank is None else RANK_VALUE[self.rank]

    @property
    def special(self) -> bool:
        """Aces, Jacks, Queens, Kings and Jokers are special (GH-2)."""
        return self.rank is None or self.rank in SPECIAL_RANKS

    @property
    def name(self) -> str:
        """``King of Spades``, ``10 of Hearts``, ``Red Joker``."""
        if self.rank is None:
            return f"{self.colour.title()} Joker"
        return f"{RANK_NAME.get(self.rank, self.rank)} of {self.suit.title()}"

    @property
    def short(self) -> str:
        """``K♠``, ``10♥``, ``Red Joker``."""
        if self.rank is None:
            return self.name
        return f"{self.rank}{SUIT_SYMBOL[self.suit]}"

    def item(self, holo: bool = False) -> str:
        """The ledger item of this card (``card:KS`` or ``card:KS:holo``)."""
        return f"card:{self.code}:holo" if holo else f"card:{self.code}"


def _build() -> tuple[Card, ...]:
    rows = [
        Card(f"{rank}{SUIT_LETTER[suit]}", rank, suit, SUIT_COLOUR[suit])
        for suit in SUITS
        for rank in RANKS
    ]
    rows.append(Card("RJ", None, None, "red"))
    rows.append(Card("BJ", None, None, "black"))
    return tuple(rows)


CATALOGUE: tuple[Card, ...] = _build()
"""The 54 rows in the seed's order; a random card is uniform over them (GH-2)."""
BY_CODE: dict[str, Card] = {card.code: card for card in CATALOGUE}
STANDARD_DECK: tuple[Card, ...] = tuple(card for card in CATALOGUE if not card.is_joker)
"""The 52-card deck the Races draw from (OR-4, OR-7)."""


class UnknownCard(ValueError):
    """The text names no card of the catalogue."""


_RANK_WORDS = {
    "ace": "A", "a": "A", "one": "A", "1": "A",
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10",
    "jack": "J", "j": "J", "queen": "Q", "q": "Q", "king": "K", "k": "K",
    **{str(n): str(n) for n in range(2, 11)},
}
_SUIT_WORDS = {
    "hearts": "hearts", "heart": "hearts", "h": "hearts", "♥": "hearts", "♡": "hearts",
    "diamonds": "diamonds", "diamond": "diamonds", "d": "diamonds", "♦": "diamonds", "♢": "diamonds",
    "spades": "spades", "spade": "spades", "s": "spades", "♠": "spades", "♤": "spades",
    "clubs": "clubs", "club": "clubs", "c": "clubs", "♣": "clubs", "♧": "clubs",
}
_SHORT = re.compile(r"^(10|[2-9]|[ajqk])\s*([hdsc♥♡♦♢♠♤♣♧])$")
_LONG = re.compile(r"^(\w+)\s+of\s+(\w+)$")
_JOKER = re.compile(r"^(red|black)\s+joker$")
_HOLO = re.compile(r"^(?:holo|holographic)\s+(.+)$|^(.+?)\s+\((?:holo|holographic)\)$")


def parse_card(text: str) -> tuple[Card, bool]:
    """Parse a card's name into ``(card, holographic)``, or :class:`UnknownCard` with the spellings."""
    cleaned = " ".join(text.strip().lower().replace("\ufe0f", "").split())
    holo = False
    match = _HOLO.match(cleaned)
    if match:
        holo = True
        cleaned = (match.group(1) or match.group(2)).strip()
    card = _lookup(cleaned)
    if card is None:
        raise UnknownCard(
            f"{text.strip()!r} is not a card; write it like 'king of spades', 'KS', 'K♠', "
            "'10h', 'red joker' (add 'holo ' before it for a holographic card)"
        )
    return card, holo


def _lookup(cleaned: str) -> Card | None:
    if cleaned in ("rj", "red joker", "joker red"):
        return BY_CODE["RJ"]
    if cleaned in ("bj", "black joker", "joker black"):
        return BY_CODE["BJ"]
    if _JOKER.match(cleaned):
        return BY_CODE["RJ" if cleaned.startswith("red") else "BJ"]
    match = _SHORT.match(cleaned)
    if match:
        rank = _RANK_WORDS[match.group(1)]
        suit = _SUIT_WORDS[match.group(2)]
        return BY_CODE[f"{rank}{SUIT_LETTER[suit]}"]
    match = _LONG.match(cleaned)
    if match and match.group(1) in _RANK_WORDS and match.group(2) in _SUIT_WORDS:
        rank = _RANK_WORDS[match.group(1)]
        suit = _SUIT_WORDS[match.group(2)]
        return BY_CODE[f"{rank}{SUIT_LETTER[suit]}"]
    return None


def card_of_item(item: str) -> tuple[Card, bool] | None:
    """The card and holographic flag of a ledger item, or None if it is not a card."""
    parts = item.split(":")
    if len(parts) < 2 or parts[0] != "card" or parts[1] not in BY_CODE:
        return None
    return BY_CODE[parts[1]], len(parts) > 2 and parts[2] == "holo"


def display(item: str) -> str:
    """A card item as players read it: ``King of Spades`` or ``King of Spades (holo)``."""
    parsed = card_of_item(item)
    if parsed is None:
        return item
    card, holo = parsed
    return f"{card.name} (holo)" if holo else card.name
