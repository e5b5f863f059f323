"""The events of the Hall's government (RULES GH-20 to GH-23, GH-30 to GH-34)."""

from __future__ import annotations

from typing import ClassVar

from dealer.games.hall.events import HallEvent


class ProposalSubmitted(HallEvent):
    """GH-20: a message in ``#proposals`` became proposal ``number``."""

    type: ClassVar[str] = "proposal.submitted"
    number: int
    author: str
    message: str
    urgent: bool
    ends_at: str
    text: str
    amendments: list[tuple[str, str]]
    warnings: list[str]


class ProposalChanged(HallEvent):
    """GH-22: the proposal's message was edited or deleted during its vote."""

    type: ClassVar[str] = "proposal.changed"
    number: int
    change: str  # edited | deleted
    at: str


class VoteMarked(HallEvent):
    """GH-20, GH-32, GH-34: a player's 👍 or 👎 on a vote, added or taken back."""

    type: ClassVar[str] = "vote.marked"
    vote: str  # proposal-N | poll-N | candidacy-NAME
    voter: str
    emoji: str  # + | -
    present: bool
    at: str


class ProposalTallied(HallEvent):
    """GH-21, GH-22: a proposal's vote was counted: who voted how, and the outcome."""

    type: ClassVar[str] = "proposal.tallied"
    number: int
    urgent: bool
    ends_at: str
    ayes: list[str]
    noes: list[str]
    both: list[str]
    status: str  # adopted | failed | void
    why: str
    applied: list[str]
    refused: list[str]


class SettingAmended(HallEvent):
    """GH-23: an adopted proposal changed a setting of the cycle."""

    type: ClassVar[str] = "setting.amended"
    proposal: int
    setting: str
    old: str
    new: str


class JudgeChanged(HallEvent):
    """GH-30, GH-34: the Judge changed (removed, resigned or elected)."""

    type: ClassVar[str] = "judge.changed"
    judge: str | None
    previous: str | None
    how: str  # removed | resigned | elected


class RemovalAssent(HallEvent):
    """GH-30: a player assented to removing the Judge in this phase."""

    type: ClassVar[str] = "judge.removal_assent"
    player: str
    judge: str
    phase: int


class RequestMade(HallEvent):
    """GH-31: a request for justice."""

    type: ClassVar[str] = "request.made"
    number: int
    author: str
    message: str
    text: str


class RulingGiven(HallEvent):
    """GH-31: the Judge's ruling on a request."""

    type: ClassVar[str] = "ruling.given"
    number: int
    request: int
    judge: str
    text: str


class RulingOverturned(HallEvent):
    """GH-32, GH-33: a ruling was overturned (by its Judge, or by a confidence vote)."""

    type: ClassVar[str] = "ruling.overturned"
    number: int
    how: str


class PollOpened(HallEvent):
    """GH-32: a confidence vote on a ruling began."""

    type: ClassVar[str] = "poll.opened"
    ruling: int
    started_by: str
    ends_at: str


class PollTallied(HallEvent):
    """GH-32: a confidence vote was counted."""

    type: ClassVar[str] = "poll.tallied"
    ruling: int
    overturn: list[str]
    affirm: list[str]
    both: list[str]
    overturned: bool


class Candidacy(HallEvent):
    """GH-34: a reputable player stood for Judge in an election week."""

    type: ClassVar[str] = "election.candidacy"
    candidate: str
    message: str
    week: str


class ElectionTallied(HallEvent):
    """GH-34: an election week ended: each candidacy's votes, the tie-break, the winner or why none."""

    type: ClassVar[str] = "election.tallied"
    week: str
    votes: dict[str, list[int]]
    first_messages: dict[str, str]
    winner: str | None
    why: str


class VotesLapsed(HallEvent):
    """The cycle ended while votes were open: they lapse, untallied."""

    type: ClassVar[str] = "votes.lapsed"
    proposals: list[int]
    polls: list[int]
    candidates: list[str]
