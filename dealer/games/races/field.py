"""The field of horses: entries by players (OR-2) and NPC horses drawn by the dealer (OR-4)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Sequence

from dealer.cards import BY_CODE, STANDARD_DECK, Card
from dealer.fairness import FairSource
from dealer.games.base import Rejected
from dealer.games.races.state import Horse
from dealer.ledger import Ledger, player
from dealer.text import clean_line

MAX_NAME_CHARS = 18  # OR-2

# Characters that print as nothing although Unicode calls them letters or symbols: a name
# made only of these (and spaces) would look empty in a post.
_BLANK_LOOKING = {"\u2800", "\u3164", "\u115f", "\u1160", "\uffa0", "\u180e"}


def name_key(name: str) -> str:
    """How horse names are compared (OR-2): without case and surrounding or repeated spaces."""
    return " ".join(name.split()).casefold()


def clean_name(raw: str) -> str:
    """A horse name as entered, checked for OR-2's length; raise :class:`Rejected` if unfit.

    The shell already removed control and zero-width characters; we do it again so the rule
    holds whoever calls us. A name must show something: at least one letter, digit,
    punctuation mark or symbol that is not a blank-looking filler.
    """
    name = clean_line(raw).strip()
    if not any(_visible(ch) for ch in name):
        raise Rejected("a horse needs a name with at least one visible character", "OR-2")
    if len(name) > MAX_NAME_CHARS:
        raise Rejected(
            f"a horse's name has at most {MAX_NAME_CHARS} characters; yours has {len(name)}",
            "OR-2",
        )
    return name


def _visible(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LNPS" and ch not in _BLANK_LOOKING


def find_horse(horses: Sequence[Horse], name: str) -> Horse | None:
    """The horse whose name compares equal to ``name`` (OR-2), if any."""
    key = name_key(name)
    return next((h for h in horses if name_key(h.name) == key), None)


def owns(ledger: Ledger, name: str, card: Card) -> bool:
    """Whether player ``name`` holds ``card`` (plain or holographic) in its inventory."""
    account = player(name)
    return ledger.balance(account, card.item(False)) + ledger.balance(account, card.item(True)) > 0


def check_entry(horses: Sequence[Horse], owner: str, name: str, card: Card) -> None:
    """OR-2: refuse a name or card another player's horse already uses.

    The owner's own earlier entry does not count: entering again replaces it.
    """
    others = [h for h in horses if h.owner != owner]
    same_name = find_horse(others, name)
    if same_name is not None:
        raise Rejected(
            f"a horse named {same_name.name!r} is already entered (names are compared "
            "without case and surrounding spaces)",
            "OR-2",
        )
    # A card code names suit and rank, and a joker by its colour (RJ, BJ), as OR-2 asks.
    same_card = next((h for h in others if h.card == card.code), None)
    if same_card is not None:
        raise Rejected(f"another horse already runs as the {card.name}", "OR-2")


@dataclass(frozen=True)
class NpcDraw:
    """One card drawn for an NPC horse; ``clash`` says why it was drawn again, if it was."""

    card: Card
    clash: str | None = None


def draw_npcs(rng: FairSource, horses: Sequence[Horse], wanted: int) -> tuple[list[Horse], list[NpcDraw]]:
    """OR-4: draw NPC horses from the 52-card deck until the field has ``wanted`` horses.

    A card equal to an existing horse's card is drawn again. Interpretation (docs/RACES.md):
    so is a card whose name is already a horse's name (a player may have named its horse
    "King of Spades" on another card), because no two horses may share a name (OR-2).
    If no card of the deck could make a valid NPC any more (only possible with a very large
    ``min_horses``), the field stays smaller rather than drawing for ever.
    """
    field = list(horses)
    npcs: list[Horse] = []
    draws: list[NpcDraw] = []
    while len(field) < wanted and _free_cards(field):
        card = rng.choice(STANDARD_DECK, purpose="OR-4 NPC horse")
        clash = _clash(field, card)
        draws.append(NpcDraw(card, clash))
        if clash is None:
            horse = Horse(name=card.name, card=card.code)
            field.append(horse)
            npcs.append(horse)
    return npcs, draws


def _clash(field: Sequence[Horse], card: Card) -> str | None:
    if any(h.card == card.code for h in field):
        return "card"
    if find_horse(field, card.name) is not None:
        return "name"
    return None


def _free_cards(field: Sequence[Horse]) -> bool:
    return any(_clash(field, card) is None for card in STANDARD_DECK)


def card_of(horse: Horse) -> Card:
    """The catalogue card a horse runs as."""
    return BY_CODE[horse.card]
