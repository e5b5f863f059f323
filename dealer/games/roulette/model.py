"""Stationary Roulette's numbers (each beside its rule id), settings and stored state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from dealer.games.base import GameSettings, GameState, PositiveDuration, UtcTime, setting_duration
from dealer.history import Record

GOLD, SILVER, BLACK = "gold", "silver", "black"
COLOURS = (GOLD, SILVER, BLACK)

PLAYERS = 2  # SR-1
STAKE = 40  # SR-2 / SR-5: a layout and a bet are both exactly 40 points
MIN_GOLD = 25  # SR-2
MIN_SILVER = 5  # SR-2
MAX_BET_COLOURS = 2  # SR-5
BONUS = 20  # SR-8
BLACK_LOSS_CAP = 100  # SR-9
BLACK_FEE = 10  # SR-9
MISSED_PREPARATION_POINTS = 60  # SR-10
MISSED_PREPARATION_FEE = 5  # SR-10
POINTS_PER_CHIP = 10  # SR-11: the winner takes floor(lead / 10) chips

PREPARATION = "preparation"
START = "start"


def phase_name(phase: int) -> str:
    """The deadline name of a phase: ``preparation`` (phase 0) or ``round-3``."""
    return PREPARATION if phase == 0 else f"round-{phase}"


def phase_title(phase: int) -> str:
    """How posts name a phase: ``the preparation phase`` or ``round 3``."""
    return "the preparation phase" if phase == 0 else f"round {phase}"


class RouletteSettings(GameSettings):
    """Per-game settings (RULES marks them *setting*); every field has the rule's default."""

    rounds: int = Field(10, ge=1, le=100, description="SR-1: number of rounds")
    round_length: PositiveDuration = Field(timedelta(hours=24), description="SR-1: length of a round")
    preparation_length: PositiveDuration = Field(
        timedelta(hours=24), description="SR-1: length of the preparation phase"
    )
    layout_public: bool = Field(True, description="SR-7: announce each active roulette's layout")
    min_stack: int = Field(
        0, ge=0, description="SR-12: creation is refused if a player has fewer chips"
    )
    early_close: bool = Field(
        False, description="I-14: close a phase as soon as every submission due in it is in"
    )
    remind_before: str = Field(
        "6h,1h", description="I-12: PM reminders this long before each deadline; empty = none"
    )
    colour_limit: int = Field(
        5, ge=1, description="SR-4: times each colour may be prepared as the winning colour"
    )

    @field_validator("remind_before")
    @classmethod
    def _reminders_parse(cls, value: str, info: ValidationInfo) -> str:
        if info.context and info.context.get("stored"):
            # Older versions read a bare number as seconds; a stored game keeps that meaning.
            value = ",".join(f"{p.strip()}s" if p.strip().isdigit() else p for p in value.split(","))
        reminder_offsets(value)  # raises ValueError for a malformed list or a bare number
        return value


@lru_cache(maxsize=64)
def reminder_offsets(text: str) -> tuple[tuple[str, timedelta], ...]:
    """``"6h,1h"`` as ``(("6h", 6 h), ("1h", 1 h))``, earliest first; cached (read every step)."""
    found: dict[timedelta, str] = {}
    for part in text.split(","):
        label = part.strip().lower().replace(" ", "")
        if not label:
            continue
        offset = setting_duration(label)
        if offset <= timedelta(0):
            raise ValueError(f"a reminder comes before the deadline, not {label!r}")
        found.setdefault(offset, label)
    return tuple((label, offset) for offset, label in sorted(found.items(), reverse=True))


# --- commands (what parse() returns) ------------------------------------------------------


@dataclass(frozen=True)
class Prepare:
    """``prepare black gold 30 silver 10``: a roulette for the opponent (SR-2, SR-3)."""

    colour: str
    gold: int
    silver: int
    black: int = 0


@dataclass(frozen=True)
class Bet:
    """``bet gold 30 silver 10``: 40 points on the opponent's active roulette (SR-5)."""

    gold: int = 0
    silver: int = 0
    black: int = 0

    def on(self, colour: str) -> int:
        """The points on ``colour``."""
        return {GOLD: self.gold, SILVER: self.silver, BLACK: self.black}[colour]


@dataclass(frozen=True)
class Reminders:
    """``reminders off`` / ``reminders on``: whether the dealer PMs deadline reminders."""

    on: bool


# --- stored state ------------------------------------------------------------------------


class Sealed(Record):
    """One accepted submission, sealed by its receipt until its salt is revealed."""

    player: str
    phase: str  # the phase it was sent in: preparation, round-3
    kind: Literal["prepare", "bet"]
    number: int  # 1 for the player's first accepted submission of this kind in the phase
    colour: str | None = None  # the winning colour of a preparation
    gold: int
    silver: int
    black: int
    sent_at: UtcTime
    salt: str
    canonical: str
    receipt: str

    def amount(self, colour: str) -> int:
        """Points on ``colour`` (the layout of a preparation, the stake of a bet)."""
        return {GOLD: self.gold, SILVER: self.silver, BLACK: self.black}[colour]


class Roulette(Record):
    """A preparation locked in at a deadline: the roulette its bettor plays in one round."""

    preparer: str
    bettor: str
    round: int
    preparation: Sealed
    commitment: str  # SHA-256(salt + winning colour), published when it becomes active

    @property
    def colour(self) -> str:
        """The winning colour (secret until the round is resolved)."""
        assert self.preparation.colour is not None
        return self.preparation.colour

    def layout(self, colour: str) -> int:
        """The initial points on ``colour`` (SR-2)."""
        return self.preparation.amount(colour)


class RouletteState(GameState):
    """Everything the game needs between two steps (stored as JSON)."""

    game: str
    players: list[str]
    settings: RouletteSettings
    status: Literal["pending", "running", "finished"] = "pending"
    starts_at: UtcTime
    phase: int = 0  # 0 = the preparation phase, r = round r
    phase_starts: list[UtcTime] = Field(default_factory=list)  # index = phase
    phase_deadline: UtcTime | None = None  # as set; an admin override may move it
    starting_stacks: dict[str, int]
    points: dict[str, int]
    black_losses: dict[str, int]  # SR-9: chips lost through black, capped at 100
    # SR-10, I-20: chips paid through black for rounds without a valid bet (not capped)
    idle_black: dict[str, int] = Field(default_factory=dict)
    chips_stolen: dict[str, int]  # SR-11 tiebreak: chips received through black
    colours_used: dict[str, dict[str, int]]  # SR-4: locked-in winning colours
    active: dict[str, Roulette | None] = Field(default_factory=dict)  # by preparer
    preparations: dict[str, Sealed] = Field(default_factory=dict)  # on file this phase
    bets: dict[str, Sealed] = Field(default_factory=dict)  # on file this phase
    # SR-6: the submissions replaced this phase, oldest first: no longer counted, but their
    # receipts stay checkable (the `receipts` command gives them in full).
    replaced: list[Sealed] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)  # "alice:round-3:bet" -> accepted
    reminders_off: list[str] = Field(default_factory=list)
    forfeited: str | None = None
    winner: str | None = None
    tiebreak: bool = False
    tournament_points: dict[str, float] = Field(default_factory=dict)
    end_transfer: int = 0
    ended_at: UtcTime | None = None

    def opponent(self, name: str) -> str:
        """The other player."""
        first, second = self.players
        return second if name == first else first

    @property
    def last_round(self) -> int:
        """The number of the final round (SR-1)."""
        return self.settings.rounds
