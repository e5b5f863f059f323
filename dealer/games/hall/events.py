"""The events a Gilded Hall cycle records in its history (GH-1 to GH-8, GH-40)."""

from __future__ import annotations

from typing import ClassVar

from dealer.history import HistoryEvent


class HallEvent(HistoryEvent):
    """An event of a Gilded Hall cycle."""

    ruleset: ClassVar[str | None] = "hall"


class CycleCreated(HallEvent):
    """The cycle was created: the players joined at the opening, and the first commitment."""

    type: ClassVar[str] = "created"
    players: list[str]
    opens_at: str
    commitment: str


class DeadlineIgnored(HallEvent):
    """A deadline that opens no next phase came, and changed nothing."""

    type: ClassVar[str] = "deadline_ignored"
    name: str
    phase: int
    status: str


class Joined(HallEvent):
    """GH-6: a player joined the cycle."""

    type: ClassVar[str] = "joined"
    player: str
    phase: int


class GiftGiven(HallEvent):
    """GH-7: a member gifted another random cards."""

    type: ClassVar[str] = "gift"
    giver: str
    receiver: str
    inactive: bool
    few_cards: bool
    cards: list[str]


class GiftBonus(HallEvent):
    """GH-7: an inactive receiver acted after a gift; its giver drew a card."""

    type: ClassVar[str] = "gift_bonus"
    giver: str
    receiver: str
    cards: list[str]


class OfferMade(HallEvent):
    """GH-1: an open trade offer."""

    type: ClassVar[str] = "offer"
    id: int
    offerer: str
    target: str
    gives: dict[str, int]
    wants: dict[str, int]


class TradeDone(HallEvent):
    """GH-1: an offer accepted; both sides moved at once."""

    type: ClassVar[str] = "trade"
    id: int
    offerer: str
    target: str
    gives: dict[str, int]
    wants: dict[str, int]


class TradeFailed(HallEvent):
    """GH-1: an acceptance that could not be completed; nothing moved, the offer closed."""

    type: ClassVar[str] = "trade_failed"
    id: int
    offerer: str
    target: str
    why: str


class OfferDeclined(HallEvent):
    """GH-1: the target refused an offer."""

    type: ClassVar[str] = "offer_declined"
    id: int
    by: str


class OfferWithdrawn(HallEvent):
    """GH-1: the offerer took an offer back."""

    type: ClassVar[str] = "offer_withdrawn"
    id: int
    by: str


class PhaseBegan(HallEvent):
    """GH-6, GH-40: a phase began; the closing one's seed revealed, offers lapsed."""

    type: ClassVar[str] = "phase"
    number: int
    commitment: str
    closed: int | None = None
    revealed_seed: str | None = None
    inactive: list[str] | None = None
    expired: list[int] | None = None


class Victory(HallEvent):
    """GH-8: a member reached the victory chips; the cycle is over."""

    type: ClassVar[str] = "victory"
    winner: str
    chips: int
    phase: int
    revealed_seed: str


class Granted(HallEvent):
    """GH-1: the host granted an item into a member's inventory in the cycle."""

    type: ClassVar[str] = "admin.grant"
    player: str
    item: str
    amount: int


class PackOpened(HallEvent):
    """GH-4: a pack discarded and the cards it held."""

    type: ClassVar[str] = "pack_opened"
    player: str
    pack: str
    cards: list[str]


class Bought(HallEvent):
    """GH-5: a purchase from the Croupier."""

    type: ClassVar[str] = "bought"
    player: str
    ware: str
    count: int
    cost: int
    cards: list[str]
