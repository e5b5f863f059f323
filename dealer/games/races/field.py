"""The field of horses: entries by players (OR-2) and NPC horses drawn by the dealer (OR-4)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Sequence

from dealer.cards import BY_CODE, CATALOGUE, STANDARD_DECK, Card
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
    """A horse name as entered, checked (OR-2), or :class:`Rejected`."""
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
    """OR-2: refuse a name or card another player's horse uses (the owner's own entry is replaced)."""
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


# Example names for help lines and suggestions; the first one free is offered.
EXAMPLE_NAMES = ("Thunder Hooves", "Silver Blaze", "Lucky Star", "Dust Devil", "Night Owl")
MAX_SUGGESTIONS = 3


def free_name(horses: Sequence[Horse], owner: str, avoid: Sequence[str] = ()) -> str:
    """An example name that no other player's horse has (OR-2) and that is not in ``avoid``."""
    others = [h for h in horses if h.owner != owner]
    avoided = {name_key(a) for a in avoid}
    candidates = [*EXAMPLE_NAMES, *(f"Horse {n}" for n in range(2, len(horses) + len(avoid) + 3))]
    return next(
        name for name in candidates
        if find_horse(others, name) is None and name_key(name) not in avoided
    )


def free_cards(ledger: Ledger, horses: Sequence[Horse], owner: str) -> list[Card]:
    """The cards ``owner`` holds that no other player's horse runs as (OR-2), catalogue order."""
    taken = {h.card for h in horses if h.owner != owner}
    return [card for card in CATALOGUE if card.code not in taken and owns(ledger, owner, card)]


def entry_suggestions(ledger: Ledger, horses: Sequence[Horse], owner: str, name: str | None = None,
                      card: Card | None = None) -> list[str]:
    """Entries ``owner`` could send instead of a refused one, each valid now and none the refused one."""
    others = [h for h in horses if h.owner != owner]
    if name is not None and find_horse(others, name) is None:
        keep_name = name
    else:
        keep_name = free_name(horses, owner, [name] if name else [])
    cards = free_cards(ledger, horses, owner)
    if not cards:
        return [
            "stand — leave the table: you hold no card that another horse does not already "
            "run as, so you cannot enter a horse (OR-2)"
        ]
    if card is not None and card in cards:
        cards = [card]
    return [
        f"horse {keep_name} card {c.name} — enter {keep_name} running as the {c.name}, "
        "a card you own that no other horse runs as (OR-2)"
        for c in cards[:MAX_SUGGESTIONS]
    ]


@dataclass(frozen=True)
class NpcDraw:
    """One card drawn for an NPC horse; ``clash`` says why it was drawn again, if it was."""

    card: Card
    clash: str | None = None


def draw_npcs(rng: FairSource, horses: Sequence[Horse], wanted: int) -> tuple[list[Horse], list[NpcDraw]]:
    """OR-4: draw NPC horses until the field has ``wanted`` (a taken card or name drawn again)."""
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
