"""The Hall's player commands: what a line means, before any rule looks at it.

Each command is a frozen dataclass; :func:`parse` reads one cleaned line (any case) into
one, or raises :class:`Rejected`. ``EXAMPLES`` are both the help text and test input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dealer.games.base import Rejected
from dealer.games.hall.items import parse_bundle

MAX_BUY = 100
"""An operational limit, not a rule: one ``buy`` line buys at most 100 items, so that a
single reply and the phase summary stay readable."""


@dataclass(frozen=True)
class Join:
    """Join the current cycle (GH-6: active in the phase it joins)."""


@dataclass(frozen=True)
class ShowInventory:
    """Ask for one's own inventory (GH-7: not an action)."""


@dataclass(frozen=True)
class OpenPack:
    """Open a pack one holds (GH-4)."""

    pack: str  # handy | deck | legendary


@dataclass(frozen=True)
class Buy:
    """Buy from the Croupier (GH-5)."""

    ware: str  # a key of economy.PRICES
    count: int = 1


@dataclass(frozen=True)
class MakeOffer:
    """Offer a trade to another player (GH-1)."""

    target: str
    gives: tuple[tuple[str, int], ...]
    wants: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class AnswerOffer:
    """Accept, decline or withdraw an open offer (GH-1)."""

    verb: str  # accept | decline | withdraw
    offer: int


@dataclass(frozen=True)
class Gift:
    """Gift a random card to another player (GH-7)."""

    receiver: str


EXAMPLES: dict[type, list[str]] = {
    Join: ["join — take part in this cycle of the Hall"],
    ShowInventory: ["inventory — see your chips, vertebrae, cards and packs (not an action)"],
    OpenPack: [
        "open handy pack — open a Handy Pack you hold: 3 random cards (GH-4)",
        "open deck pack — open a Deck Pack you hold: 5 random cards (GH-4)",
        "open legendary pack — open a Legendary Pack: 5 random cards + 2 holographic (GH-4)",
    ],
    Buy: [
        "buy random card — 5 vertebrae, 10 % holographic (GH-5)",
        "buy handy pack — 12 vertebrae (GH-5)",
        "buy deck pack — 18 vertebrae (GH-5)",
        "buy legendary pack — 50 vertebrae (GH-5)",
        "buy chip 3 — 25 vertebrae per chip (GH-5); a count works with every item",
    ],
    MakeOffer: [
        "offer 2 chips and 7H to bob for AS — propose a trade; bob must accept (GH-1)",
    ],
    AnswerOffer: [
        "accept offer 12 — take offer 12 made to you: both sides swap at once (GH-1)",
        "decline offer 12 — refuse offer 12 made to you",
        "withdraw offer 12 — take back an offer you made",
    ],
    Gift: ["gift bob — once per phase, bob receives a random card (GH-7)"],
}

_JOIN = re.compile(r"^join(?: (?:the )?(?:gilded )?hall)?$", re.I)
_INVENTORY = re.compile(r"^(?:show )?(?:my )?(?:inventory|inv)$", re.I)
_OPEN = re.compile(r"^open (?:an? |my )?(handy|deck|legendary)(?: pack)?$", re.I)
_OPEN_ANY = re.compile(r"^open\b", re.I)
_BUY = re.compile(
    r"^buy (?:(\d+) (?:x )?)?(?:an? )?(random cards?|cards?|handy packs?|deck packs?|"
    r"legendary packs?|chips?)(?: (\d+))?$",
    re.I,
)
_OFFER = re.compile(r"^offer (.+?) to ([^\s,]+) for (.+)$", re.I)
_ANSWER = re.compile(r"^(accept|decline|withdraw) offer #?(\d{1,9})$", re.I)
_GIFT = re.compile(r"^gift (?:a card to |to )?([^\s,]+)$", re.I)
_WARE = {
    "random card": "random card", "card": "random card",
    "handy pack": "handy pack", "deck pack": "deck pack",
    "legendary pack": "legendary pack", "chip": "chip",
}


def parse(line: str) -> object:
    """Read one command line; raise :class:`Rejected` for a line that is not a Hall command."""
    text = line.strip()
    if _JOIN.match(text):
        return Join()
    if _INVENTORY.match(text):
        return ShowInventory()
    for reader in (_read_open, _read_buy, _read_offer, _read_answer, _read_gift):
        command = reader(text)
        if command is not None:
            return command
    raise Rejected(f"{text!r} is not a Hall command")


def _read_open(text: str) -> OpenPack | None:
    match = _OPEN.match(text)
    if match:
        return OpenPack(match.group(1).lower())
    if _OPEN_ANY.match(text):
        raise Rejected("only packs can be opened", rule="GH-4", allowed=EXAMPLES[OpenPack])
    return None


def _read_buy(text: str) -> Buy | None:
    if not text.lower().startswith("buy"):
        return None
    match = _BUY.match(text)
    if not match:
        raise Rejected("the Croupier does not sell that", rule="GH-5", allowed=EXAMPLES[Buy])
    before, ware, after = match.groups()
    if before and after:
        raise Rejected("give the count once ('buy 3 chips' or 'buy chip 3')", rule="GH-5")
    count = int(before or after or 1)
    if not 1 <= count <= MAX_BUY:
        raise Rejected(f"buy between 1 and {MAX_BUY} at a time", rule="GH-5", allowed=EXAMPLES[Buy])
    return Buy(_WARE[ware.lower().rstrip("s")], count)


def _read_offer(text: str) -> MakeOffer | None:
    if not text.lower().startswith("offer"):
        return None
    match = _OFFER.match(text)
    if not match:
        raise Rejected(
            "an offer reads 'offer ITEMS to PLAYER for ITEMS'", rule="GH-1",
            allowed=EXAMPLES[MakeOffer],
        )
    gives, target, wants = match.groups()
    return MakeOffer(target, _frozen(parse_bundle(gives)), _frozen(parse_bundle(wants)))


def _frozen(bundle: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(bundle.items()))


def _read_answer(text: str) -> AnswerOffer | None:
    match = _ANSWER.match(text)
    if match:
        return AnswerOffer(match.group(1).lower(), int(match.group(2)))
    return None


def _read_gift(text: str) -> Gift | None:
    if not text.lower().startswith("gift"):
        return None
    match = _GIFT.match(text)
    if not match:
        raise Rejected("a gift reads 'gift PLAYER'", rule="GH-7", allowed=EXAMPLES[Gift])
    return Gift(match.group(1))
