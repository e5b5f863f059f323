"""The events an Exoptosis match records in its history (GH-10 to GH-19); a held card is ``{item, owner}``."""

from __future__ import annotations

from typing import ClassVar

from dealer.history import HistoryEvent


class ExoptosisEvent(HistoryEvent):
    """An event of an Exoptosis match."""

    ruleset: ClassVar[str | None] = "exoptosis"


class MatchOpened(ExoptosisEvent):
    """The match was created with its participants, its kind and the fair commitment."""

    type: ClassVar[str] = "match.opened"
    players: list[str]
    fight: str
    commitment: str


class HandChosen(ExoptosisEvent):
    """GH-10: a participant chose (or changed) its hand."""

    type: ClassVar[str] = "hand"
    player: str
    cards: list[str]


class HandsRevealed(ExoptosisEvent):
    """GH-10: every hand revealed; those without one are out."""

    type: ClassVar[str] = "revealed"
    hands: dict[str, list[str]]
    out: list[str]


class Bet(ExoptosisEvent):
    """GH-11: a raise, a match or a fold."""

    type: ClassVar[str] = "bet"
    player: str
    verb: str
    paid: int
    stake: int


class BettingClosed(ExoptosisEvent):
    """GH-11: the betting window closed: the matched bet, refunds and who is out."""

    type: ClassVar[str] = "betting_closed"
    bet: int
    refunds: dict[str, int]
    out: list[str]


class PlayBegan(ExoptosisEvent):
    """GH-12: the turn order, with the groups the fair source ordered."""

    type: ClassVar[str] = "play_began"
    order: list[str]
    ties: list[list[str]]


class CardPlayed(ExoptosisEvent):
    """GH-13, GH-15: a card played and what its effect did."""

    type: ClassVar[str] = "played"
    player: str
    card: str
    targets: list[str]
    effect: list[str]


class CardAdded(ExoptosisEvent):
    """GH-14: a card added from the inventory."""

    type: ClassVar[str] = "added"
    player: str
    card: str


class CardAsked(ExoptosisEvent):
    """GH-14: a participant asked another for a card."""

    type: ClassVar[str] = "asked"
    asker: str
    giver: str


class CardGiven(ExoptosisEvent):
    """GH-14: a card given to the asker (``random``: the giver did not choose in time)."""

    type: ClassVar[str] = "given"
    giver: str
    asker: str
    card: str
    random: bool


class TurnSkipped(ExoptosisEvent):
    """GH-17: a turn not taken within its length."""

    type: ClassVar[str] = "skipped"
    player: str
    turn: int


class Left(ExoptosisEvent):
    """A participant left: no hand in time, folded, out of the betting, or forfeited."""

    type: ClassVar[str] = "left"
    player: str
    why: str


class Consented(ExoptosisEvent):
    """GH-16: a participant consented to terminate the match."""

    type: ClassVar[str] = "consent"
    player: str
    turn: int


class MatchEnded(ExoptosisEvent):
    """GH-16, GH-18: the match ended: won, cancelled or terminated, and the reward."""

    type: ClassVar[str] = "ended"
    result: str
    winner: str | None
    pool: int
    reward: dict[str, int]


class DeadlineIgnored(ExoptosisEvent):
    """A deadline of a phase already over came, and changed nothing."""

    type: ClassVar[str] = "deadline_ignored"
    name: str
