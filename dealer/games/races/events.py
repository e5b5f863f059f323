"""The events an Off to the Races table records in its history (OR-1 to OR-11)."""

from __future__ import annotations

from typing import Any, ClassVar

from dealer.history import FrozenRecord, HistoryEvent


class RacesEvent(HistoryEvent):
    """An event of an Off to the Races table."""

    ruleset: ClassVar[str | None] = "races"


class TableScheduled(RacesEvent):
    """The table was created to open later, with the players to seat then."""

    type: ClassVar[str] = "table.scheduled"
    opens_at: str
    players: list[str]


class TableOpened(RacesEvent):
    """Seating opened (OR-1)."""

    type: ClassVar[str] = "table.opened"
    at: str
    seated: list[str]


class Seated(RacesEvent):
    """OR-1: a player sat down."""

    type: ClassVar[str] = "seated"
    player: str


class Stood(RacesEvent):
    """OR-1, OR-9: a player stood up (withdrawing its horse while seating runs)."""

    type: ClassVar[str] = "stood"
    player: str
    withdrawn: bool


class HorseEntered(RacesEvent):
    """OR-2: a seated player entered (or replaced) its horse."""

    type: ClassVar[str] = "horse.entered"
    player: str
    name: str
    card: str
    replaces: str | None


class Ready(RacesEvent):
    """OR-3: a player is ready for seating to close."""

    type: ClassVar[str] = "ready"
    player: str


class Interested(RacesEvent):
    """OR-5: a player asked betting to wait for it."""

    type: ClassVar[str] = "interested"
    player: str


class NpcDraw(FrozenRecord):
    """OR-4: a card drawn for an NPC horse, and why it was drawn again (None: it was kept)."""

    card: str
    clash: str | None


class SeatingClosed(RacesEvent):
    """OR-3, OR-4, OR-6: seating closed; the field, completed with NPCs, and its length."""

    type: ClassVar[str] = "seating.closed"
    stood_up: list[str]
    field: list[dict[str, Any]]
    """Each horse as stored: name, card, owner, position."""
    npc_draws: list[NpcDraw]
    length: int


class BetPlaced(RacesEvent):
    """OR-5: an accepted bet."""

    type: ClassVar[str] = "bet"
    bettor: str
    horse: str
    amount: int


class Passed(RacesEvent):
    """OR-5: a player will not bet."""

    type: ClassVar[str] = "pass"
    player: str


class BettingClosed(RacesEvent):
    """OR-5: betting closed; the pool and the house's share."""

    type: ClassVar[str] = "betting.closed"
    pool: int
    house_share: int
    early: bool


class _Action(RacesEvent):
    by: str | None
    """Who did it; None for an action the dealer did on its own (OR-11)."""
    card: str
    moved: list[str]
    positions: list[int]
    lap_owed_at: int | None


class RaceAction(_Action):
    """OR-7: a Race Action: a card drawn, the horses it moved."""

    type: ClassVar[str] = "race.action"


class LapAction(_Action):
    """OR-8: a Lap Action."""

    type: ClassVar[str] = "lap.action"


class PaymentRecord(FrozenRecord):
    """OR-9: chips leaving the pool, to a bettor or to void."""

    to: str | None
    bettor: str | None
    amount: int
    reason: str
    horse: str | None


class TableFinished(RacesEvent):
    """OR-9, OR-10, OR-3: the race ended, was abandoned or never ran; the payments."""

    type: ClassVar[str] = "table.finished"
    outcome: str
    winners: list[str]
    payments: list[PaymentRecord]
