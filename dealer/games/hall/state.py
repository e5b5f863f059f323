"""The Gilded Hall's settings and state (what is stored between steps)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dealer.games.base import Duration, GameSettings, GameState, UtcTime


class HallSettings(GameSettings):
    """Per-cycle settings; every default is the rule's own number."""

    phase_length: Duration = Field(default=timedelta(hours=24), description="GH-6: length of a phase")
    holo_percent: int = Field(default=5, ge=0, le=100, description="GH-3: chance that a random card is holographic")
    croupier_holo_percent: int = Field(default=10, ge=0, le=100, description="GH-5: the same for a card bought from the Croupier")
    victory_chips: int = Field(default=25, ge=1, description="GH-8: chips that win the cycle")
    starting_chips: int = Field(default=0, ge=0, description="GH-1: chips a member starts with")
    starting_vertebrae: int = Field(default=0, ge=0,
                                    description="GH-1: vertebrae a member starts with")

    @field_validator("phase_length")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("a phase must last some time (write it like 24h or 90m)")
        return value

    @model_validator(mode="after")
    def _nobody_wins_by_joining(self) -> "HallSettings":
        # GH-1, GH-8: starting chips at the victory threshold would make every join a win.
        if self.starting_chips >= self.victory_chips:
            raise ValueError(
                f"starting_chips ({self.starting_chips}) must be below victory_chips "
                f"({self.victory_chips}), or the first member to join wins at once (GH-8)"
            )
        return self


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Member(_Record):
    """A player who joined the cycle, with its activity in the current phase (GH-6)."""

    name: str
    joined_phase: int
    acted: bool = False
    """GH-6: took an action in the current phase."""
    inactive: bool = False
    """GH-6: took no action in the previous phase (fixed for the whole phase)."""
    gifted: str | None = None
    """GH-7: whom it gifted in the current phase (one gift per phase)."""


class Offer(_Record):
    """GH-1: an open trade offer; it holds nothing back (the swap checks at acceptance)."""

    id: int
    offerer: str
    target: str
    gives: dict[str, int]
    """Ledger item -> amount the offerer hands over."""
    wants: dict[str, int]
    """Ledger item -> amount the target hands over."""
    made_at: UtcTime


class GiftBonus(_Record):
    """GH-7: the giver's card owed if the inactive receiver acts later in the same phase."""

    giver: str
    receiver: str


class Happening(_Record):
    """One line of the phase summary: what someone did and what it revealed."""

    kind: Literal["joined", "gift", "gift_bonus", "bought", "opened", "trade", "trade_failed",
                  "granted"]
    actor: str
    other: str | None = None
    items: list[str] = Field(default_factory=list)
    """Labels of what moved or was revealed (cards drawn, items given, starting items)."""
    back: list[str] = Field(default_factory=list)
    """For a trade: the labels of what came back."""
    what: str = ""
    """Words the summary quotes: a purchase, a gift's extras, why a trade failed."""
    cost: int = 0
    offer: int | None = None
    first_draw: int | None = None
    """GH-40: the fair source's counter at the first draw it took (None: no draw)."""
    next_draw: int | None = None
    """GH-40: the counter after its last draw."""
    client_seeds: int = 0
    """GH-40: how many of the phase's client seeds were mixed into its draws."""


class Challenge(_Record):
    """GH-19: an open duel challenge (it lapses at the end of its phase)."""

    id: int
    challenger: str
    challenged: list[str]
    accepted: list[str] = Field(default_factory=list)


class HallState(GameState):
    """One cycle of the Hall: only what is open or current.

    A step reads and writes this whole state, so it holds nothing that grows with the age
    of the cycle: offers leave it when they are accepted, declined, withdrawn or lapse,
    the happenings when their phase's summary is posted, and past phases leave only the
    start of the one before the current. What is gone stays in the history (the events
    ``offer``, ``trade``, ``phase`` ...), not here.
    """

    settings: HallSettings
    status: Literal["pending", "running", "finished"] = "pending"
    opens_at: UtcTime
    phase: int = 0
    """The current phase number; 0 while pending."""
    opened_at: UtcTime | None = None
    """When phase 1 began."""
    phase_started_at: UtcTime | None = None
    """When the current phase began (None while pending)."""
    previous_phase_started_at: UtcTime | None = None
    """When the phase before the current one began: tells a late message its phase."""
    phase_ends_at: UtcTime | None = None
    members: list[Member] = Field(default_factory=list)
    offers: list[Offer] = Field(default_factory=list)
    """The open offers (GH-1)."""
    next_offer: int = 1
    bonuses: list[GiftBonus] = Field(default_factory=list)
    log: list[Happening] = Field(default_factory=list)
    """The current phase's happenings, posted in the phase summary."""
    chips: dict[str, int] = Field(default_factory=dict)
    """Each member's chips in the cycle after the last step (summary() has no ledger)."""
    vertebrae: dict[str, int] = Field(default_factory=dict)
    """Each member's vertebrae in the cycle after the last step (help() has no ledger)."""
    winner: str | None = None
    finished_at: UtcTime | None = None
    battlers: list[str] = Field(default_factory=list)
    """GH-18: who engaged in battle in the current phase (they play at the next one's start)."""
    challenges: list[Challenge] = Field(default_factory=list)
    """GH-19: the open duel challenges."""
    next_challenge: int = 1
    cards: dict[str, int] = Field(default_factory=dict)
    """GH-18: each member's cards outside any match, as of the last step that moved them."""

    def member(self, name: str) -> Member | None:
        """The member called ``name`` (compared without case; a leading ``@`` may be added)."""
        for wanted in (name.casefold(), name.removeprefix("@").casefold()):
            found = next((m for m in self.members if m.name.casefold() == wanted), None)
            if found is not None:
                return found
        return None

    def begin_phase(self, number: int, at: datetime) -> None:
        """Make phase ``number``, beginning ``at``, the current one."""
        if number == 1:
            self.opened_at = at
        self.previous_phase_started_at = self.phase_started_at
        self.phase = number
        self.phase_started_at = at
