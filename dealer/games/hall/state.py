"""The Gilded Hall's settings and state (what is stored between steps)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from dealer.games.base import Duration, GameSettings, GameState, PositiveDuration, UtcTime
from dealer.games.names import find_named
from dealer.history import Record


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _names(value: Any) -> Any:
    """A list of player names as a setting gives it: ``alice,bob`` (or spaces), or a list."""
    if isinstance(value, str):
        return [name for name in value.replace(",", " ").split() if name]
    return value


Names = Annotated[list[str], BeforeValidator(_names)]
"""Player names, written ``alice,bob`` in a setting."""


class HallSettings(GameSettings):
    """Per-cycle settings; every default is the rule's own number."""

    phase_length: PositiveDuration = Field(default=timedelta(hours=24), description="GH-6: length of a phase")
    holo_percent: int = Field(default=5, ge=0, le=100, description="GH-3: chance that a random card is holographic")
    croupier_holo_percent: int = Field(default=10, ge=0, le=100, description="GH-5: the same for a card bought from the Croupier")
    victory_chips: int = Field(default=25, ge=1, description="GH-8: chips that win the cycle")
    starting_chips: int = Field(default=0, ge=0, description="GH-1: chips a member starts with")
    starting_vertebrae: int = Field(default=0, ge=0,
                                    description="GH-1: vertebrae a member starts with")
    reputable: Names = Field(default_factory=list,
                             description="GH-21, GH-34: the reputable players (alice,bob): "
                                         "they may submit Urgent proposals and stand for Judge")
    judge: str | None = Field(default=None, description="GH-30: the Judge when the cycle opens "
                                                         "(none by default: elections install one)")
    week_start: str = Field(default="monday 00:00",
                            description="GH-34: when an election week starts (a weekday and a UTC "
                                        "time, e.g. 'monday 00:00')")
    day_length: PositiveDuration = Field(
        default=timedelta(hours=24),
        description="GH-35: the day GH-21, GH-32, GH-33, GH-34 count in (a week is 7); whole "
                    "seconds, fixed when the cycle is created")
    match_setup_window: Duration = Field(default=timedelta(hours=24),
                                         description="GH-10: the setup window of the cycle's battles and duels")
    match_betting_window: Duration = Field(default=timedelta(hours=1),
                                           description="GH-11: their betting window")
    match_turn_length: Duration = Field(default=timedelta(hours=24), description="GH-17: their turn length")
    vote_grace: Duration = Field(
        default=timedelta(minutes=10),
        description="GH-20, GH-32, GH-34: how long after a vote ends dealer waits for reactions "
                    "sent before the end but read late, before it tallies (they count by the "
                    "time they were sent)")
    ruling_reminder: Duration = Field(
        default=timedelta(days=1),
        description="GH-31: the Judge responds 'as quickly as possible'; dealer reminds the "
                    "Judge privately of a request still awaiting a ruling this long after it "
                    "was made, and again every time this long passes")
    price_random_card: int = Field(default=5, ge=1, description="GH-5: the Croupier's price of a random card, in vertebrae")
    price_handy_pack: int = Field(default=12, ge=1, description="GH-5: the price of a Handy Pack")
    price_deck_pack: int = Field(default=18, ge=1, description="GH-5: the price of a Deck Pack")
    price_legendary_pack: int = Field(default=50, ge=1, description="GH-5: the price of a Legendary Pack")
    price_chip: int = Field(default=25, ge=1, description="GH-5: the price of one chip")

    @field_validator("week_start")
    @classmethod
    def _week_start(cls, value: str) -> str:
        week_start_of(value)  # raises ValueError with the form
        return " ".join(value.lower().split())

    def days(self, count: int) -> timedelta:
        """``count`` of the Hall's days (GH-35): what GH-21, GH-32, GH-33 and GH-34 count in."""
        return count * self.day_length

    @field_validator("day_length")
    @classmethod
    def _day(cls, value: timedelta) -> timedelta:
        if value % timedelta(seconds=1):  # GH-35: election deadlines are named to the second
            raise ValueError("a day is a whole number of seconds")
        return value

    @field_validator("vote_grace")
    @classmethod
    def _grace(cls, value: timedelta) -> timedelta:
        if value < timedelta(0) or value > timedelta(days=1):
            raise ValueError("the grace for late reactions is from 0m to 1d")
        return value

    @field_validator("ruling_reminder")
    @classmethod
    def _reminder(cls, value: timedelta) -> timedelta:
        if value < timedelta(hours=1) or value > timedelta(days=7):
            raise ValueError("the Judge's reminder comes every 1h to 7d")
        return value

    @field_validator("reputable")
    @classmethod
    def _reputable(cls, value: list[str]) -> list[str]:
        if len({name.casefold() for name in value}) != len(value):
            raise ValueError("a reputable player is listed twice")
        return value

    def prices(self) -> dict[str, int]:
        """GH-5: the Croupier's prices in vertebrae, by ware."""
        return {"random card": self.price_random_card, "handy pack": self.price_handy_pack,
                "deck pack": self.price_deck_pack, "legendary pack": self.price_legendary_pack,
                "chip": self.price_chip}

    def is_reputable(self, name: str) -> bool:
        """GH-21, GH-34: whether ``name`` is on the reputable list (compared without case)."""
        return name.casefold() in {n.casefold() for n in self.reputable}

    @model_validator(mode="after")
    def _nobody_wins_by_joining(self) -> "HallSettings":
        # GH-1, GH-8: starting chips at the victory threshold would make every join a win.
        if self.starting_chips >= self.victory_chips:
            raise ValueError(
                f"starting_chips ({self.starting_chips}) must be below victory_chips "
                f"({self.victory_chips}), or the first member to join wins at once (GH-8)"
            )
        return self


def week_start_of(text: str) -> tuple[int, int, int]:
    """GH-34: a week's start written ``monday 00:00`` as (weekday 0-6, hour, minute)."""
    parts = text.lower().split()
    day = parts[0] if parts else ""
    matches = [i for i, name in enumerate(WEEKDAYS) if len(day) >= 3 and name.startswith(day)]
    try:
        hour, minute = (int(x) for x in parts[1].split(":")) if len(parts) == 2 else (-1, -1)
    except ValueError:
        hour = minute = -1
    if len(matches) != 1 or not (0 <= hour < 24 and 0 <= minute < 60):
        raise ValueError(f"{text!r}: write a weekday and a UTC time, like 'monday 00:00'")
    return matches[0], hour, minute


class Member(Record):
    """A player who joined the cycle, with its activity in the current phase (GH-6)."""

    name: str
    joined_phase: int
    acted: bool = False
    """GH-6: took an action in the current phase."""
    inactive: bool = False
    """GH-6: took no action in the previous phase (fixed for the whole phase)."""
    joined_at: UtcTime | None = None
    """When it joined (None: at the opening); GH-20 counts a reaction only from one who had joined."""
    gifted: str | None = None
    """GH-7: whom it gifted in the current phase (one gift per phase)."""


class Offer(Record):
    """GH-1: an open trade offer; it holds nothing back (the swap checks at acceptance)."""

    id: int
    offerer: str
    target: str
    gives: dict[str, int]
    """Ledger item -> amount the offerer hands over."""
    wants: dict[str, int]
    """Ledger item -> amount the target hands over."""
    made_at: UtcTime


class GiftBonus(Record):
    """GH-7: the giver's card owed if the inactive receiver acts later in the same phase."""

    giver: str
    receiver: str


class Happening(Record):
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


class Challenge(Record):
    """GH-19: an open duel challenge (it lapses at the end of its phase)."""

    id: int
    challenger: str
    challenged: list[str]
    accepted: list[str] = Field(default_factory=list)


class Mark(Record):
    """One player's reaction on a message or poll as it last stood (GH-20), at its ``sent_at``."""

    voter: str
    emoji: Literal["+", "-"]
    """``+`` for 👍, ``-`` for 👎."""
    present: bool
    at: UtcTime


class Proposal(Record):
    """GH-20 to GH-23: a proposal whose vote is open (it leaves the state when tallied)."""

    number: int
    author: str
    message: str
    """The inbox id of the message that is the proposal (what reactions and edits name)."""
    urgent: bool
    submitted_at: UtcTime
    phase: int
    """Standard: the phase whose end ends the vote (the one after submission). Urgent: 0."""
    ends_at: UtcTime
    """When the vote ends (a Standard one's: as scheduled, fixed when its phase ends)."""
    closed: bool = False
    """The vote has ended (the tally waits for late reactions: ``vote_grace``)."""
    text: str
    amendments: list[tuple[str, str]] = Field(default_factory=list)
    """GH-23: the ``set SETTING VALUE`` lines, in order (checked again at adoption)."""
    edited_at: UtcTime | None = None
    deleted_at: UtcTime | None = None
    marks: list[Mark] = Field(default_factory=list)


class Adopted(Record):
    """GH-22: one entry of the cycle's ruleset record (the whole text is in the history)."""

    number: int
    author: str
    title: str
    """The proposal's first line, at most 100 characters."""
    adopted_at: UtcTime


class Request(Record):
    """GH-31: a request for justice awaiting a ruling (or a new one, after an overturn)."""

    number: int
    author: str
    message: str
    asked_at: UtcTime
    text: str


class Ruling(Record):
    """GH-31: a ruling, kept while it may be overturned (GH-33) or its poll is open (GH-32)."""

    number: int
    request: int
    judge: str
    at: UtcTime
    text: str
    asked: Request
    """The request it answers (opened again when the ruling is overturned)."""
    overturned: str | None = None
    """Why it no longer stands ("by the Judge", "by confidence vote"), or None."""
    polled: bool = False
    """GH-32: a confidence vote on it was started (one per ruling)."""


class Poll(Record):
    """GH-32: an open confidence vote on a ruling (dealer's post ``poll-N`` is voted on)."""

    ruling: int
    started_by: str
    opened_at: UtcTime
    ends_at: UtcTime
    marks: list[Mark] = Field(default_factory=list)


class Candidacy(Record):
    """GH-34: a reputable player's candidacy for Judge in the current election week."""

    candidate: str
    message: str
    at: UtcTime
    week: UtcTime
    """The start of the election week it stands in."""
    marks: list[Mark] = Field(default_factory=list)


class ClosedVote(Record):
    """A vote tallied in the last 7 days: a reaction on it read now is answered (too late)."""

    target: str
    """The message id (a proposal, a candidacy) or post name (``poll-N``) voted on."""
    what: str
    ends_at: UtcTime
    tallied_at: UtcTime


class HallState(GameState):
    """One cycle of the Hall: only what is open or current, so the state does not grow with age."""

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
    proposals: list[Proposal] = Field(default_factory=list)
    """GH-20: the proposals whose vote is open."""
    next_proposal: int = 1
    adopted: list[Adopted] = Field(default_factory=list)
    """GH-22: the ruleset record (short entries; the texts are in the history)."""
    judge: str | None = None
    """GH-30: the Judge, or None."""
    removal: list[str] = Field(default_factory=list)
    """GH-30: who assented to removing the Judge in the current phase."""
    requests: list[Request] = Field(default_factory=list)
    """GH-31: requests awaiting a ruling."""
    next_request: int = 1
    rulings: list[Ruling] = Field(default_factory=list)
    """GH-32, GH-33: rulings at most 7 days old, or under an open confidence vote."""
    next_ruling: int = 1
    polls: list[Poll] = Field(default_factory=list)
    """GH-32: the open confidence votes."""
    candidacies: list[Candidacy] = Field(default_factory=list)
    """GH-34: the candidacies of the election weeks not yet tallied."""
    closed_votes: list[ClosedVote] = Field(default_factory=list)
    """Votes tallied in the last 7 days (a reaction read after its tally is told so)."""

    def member(self, name: str) -> Member | None:
        """The member called ``name`` (compared by ``player_key``)."""
        return find_named(self.members, name)

    def running_member(self, name: str) -> bool:
        """Whether ``name`` is a member while the cycle runs: who may send its commands."""
        return self.status == "running" and self.member(name) is not None

    def others(self, name: str) -> list[str]:
        """The members other than ``name``."""
        return [m.name for m in self.members if m.name != name]

    def begin_phase(self, number: int, at: datetime) -> None:
        """Make phase ``number``, beginning ``at``, the current one."""
        if number == 1:
            self.opened_at = at
        self.previous_phase_started_at = self.phase_started_at
        self.phase = number
        self.phase_started_at = at
