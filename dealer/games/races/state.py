"""The settings and the stored state of one Off to the Races table (RULES OR-1 to OR-11)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field, field_validator

from dealer.games.base import GameSettings, GameState, PositiveDuration, UtcTime
from dealer.history import Record

Phase = Literal["pending", "seating", "betting", "racing", "finished"]
"""pending, seating (OR-1 to OR-3), betting (OR-5), racing (OR-6 to OR-8, OR-11), finished."""

Outcome = Literal["raced", "no_race", "abandoned"]

_OFF = {"", "off", "none", "no", "0", "false"}


class RacesSettings(GameSettings):
    """Per-table settings; every default is the rule's own number."""

    seating_window: PositiveDuration = Field(
        timedelta(hours=1), description="OR-3: runs from the first player's `sit`"
    )
    min_horses: int = Field(  # the NPC deck has 52 cards
        default=4, ge=1, le=52, description="OR-4: NPCs are drawn up to this many horses"
    )
    betting_window: PositiveDuration = Field(
        timedelta(hours=1),
        description="OR-5: betting closes this long after the last bet (or its opening)",
    )
    house_share_percent: int = Field(
        default=10, ge=0, le=100, description="OR-5: floor(pool x percent / 100) goes to the house"
    )
    idle_action_after: PositiveDuration | None = Field(  # None means off
        None, description="OR-11: dealer acts itself after this long idle; off or empty = off"
    )

    @field_validator("idle_action_after", mode="before")
    @classmethod
    def _off_means_none(cls, value: Any) -> Any:
        # `--set idle_action_after=off` (or empty) switches OR-11 off.
        if value is None or (isinstance(value, str) and value.strip().lower() in _OFF):
            return None
        return value


class Horse(Record):
    """A horse in the field: entered by a player (OR-2) or an NPC (OR-4, ``owner`` None)."""

    name: str
    card: str  # catalogue code: KS, 10H, RJ
    owner: str | None = None
    position: int = 0

    @property
    def npc(self) -> bool:
        """Whether the dealer drew this horse (OR-4)."""
        return self.owner is None


class Bet(Record):
    """One accepted bet (OR-5); a bettor may bet several times, on several horses."""

    bettor: str
    horse: str  # the horse's name as entered
    amount: int
    at: UtcTime


class PhaseMark(Record):
    """When a phase began: used to refuse commands meant for a phase already closed."""

    phase: Phase
    started_at: UtcTime


class RacesState(GameState):
    """Everything the table remembers between steps (stored as JSON)."""

    settings: RacesSettings
    phase: Phase
    phases: list[PhaseMark]
    opens_at: UtcTime
    seat_on_open: list[str] = Field(default_factory=list)  # players named at creation
    first_sat_at: UtcTime | None = None
    seated: list[str] = Field(default_factory=list)
    ready: list[str] = Field(default_factory=list)
    horses: list[Horse] = Field(default_factory=list)
    interested: list[str] = Field(default_factory=list)
    passed: list[str] = Field(default_factory=list)
    # Players who sat and stood up before the race ended (by `stand` in any phase, or
    # stood up at the close of seating for having no horse): their winnings go to void (OR-9).
    left: list[str] = Field(default_factory=list)
    bets: list[Bet] = Field(default_factory=list)
    pool: int = 0  # every chip bet, before the house's share
    house_share: int = 0
    length: int = 0
    lap_owed: bool = False
    last_lap_k: int = -1  # OR-8: the highest k triggered so far; -1 means none yet
    actions: int = 0
    last_action_at: UtcTime | None = None
    winners: list[str] = Field(default_factory=list)
    outcome: Outcome | None = None

    def horse_of(self, owner: str) -> Horse | None:
        """The horse ``owner`` entered, if any."""
        return next((h for h in self.horses if h.owner == owner), None)

    @property
    def phase_started_at(self) -> datetime:
        """When the current phase began."""
        return self.phases[-1].started_at

    @property
    def prize(self) -> int:
        """P of OR-9: the pool after the house's share."""
        return self.pool - self.house_share
