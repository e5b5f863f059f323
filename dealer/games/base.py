"""What every ruleset implements, and the context the shell hands it.

A ruleset (:class:`Rules`) is pure: it reads the state, an inbound event and a
:class:`Context`, and returns the new state; what else it wants done (ledger moves, posts,
deadlines, history events, child games) it collects on the context, which the shell
commits in one transaction, or discards when the rule raises :class:`Rejected`.
``ctx.rng`` is the game's provably fair source (GH-40); nothing else may be random.
The state is built afresh for every step, so a rule may change it in place."""

from __future__ import annotations

import re
from functools import lru_cache
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator, BaseModel, BeforeValidator, ConfigDict, PlainSerializer, ValidationInfo,
)

from dealer.clock import as_utc, parse_duration
from dealer.fairness import FairSource
from dealer.games.commands import Commands
from dealer.games.rejection import Rejected  # a ruleset imports it with the rest of its interface
from dealer.history import (
    ChildOpened, DeletionSent, EditSent, HistoryEvent, MessageTaken, ReactionSent,
)
from dealer.ledger import GLOBAL, Ledger, Scope


DURATION_FORMS = "24h, 90m, 1h30m or 2d"
"""How a duration is written; quoted in every error about one."""

STORED: dict[str, Any] = {"stored": True}

_BARE_NUMBER = re.compile(r"[+-]?\d+(\.\d*)?")


def is_bare_number(text: str) -> bool:
    """Whether ``text`` is a number without a unit (``2``, ``1.5``)."""
    return _BARE_NUMBER.fullmatch(text.strip()) is not None


@lru_cache(maxsize=256)
def setting_duration(text: str) -> timedelta:
    """A setting's duration (``24h``); a bare number is refused; cached: every step reads settings."""
    if is_bare_number(text):
        raise ValueError(f"{text.strip()!r} has no unit: write a duration like {DURATION_FORMS}")
    return parse_duration(text)


def _duration(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str):
        return setting_duration(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Older versions stored durations as numbers of seconds; only the store's own JSON
        # may still say so, never a setting given by a user.
        if info.context and info.context.get("stored"):
            return timedelta(seconds=value)
        raise ValueError(f"{value!r} has no unit: write a duration like {DURATION_FORMS}")
    return value


def _format_duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


Duration = Annotated[timedelta, BeforeValidator(_duration), PlainSerializer(_format_duration)]
"""A setting written ``24h`` or ``90m``; in the store's own JSON (:data:`STORED`) a number is seconds."""


def _positive(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError("it must last longer than zero (write it like 24h or 90m)")
    return value


PositiveDuration = Annotated[Duration, AfterValidator(_positive)]
"""A :data:`Duration` longer than zero: a phase, a round, a window."""

UtcTime = Annotated[datetime, BeforeValidator(lambda v: as_utc(v) if isinstance(v, datetime) else v)]


class GameSettings(BaseModel):
    """Per-game settings; each field's description starts ``"SR-1: ..."``, for ``--help-settings``."""

    model_config = ConfigDict(extra="forbid")


class GameState(BaseModel):
    """A ruleset's state; stored as JSON between steps."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def from_stored(cls, data: Any) -> "GameState":
        """The state from the store's JSON, of this version or an older one (text parsed directly)."""
        if isinstance(data, str):
            return cls.model_validate_json(data, context=STORED)
        return cls.model_validate(data, context=STORED)


@dataclass
class PostDraft:
    """A post to render and queue: public (``recipient`` None) or a private reply."""

    kind: str
    template: str
    channel: str
    recipient: str | None
    subject: str
    context: dict[str, Any]
    stale_after: datetime | None = None
    """Past this time the post is dropped unsent (a reminder after the daemon was down)."""
    ref: str | None = None
    """The rules' name for the post (``poll-3``), which reactions on it carry (``target_ref``)."""
    mentions: tuple[str, ...] = ()
    """The players to ping (a platform with mentions notifies exactly these)."""


@dataclass
class Summary:
    """What ``dealer game show`` and the shell need to know of a game's state."""

    status: str  # pending | running | finished
    players: list[str]
    scores: dict[str, int] | None = None
    winner: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] | None = None
    """The settings in force when the rules may change them (GH-23); None: the game's own."""
    waiting: str | None = None
    """What a game with no pending deadline waits for (``dealer game show``)."""


@dataclass
class SealedCheck:
    """What checking a game's sealed submissions against its revealed seed found."""

    receipts: int = 0
    commitments: int = 0
    problems: list[str] = field(default_factory=list)


class Ignored(Exception):
    """A rule has nothing to do with an event: the shell records it ignored, with ``why``."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


@dataclass
class Context:
    """The world as a rule step sees it, and the effects it collects."""

    game_id: str
    kind: str
    channel: str
    now: datetime
    rng: FairSource
    ledger: Ledger
    deadlines: dict[str, datetime] = field(default_factory=dict)
    posts: list[PostDraft] = field(default_factory=list)
    events: list[HistoryEvent] = field(default_factory=list)
    deadline_changes: dict[str, datetime | None] = field(default_factory=dict)
    scope: Scope = GLOBAL
    """The ledger scope of the game's accounts (see :meth:`Rules.ledger_scope`)."""
    parent_id: str | None = None
    """The game this one is a match of (a child game), or None."""
    children: list[ChildOpened] = field(default_factory=list)
    """The child games the step opens, as its history records them."""
    parent_actions: list[str] = field(default_factory=list)
    """Players whose command in this (child) game counts as an action in its parent."""
    first_messages: dict[str, datetime] = field(default_factory=dict)
    """Each sender's first text message in the window of :meth:`Rules.message_window`."""

    def post(self, kind: str, template: str, subject: str, *, stale_after: datetime | None = None,
             in_channel: str | None = None, ref: str | None = None,
             mentions: tuple[str, ...] | list[str] = (), **context: Any) -> None:
        """A public post in the game's channel or ``in_channel``; ``ref`` names it for reactions."""
        self.posts.append(PostDraft(kind, template, in_channel or self.channel, None, subject,
                                    context, stale_after, ref, tuple(mentions)))

    def reply(self, recipient: str, kind: str, template: str, subject: str, *,
              stale_after: datetime | None = None, **context: Any) -> None:
        """Queue a private message to ``recipient`` (dropped unsent after ``stale_after``)."""
        self.posts.append(PostDraft(kind, template, "pm", recipient, subject, context, stale_after))

    def record(self, event: HistoryEvent) -> None:
        """Append a typed event (validated when it was made) to the game's history."""
        if not isinstance(event, HistoryEvent):
            raise TypeError(f"ctx.record takes a HistoryEvent, not {type(event).__name__}")
        self.events.append(event)

    def set_deadline(self, name: str, when: datetime) -> None:
        """Create or move the deadline ``name``."""
        when = as_utc(when)
        self.deadline_changes[name] = when
        self.deadlines[name] = when

    def cancel_deadline(self, name: str) -> None:
        """Drop the pending deadline ``name`` (no error if there is none)."""
        self.deadline_changes[name] = None
        self.deadlines.pop(name, None)

    def take_due(self, name: str) -> bool:
        """Whether ``name`` is due at this instant (then cancelled): a phase includes its start."""
        if self.deadlines.get(name) != self.now:
            return False
        self.cancel_deadline(name)
        return True

    def open_child(self, kind: str, game_id: str, players: list[str],
                   settings: dict[str, Any] | None = None, *, start: datetime | None = None,
                   channel: str | None = None) -> None:
        """Open a child game (a match): its own clock, fair source and history, in this scope."""
        self.children.append(ChildOpened(kind=kind, game_id=game_id, players=list(players),
                                         settings=dict(settings or {}), start=start or self.now,
                                         channel=channel))

    def act_in_parent(self, actor: str) -> None:
        """``actor``'s command in this child game is also an action in its parent (GH-6)."""
        if self.parent_id is not None and actor not in self.parent_actions:
            self.parent_actions.append(actor)


class Rules(ABC):
    """One ruleset. Subclasses set the class attributes and implement the methods."""

    kind: ClassVar[str]
    title: ClassVar[str]
    Settings: ClassVar[type[GameSettings]] = GameSettings
    State: ClassVar[type[GameState]]
    default_channel: ClassVar[str]
    channels: ClassVar[tuple[str, ...]] = ()
    """Further channels a game owns beside its main one: their messages are routed to it."""
    parent_kind: ClassVar[str | None] = None
    """The kind of game a game of this ruleset always lives in (an Exoptosis match in a Hall)."""
    open_to_all: ClassVar[bool] = False
    """True when a player not yet in the game may send it commands (join, sit, bet)."""

    def settings_of(self, settings: GameSettings | dict[str, Any] | None) -> Any:
        """This ruleset's settings from its model, another settings model or a mapping."""
        if isinstance(settings, self.Settings):
            return settings
        if isinstance(settings, BaseModel):
            settings = settings.model_dump()
        return self.Settings.model_validate(settings or {})

    @abstractmethod
    def start(self, ctx: Context, players: list[str], settings: GameSettings,
              start: datetime) -> GameState:
        """Create the game: its state, first deadlines and opening posts (pending until ``start``)."""

    commands: ClassVar[Commands]
    """The player commands, each declared once (:mod:`dealer.games.commands`)."""

    def parse(self, line: str) -> Any:
        """Turn one cleaned command line into a command object, or raise :class:`Rejected`."""
        return self.commands.parse(line)

    def is_command_word(self, word: str) -> bool:
        """Whether a line starting with ``word`` is meant as a command (else it is chatter)."""
        return self.commands.is_command_word(word)

    def is_command_line(self, line: str) -> bool:
        """Whether a public line that did not parse is a command to refuse (else chatter)."""
        return self.commands.is_command_line(line)

    @abstractmethod
    def handle(self, ctx: Context, state: GameState, actor: str, command: Any) -> GameState:
        """Apply ``actor``'s command sent at ``ctx.now`` (one sent before the phase began is late)."""

    @abstractmethod
    def on_deadline(self, ctx: Context, state: GameState, name: str) -> GameState:
        """The deadline ``name`` has come (``ctx.now`` is its due time)."""

    def help(self, state: GameState, actor: str) -> list[str]:
        """The commands ``actor`` may send now, each with an example and its rule id."""
        return self.commands.help(state, actor)

    @abstractmethod
    def summary(self, state: GameState) -> Summary:
        """Status, players, scores and winner."""

    def ledger_scope(self, game_id: str, state: GameState | None,
                     parent_scope: str | None = None) -> str | None:
        """The ledger scope of the game's accounts (None: the global wallets; GH-1: a cycle's id)."""
        return parent_scope

    # -- inbound events, as the history records them (dealer.history: each carries its own
    # id, which a later edit, deletion or reaction names as its target, and the sender's
    # registered name). A hook a ruleset does not override costs nothing: the shell sees
    # that and runs no step for it.

    def on_message(self, ctx: Context, state: GameState, message: MessageTaken) -> GameState | None:
        """A message to the game: the new state to take it whole, or None to read it line by line."""
        return None

    def takes_whole(self, channel: str) -> bool:
        """Whether :meth:`on_message` may take a message sent in ``channel``: no step otherwise."""
        return True

    def on_edit(self, ctx: Context, state: GameState, edit: EditSent) -> GameState:
        """A message of the game was edited; ignored by default."""
        raise Ignored("no rule uses it")

    def on_delete(self, ctx: Context, state: GameState, deletion: DeletionSent) -> GameState:
        """A message of the game was deleted; ignored by default (see :meth:`on_edit`)."""
        raise Ignored("no rule uses it")

    def on_reaction(self, ctx: Context, state: GameState, reaction: ReactionSent) -> GameState:
        """A reaction was added or removed on a message or post of the game; ignored by default."""
        raise Ignored("no rule uses it")

    def message_window(self, deadline: str) -> datetime | None:
        """The start of the window whose first messages a deadline needs (GH-34), or None."""
        return None

    def on_child_finished(self, ctx: Context, state: GameState, child_id: str,
                          summary: Summary) -> GameState:
        """The child game ``child_id`` finished: a step of this game in the same transaction."""
        return state

    def on_child_action(self, ctx: Context, state: GameState, child_id: str,
                        actor: str) -> GameState:
        """``actor`` acted in the child game ``child_id`` (:meth:`Context.act_in_parent`)."""
        return state

    def on_parent_finished(self, ctx: Context, state: GameState, parent_id: str,
                           winner: str | None) -> GameState:
        """The parent game finished: a match does not outlive its Hall cycle (GH-8)."""
        return state

    def grant(self, ctx: Context, state: GameState, name: str, item: str, amount: int) -> GameState:
        """``dealer grant NAME ITEM N --game ID``: only a game with a scope of its own accepts it."""
        raise Rejected(f"{self.title} keeps no inventories of its own; grant without --game")

    def involves(self, state: GameState, actor: str) -> bool:
        """Whether ``actor`` takes part in the game (routes PMs without a ``game`` line)."""
        return actor in self.summary(state).players

    record_events: tuple[str, ...] = ()
    """The prefixes of the event types the views read for this game (``()``: every event)."""

    def record_view(self, events: list[tuple[str, dict[str, Any]]],
                    summary: Summary) -> dict[str, Any]:
        """Further keys of ``dealer game show`` read from the game's events and summary."""
        return {}

    def fairness_record(self, events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """The full values behind the hashes the game's posts shorten (``dealer game show``)."""
        return []

    def check_sealed(self, game_id: str, server_seed: str,
                     events: list[tuple[str, dict[str, Any]]]) -> SealedCheck:
        """Check the game's sealed submissions against its revealed seed (``dealer verify``)."""
        return SealedCheck()
