"""The events a Stationary Roulette game records in its history (SR-1 to SR-12)."""

from __future__ import annotations

from typing import Any, ClassVar

from dealer.history import FrozenRecord, HistoryEvent


class RouletteEvent(HistoryEvent):
    """An event of a Stationary Roulette game."""

    ruleset: ClassVar[str | None] = "roulette"


class GameCreated(RouletteEvent):
    """The game was created (SR-1, SR-12): its players, start, settings and stacks."""

    type: ClassVar[str] = "game.created"
    players: list[str]
    starts_at: str
    settings: dict[str, Any]
    stacks: dict[str, int]


class SubmissionAccepted(RouletteEvent):
    """SR-6: a preparation or bet on file, sealed with its receipt (docs/FAIRNESS.md)."""

    type: ClassVar[str] = "submission.accepted"
    player: str
    phase: str
    kind: str
    number: int
    canonical: str
    receipt: str
    sent_at: str


class RemindersSet(RouletteEvent):
    """A player turned its reminders on or off (I-12)."""

    type: ClassVar[str] = "reminders"
    player: str
    on: bool


class DeadlineIgnored(RouletteEvent):
    """A deadline of a phase already closed came, and changed nothing."""

    type: ClassVar[str] = "deadline.ignored"
    deadline: str
    phase: str
    status: str


class PhaseStarted(RouletteEvent):
    """A phase (the preparation phase or a round) began (SR-1, SR-7)."""

    type: ClassVar[str] = "phase.started"
    phase: str
    at: str
    deadline: str
    commitments: dict[str, str]
    """I-18: each active roulette's public colour commitment, by preparer."""


class Gross(FrozenRecord):
    """What one player owed through black before the net difference (SR-9)."""

    player: str
    owed: int


class RevealedBet(FrozenRecord):
    """A bet that counted in a round, with the salt that opens its receipt (docs/FAIRNESS.md)."""

    player: str
    canonical: str
    salt: str
    receipt: str


class BlackTransferRecord(FrozenRecord):
    """The chips moved through black in a round (SR-9)."""

    payer: str
    payee: str
    owed: int
    paid: int
    limited_by: str | None
    counted: bool
    """SR-10: False when paid for a round without a bet (it does not count towards the cap)."""
    gross: list[Gross]


class RoundResolved(RouletteEvent):
    """SR-8, SR-9: a round's roulettes revealed and scored, the chips moved."""

    type: ClassVar[str] = "round.resolved"
    round: int
    roulettes: list[dict[str, Any]]
    """Each resolved roulette's score card (colour, layout, bet, points, salts, receipts)."""
    bets: list[RevealedBet]
    transfer: BlackTransferRecord | None
    fees: dict[str, int]
    points: dict[str, int]
    black_losses: dict[str, int]
    """SR-9: chips each player lost through black that count towards its cap."""
    idle_black: dict[str, int]
    """SR-10: chips each player paid through black for rounds it placed no bet in."""
    chips_stolen: dict[str, int]


class PreparationMissed(RouletteEvent):
    """SR-10: a player had no preparation on file at a deadline, and paid for it."""

    type: ClassVar[str] = "preparation.missed"
    player: str
    round: int
    fee: int


class GameFinished(RouletteEvent):
    """SR-11 (and the SR-9 forfeit): the game is decided."""

    type: ClassVar[str] = "game.finished"
    winner: str | None
    forfeit: bool
    tiebreak: bool
    lead: int
    transfer: int
    tournament_points: dict[str, float]
    points: dict[str, int]
