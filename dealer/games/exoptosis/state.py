"""An Exoptosis match's settings and state (RULES GH-10 to GH-19)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field

from dealer.cards import BY_CODE, Card, card_of_item
from dealer.games.base import Duration, GameSettings, GameState, UtcTime
from dealer.games.names import find_named
from dealer.history import Record


class ExoptosisSettings(GameSettings):
    """Per-match settings; every default is the rule's own number."""

    hall: str | None = Field(
        default=None,
        description="GH-10: the Hall cycle whose inventories the match uses (created directly; "
                    "default: the only running Hall)")
    fight: Literal["match", "battle", "duel"] = Field(
        default="match", description="GH-18, GH-19: what opened the match (a battle draws a reward)")
    setup_window: Duration = Field(default=timedelta(hours=24),
                                   description="GH-10: time to choose a hand")
    betting_window: Duration = Field(default=timedelta(hours=1),
                                     description="GH-11: time to raise, match or fold")
    turn_length: Duration = Field(default=timedelta(hours=24),
                                  description="GH-17: a turn not taken within it is skipped")


class Held(Record):
    """A card held by the match: its ledger item and the player who owns it (GH-10)."""

    item: str
    owner: str

    @property
    def card(self) -> Card:
        """The catalogue row of the card."""
        parsed = card_of_item(self.item)
        assert parsed is not None
        return parsed[0]


class Seat(Record):
    """One participant."""

    name: str
    hand: list[Held] | None = None
    """GH-10: None until the participant has chosen its hand."""
    stake: int = 0
    """GH-11: chips it put in the pool."""
    settled: bool = False
    """GH-11: it has matched the highest bet or declared it will not raise."""
    out: str | None = None
    """Why it left the match (no hand, folded, out of the betting, forfeited), or None."""
    spare: list[str] = Field(default_factory=list)
    """GH-14: its cards in no match, as of the match's last step (``help`` sees no ledger)."""


class Asked(Record):
    """GH-14: a participant that could neither play nor add asked another for a card."""

    asker: str
    giver: str


class ExoptosisState(GameState):
    """One Exoptosis match."""

    settings: ExoptosisSettings
    phase: Literal["setup", "betting", "play", "finished"] = "setup"
    seats: list[Seat]
    order: list[str] = Field(default_factory=list)
    """GH-12: the turn order, fixed when play starts."""
    ties: list[list[str]] = Field(default_factory=list)
    """GH-12: the groups of equal hand size the fair source ordered."""
    turn: int = 0
    """The number of the current turn (1 = the first), 0 before play."""
    current: str | None = None
    turn_began_at: UtcTime | None = None
    """GH-17: a turn's command sent before the current turn began was sent in one now passed."""
    turn_ends_at: UtcTime | None = None
    last: str | None = None
    """GH-13: the code of the last card played (None before the first)."""
    played: list[Held] = Field(default_factory=list)
    """The played pile: held by the match until it ends (GH-10)."""
    asked: Asked | None = None
    consents: list[str] = Field(default_factory=list)
    """GH-16: who consented to terminate during the current turn."""
    result: Literal["won", "cancelled", "terminated", "ended"] | None = None
    winner: str | None = None
    reward: str | None = None
    """GH-18: the battle reward's words, once drawn."""

    def seat(self, name: str) -> Seat | None:
        """The participant called ``name`` (compared by ``player_key``)."""
        return find_named(self.seats, name)

    @property
    def remaining(self) -> list[Seat]:
        """The participants still in the match."""
        return [s for s in self.seats if s.out is None]

    @property
    def last_card(self) -> Card | None:
        """GH-13: the last card played, or None before the first."""
        return BY_CODE[self.last] if self.last else None
