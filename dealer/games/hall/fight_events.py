"""The events of the Hall's Exoptosis fights (RULES GH-18, GH-19); the matches keep their own."""

from __future__ import annotations

from typing import Any, ClassVar

from dealer.games.hall.events import HallEvent


class BattleEngaged(HallEvent):
    """GH-18: a member engaged in the battle of the next phase."""

    type: ClassVar[str] = "battle.engaged"
    player: str
    phase: int


class DuelChallenged(HallEvent):
    """GH-19: a member challenged others to a duel."""

    type: ClassVar[str] = "duel.challenged"
    id: int
    challenger: str
    challenged: list[str]


class DuelAnswered(HallEvent):
    """GH-19: a challenged member accepted or declined."""

    type: ClassVar[str] = "duel.answered"
    id: int
    player: str
    verb: str


class FightOpened(HallEvent):
    """GH-18, GH-19: a match opened (its own game, a child of the cycle)."""

    type: ClassVar[str] = "fight.opened"
    game: str
    fight: str
    players: list[str]


class NoBattle(HallEvent):
    """GH-18: fewer than 2 engaged in a phase: no battle."""

    type: ClassVar[str] = "battle.none"
    phase: int
    engaged: list[str]


class DuelsLapsed(HallEvent):
    """GH-19: challenges left unanswered at the end of their phase."""

    type: ClassVar[str] = "duel.lapsed"
    ids: list[int]


class FightEnded(HallEvent):
    """A match of the cycle ended (its summary as the parent heard it)."""

    type: ClassVar[str] = "fight.ended"
    game: str
    status: str
    winner: str | None
    detail: dict[str, Any]
