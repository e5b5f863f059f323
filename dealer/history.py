"""A game's history: typed events (each a frozen model named by its ``type``) and the step
inputs a game is replayed from (docs/HISTORY.md). Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from dealer.clock import as_utc

Time = Annotated[datetime, AfterValidator(as_utc)]
"""A UTC time in an event; JSON keeps it to the microsecond (``2026-12-01T10:00:00Z``)."""


class Record(BaseModel):
    """A part of a game's stored state: its fields exactly, nothing else."""

    model_config = ConfigDict(extra="forbid")


class FrozenRecord(BaseModel):
    """A part of a history event: its fields exactly, never changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class UnknownEvent(LookupError):
    """A stored event whose type no game (nor the shell) declares."""


_TYPES: dict[tuple[str | None, str], type["HistoryEvent"]] = {}


class HistoryEvent(BaseModel):
    """One entry of a game's history. Subclasses set ``type`` (and ``game`` for a ruleset)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    type: ClassVar[str]
    """The name stored with the event (``round.resolved``)."""
    ruleset: ClassVar[str | None] = None
    """The kind of game (the ruleset) that declares it; None for the shell's own events."""
    optional: ClassVar[tuple[str, ...]] = ()
    """Fields left out of the stored data when None."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        name = cls.__dict__.get("type")
        if name is None:
            return  # a base class of a game's events, not an event
        key = (cls.ruleset, name)
        if cls.ruleset is not None and (None, name) in _TYPES:
            # A game's event may not hide one of the shell's (a replay reads the shell's).
            raise TypeError(f"{cls.__qualname__} of {cls.ruleset} takes the name {name!r}, "
                            "which is the shell's")
        known = _TYPES.get(key)
        if known is not None and known.__qualname__ != cls.__qualname__:
            raise TypeError(f"two events are called {name!r} in {cls.ruleset or 'the shell'}: "
                            f"{known.__qualname__} and {cls.__qualname__}")
        _TYPES[key] = cls

    def data(self) -> dict[str, Any]:
        """The fields as stored (JSON), without an ``optional`` one that is None."""
        left_out = {name for name in self.optional if getattr(self, name) is None}
        return self.model_dump(mode="json", by_alias=True, exclude=left_out or None)

    def stored(self) -> tuple[str, dict[str, Any]]:
        """``(type, data)``: the row the store keeps."""
        return self.type, self.data()


def event_class(kind: str, type_: str) -> type[HistoryEvent]:
    """The class of event ``type_`` in a game of ``kind`` (its own events, then the shell's)."""
    found = _TYPES.get((kind, type_)) or _TYPES.get((None, type_))
    if found is None:
        raise UnknownEvent(f"no event {type_!r} is declared for {kind} games")
    return found


def load_event(kind: str, type_: str, data: dict[str, Any]) -> HistoryEvent:
    """A stored event read back into its class (raises ValidationError on a wrong shape)."""
    return event_class(kind, type_).model_validate(data)


# --- step inputs -------------------------------------------------------------------------


Balances = dict[str, dict[str, int]]
"""``{account: {item: amount}}``."""


class StepInput(HistoryEvent):
    """What started a step, with the balances and fair-source position it read (for the replay)."""

    balances: Balances = Field(default_factory=dict)
    epoch: int = 0
    counter: int = 0


class GameCreated(StepInput):
    """``dealer game new``: the players named, the settings in force and the start."""

    type: ClassVar[str] = "game.create"
    players: list[str]
    settings: dict[str, Any]
    start: Time


class CommandSent(StepInput):
    """A command line of a player's message that the rules accepted."""

    type: ClassVar[str] = "command"
    actor: str
    line: str


class DeadlineFired(StepInput):
    """A deadline came; the step runs at its due time."""

    type: ClassVar[str] = "deadline.fired"
    deadline: str
    first_messages: dict[str, Time] | None = None
    """Each sender's first text message in a deadline's window (``Rules.message_window``);
    stored only when the step read them."""
    optional: ClassVar[tuple[str, ...]] = ("first_messages",)


class ClientSeedAdded(StepInput):
    """GH-40: a player's client seed, mixed into every later draw of the current epoch."""

    type: ClassVar[str] = "seed.client"
    player: str
    seed: str


class MessageTaken(StepInput):
    """A whole message the rules took (``Rules.on_message``: a proposal, a candidacy)."""

    type: ClassVar[str] = "message"
    id: str
    sender: str
    channel: str
    sent_at: Time
    body: str
    lines: list[str]


class EditSent(StepInput):
    """A player edited a message of the game (``Rules.on_edit``)."""

    type: ClassVar[str] = "edit"
    id: str
    sender: str
    channel: str
    sent_at: Time
    target: str
    body: str


class DeletionSent(StepInput):
    """A player deleted a message of the game (``Rules.on_delete``)."""

    type: ClassVar[str] = "deletion"
    id: str
    sender: str
    channel: str
    sent_at: Time
    target: str


class ReactionSent(StepInput):
    """A player added (or, ``removed``, took back) a reaction on a message or post of the game."""

    type: ClassVar[str] = "reaction"
    id: str
    sender: str
    channel: str
    sent_at: Time
    target: str
    emoji: str
    removed: bool = False
    target_ref: str | None = None
    """The rules' name of the post targeted (a poll's ``ref``), so a replay hands them the same;
    stored only when the target is a named post."""
    optional: ClassVar[tuple[str, ...]] = ("target_ref",)


class ChildFinished(StepInput):
    """A child game (a match) finished with this summary (``Rules.on_child_finished``)."""

    type: ClassVar[str] = "child.finished"
    game: str
    status: str
    players: list[str]
    scores: dict[str, Any] | None = None
    winner: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class ChildActed(StepInput):
    """``player`` acted in the child game ``game`` (GH-6, ``Rules.on_child_action``)."""

    type: ClassVar[str] = "child.acted"
    game: str
    player: str


class ParentFinished(StepInput):
    """The parent game (a match's Hall cycle) finished (GH-8): ``Rules.on_parent_finished``."""

    type: ClassVar[str] = "parent.finished"
    game: str
    winner: str | None = None


class ItemGranted(StepInput):
    """``dealer grant NAME ITEM N --game ID`` into a game that keeps its own inventories (GH-1)."""

    type: ClassVar[str] = "grant"
    player: str
    item: str
    amount: int


STEP_INPUTS: tuple[type[StepInput], ...] = (
    GameCreated, CommandSent, DeadlineFired, ClientSeedAdded, ItemGranted, MessageTaken,
    EditSent, DeletionSent, ReactionSent, ChildFinished, ChildActed, ParentFinished,
)
_STEP_CONTEXT = frozenset(StepInput.model_fields)
_INPUT_TYPES = frozenset(cls.type for cls in STEP_INPUTS)


def shown(type_: str, data: dict[str, Any]) -> dict[str, Any]:
    """An event's fields as a person reads them: a step input without its replay data."""
    if type_ not in _INPUT_TYPES:
        return data
    return {key: value for key, value in data.items() if key not in _STEP_CONTEXT}


# --- what the shell records of a step ---------------------------------------------------


class DeadlineSet(HistoryEvent):
    """A new pending deadline."""

    type: ClassVar[str] = "deadline.set"
    deadline: str
    due_at: Time


class DeadlineMoved(HistoryEvent):
    """A pending deadline the rules moved."""

    type: ClassVar[str] = "deadline.moved"
    deadline: str
    due_at: Time


class DeadlineCancelled(HistoryEvent):
    """A pending deadline the rules dropped."""

    type: ClassVar[str] = "deadline.cancelled"
    deadline: str


class DrawRecord(FrozenRecord):
    """One draw of the fair source, with its counter (GH-40)."""

    epoch: int
    counter: int
    n: int
    result: int
    purpose: str


class FairDraws(HistoryEvent):
    """GH-40: the step's draws, each recomputable once its epoch's seed is revealed."""

    type: ClassVar[str] = "fair.draws"
    draws: list[DrawRecord]


class SeedRevealed(HistoryEvent):
    """GH-40: an epoch ended and its server seed is public."""

    type: ClassVar[str] = "seed.revealed"
    epoch: int
    server_seed: str


class SeedCommitted(HistoryEvent):
    """GH-40: a new epoch began; the commitment to its seed is public."""

    type: ClassVar[str] = "seed.committed"
    epoch: int
    commitment: str


class DeadlineShift(BaseModel):
    """One deadline an admin override moved."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    deadline: str
    from_: Time = Field(alias="from")
    to: Time


class ChildOpened(HistoryEvent):
    """The step opened a child game (a match); its own history begins with its creation."""

    type: ClassVar[str] = "child.opened"
    kind: str
    game_id: str
    players: list[str]
    settings: dict[str, Any]
    start: Time
    channel: str | None


class AdminOverride(HistoryEvent):
    """An admin's deadline override (``DEALER_DEADLINE_OVERRIDES``), applied outside steps."""

    type: ClassVar[str] = "admin.override"
    key: str
    value: str
    action: str
    deadlines: list[DeadlineShift] = Field(default_factory=list)
