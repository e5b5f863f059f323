"""What every ruleset implements, and the context the shell hands it.

A ruleset (:class:`Rules`) is pure: it reads the game's state, the command and a
:class:`Context`, and returns the new state. Everything else it wants done is collected on
the context, which the shell then commits in one transaction:

- ``ctx.ledger.move(...)`` stages currency and item transfers (never below zero), between
  the accounts of ``ctx.scope`` (``ctx.scope.player(name)``, ``ctx.scope.house`` ...): the
  global wallets, or a Hall cycle's own inventories (:meth:`Rules.ledger_scope`);
- ``ctx.post(...)`` / ``ctx.reply(...)`` queue public posts and private replies, rendered
  from ``templates/<kind>/<name>.txt``;
- ``ctx.set_deadline(name, when)`` / ``ctx.cancel_deadline(name)`` keep the game's clock;
- ``ctx.record(event)`` appends a typed event (:class:`~dealer.history.HistoryEvent`, one
  module of them per game: ``games/<kind>/events.py``) to the game's history;
- ``ctx.rng`` is the game's provably fair source (GH-40); nothing else may be random;
- ``ctx.open_child(kind, id, players, settings)`` opens a child game (a match inside this
  one) with its own deadlines, fair source, history and posts, its accounts in this game's
  scope; :meth:`Rules.on_child_finished` tells this game when it ends, and
  ``ctx.act_in_parent(actor)`` in the child's step runs :meth:`Rules.on_child_action`.

What players send reaches a ruleset as typed inbound events, each with its own id:
:class:`Message` (:meth:`Rules.on_message`; by default its lines are read one by one as
commands: :meth:`Rules.parse`, then :meth:`Rules.handle`), and :class:`Edit`,
:class:`Deletion` and :class:`Reaction`, which name the message they target
(:meth:`Rules.on_edit`, :meth:`Rules.on_delete`, :meth:`Rules.on_reaction`; ignored by
default). A game owns its main channel and the :attr:`Rules.channels` its ruleset declares.

A rule that refuses a command raises :class:`Rejected`; the shell then discards everything
the context collected and answers the player privately with the reason.

The state a rule receives belongs to that one call: the shell builds it afresh from the
stored JSON for every step and throws it away when the step is refused, so a rule may
change it in place and return it (no defensive deep copy on the hot path).
"""

from __future__ import annotations

import re
from functools import lru_cache
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer, ValidationInfo

from dealer.clock import as_utc, parse_duration
from dealer.fairness import FairSource
from dealer.games.commands import Commands
from dealer.games.rejection import Rejected  # a ruleset imports it with the rest of its interface
from dealer.history import HistoryEvent
from dealer.ledger import GLOBAL, Ledger, Scope


DURATION_FORMS = "24h, 90m, 1h30m or 2d"
"""How a duration is written; quoted in every error about one."""

STORED: dict[str, Any] = {"stored": True}
"""Validation context for JSON the store wrote (see :meth:`GameState.from_stored`)."""

_BARE_NUMBER = re.compile(r"[+-]?\d+(\.\d*)?")


def is_bare_number(text: str) -> bool:
    """Whether ``text`` is a number without a unit (``2``, ``1.5``)."""
    return _BARE_NUMBER.fullmatch(text.strip()) is not None


@lru_cache(maxsize=256)
def setting_duration(text: str) -> timedelta:
    """A duration a user wrote in a setting: ``24h``, ``90m``, ``1h30m``, ``2d``.

    A bare number is refused, not read as seconds: ``--set round_length=2`` was never
    meant as a 2-second round. Cached: every step parses its game's settings again, and
    a few texts (``24h``, ``6h``) make nearly all of them.
    """
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
"""A setting written ``24h``, ``90m``, ``1h30m`` or ``2d``; a bare number is refused (in
the store's own JSON, read with :data:`STORED`, a number is seconds)."""

UtcTime = Annotated[datetime, BeforeValidator(lambda v: as_utc(v) if isinstance(v, datetime) else v)]
"""A UTC-aware datetime in a state model."""


class GameSettings(BaseModel):
    """Per-game settings (``dealer game new ... --set KEY=VALUE``); rulesets extend it.

    Each field's description starts with the rule it sets and a colon (``"SR-1: number of
    rounds"``); ``dealer game new KIND --help-settings`` lists them.
    """

    model_config = ConfigDict(extra="forbid")


class GameState(BaseModel):
    """A ruleset's state; stored as JSON between steps."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def from_stored(cls, data: Any) -> "GameState":
        """The state from the JSON the store holds, written by this or an older version:
        parsed, or its text (validated as pydantic parses it, without ``json.loads``)."""
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
    """Past this time the post is dropped, not sent (a reminder of a deadline that has
    passed by the time it could go out, e.g. after the daemon was down)."""
    ref: str | None = None
    """A name the rules give the post (a poll: ``poll-3``); a reaction on the post reaches
    the rules with it (:attr:`Reaction.target_ref`)."""
    mentions: tuple[str, ...] = ()
    """The players this post means to ping (whose turn it is, those a reminder is for): a
    platform with mentions notifies exactly these (their linked accounts), nobody else."""


@dataclass
class Summary:
    """What ``dealer game show`` and the shell need to know of a game's state."""

    status: str  # pending | running | finished
    players: list[str]
    scores: dict[str, int] | None = None
    winner: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] | None = None
    """The settings in force, when the rules may change them (a Hall's adopted proposals,
    GH-23); None: those the game was created with."""
    waiting: str | None = None
    """What an unfinished game with no pending deadline waits for, as its posts announced
    it (``dealer game show`` prints it); None when a deadline will move it on."""


@dataclass
class SealedCheck:
    """What checking a game's sealed submissions against its revealed seed found."""

    receipts: int = 0
    commitments: int = 0
    problems: list[str] = field(default_factory=list)


# -- inbound events: what reaches a ruleset ---------------------------------------------
# Every message a transport delivers becomes one of these, carrying its own id (what a
# later edit, deletion or reaction names as its target) and the sender's registered name.


@dataclass(frozen=True)
class Message:
    """A message: its inbox id, sender, channel (``pm`` or ``#name``), when it was sent,
    its whole body and its command lines (cleaned, one command each)."""

    id: str
    sender: str
    channel: str
    sent_at: datetime
    body: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Edit:
    """The message ``target`` (a player's message, by its inbox id) now reads ``body``."""

    id: str
    sender: str
    channel: str
    sent_at: datetime
    target: str
    body: str


@dataclass(frozen=True)
class Deletion:
    """The message ``target`` was deleted by ``sender``."""

    id: str
    sender: str
    channel: str
    sent_at: datetime
    target: str


@dataclass(frozen=True)
class Reaction:
    """``sender`` added (or, ``removed``, took back) ``emoji`` on the message ``target``: a
    player's message by its inbox id, or one of dealer's posts by its outbox id."""

    id: str
    sender: str
    channel: str
    sent_at: datetime
    target: str
    emoji: str
    removed: bool = False
    target_ref: str | None = None
    """When ``target`` is one of dealer's posts that the rules named (``ctx.post(...,
    ref=...)``): that name, e.g. ``poll-3``."""


InboundEvent = Message | Edit | Deletion | Reaction
"""Any inbound event a ruleset may be handed."""


class Ignored(Exception):
    """Raised by a rule that has nothing to do with an event (a reaction on a message that
    is no proposal): the shell records the event as ignored, with ``why``, and writes
    nothing."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


@dataclass
class ChildDraft:
    """A child game a step opens (:meth:`Context.open_child`); the shell creates it in the
    step's transaction."""

    kind: str
    game_id: str
    players: list[str]
    settings: dict[str, Any]
    start: datetime
    channel: str | None


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
    children: list[ChildDraft] = field(default_factory=list)
    parent_actions: list[str] = field(default_factory=list)
    """Players whose command in this (child) game counts as an action in its parent."""
    first_messages: dict[str, datetime] = field(default_factory=dict)
    """In a deadline step of a ruleset that asks (:meth:`Rules.message_window`): each
    sender's first text message to the game in the window, as the inbox holds it."""

    def post(
        self, kind: str, template: str, subject: str, *, stale_after: datetime | None = None,
        in_channel: str | None = None, ref: str | None = None,
        mentions: tuple[str, ...] | list[str] = (), **context: Any,
    ) -> None:
        """Queue a public post in the game's channel, or in ``in_channel`` (another one the game
        owns); dropped unsent after ``stale_after``; ``ref`` names it for the reactions that
        will target it (:attr:`Reaction.target_ref`); ``mentions``: the players it means to
        ping (a platform notifies exactly these)."""
        self.posts.append(PostDraft(kind, template, in_channel or self.channel, None, subject,
                                    context, stale_after, ref, tuple(mentions)))

    def reply(
        self, recipient: str, kind: str, template: str, subject: str, *,
        stale_after: datetime | None = None, **context: Any,
    ) -> None:
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

    def open_child(
        self,
        kind: str,
        game_id: str,
        players: list[str],
        settings: dict[str, Any] | None = None,
        *,
        start: datetime | None = None,
        channel: str | None = None,
    ) -> None:
        """Open a child game (a match inside this game) of ruleset ``kind``, committed with
        this step: its own deadlines, fair-source epoch, history and posts, its accounts in
        this game's ledger scope. It starts at ``start`` (default now) and posts in
        ``channel`` (default this game's channel). When it finishes, this game's
        :meth:`Rules.on_child_finished` runs."""
        self.children.append(ChildDraft(
            kind, game_id, list(players), dict(settings or {}), as_utc(start or self.now), channel,
        ))

    def act_in_parent(self, actor: str) -> None:
        """``actor``'s command in this child game is also an action in its parent (GH-6: a
        play in an Exoptosis match is a Hall action); the parent's
        :meth:`Rules.on_child_action` runs right after this step. Nothing happens for a game
        without a parent."""
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
    """Further channels a game of this ruleset owns beside its main one (the default
    channel, or ``dealer game new --channel``): messages in any of them are routed to it."""
    parent_kind: ClassVar[str | None] = None
    """The kind of game a game of this ruleset always lives in (an Exoptosis match in a
    Hall): created directly, it is made a child of such a game (``dealer game new``)."""
    open_to_all: ClassVar[bool] = False
    """True when a player not yet in the game may send it commands (join, sit, bet)."""

    @abstractmethod
    def start(
        self, ctx: Context, players: list[str], settings: GameSettings, start: datetime
    ) -> GameState:
        """Create the game: initial state, the first deadlines and the opening posts.

        ``start`` may lie in the future; the game is then ``pending`` until a deadline
        the ruleset sets for it fires.
        """

    commands: ClassVar[Commands]
    """The player commands, each declared once (:mod:`dealer.games.commands`): ``parse``,
    ``help`` and the shell's chatter detection derive from them."""

    def parse(self, line: str) -> Any:
        """Turn one cleaned command line into a command object, or raise :class:`Rejected`."""
        return self.commands.parse(line)

    def is_command_word(self, word: str) -> bool:
        """Whether a line starting with ``word`` is meant as a command of this game (in a
        public channel, any other line is chatter)."""
        return self.commands.is_command_word(word)

    def is_command_line(self, line: str) -> bool:
        """Whether a public line that did not parse is a command to refuse (else it is
        chatter, ignored): it starts with a command word and, for the words of ``strict``
        commands only, has the command's form (:meth:`Commands.is_command_line`)."""
        return self.commands.is_command_line(line)

    @abstractmethod
    def handle(self, ctx: Context, state: GameState, actor: str, command: Any) -> GameState:
        """Apply ``actor``'s command sent at ``ctx.now``; return the new state.

        A command sent before the current phase began was meant for a phase already
        closed and must be rejected as late.
        """

    @abstractmethod
    def on_deadline(self, ctx: Context, state: GameState, name: str) -> GameState:
        """The deadline ``name`` has come (``ctx.now`` is its due time)."""

    def help(self, state: GameState, actor: str) -> list[str]:
        """The commands ``actor`` may send now, each with an example and its rule id."""
        return self.commands.help(state, actor)

    @abstractmethod
    def summary(self, state: GameState) -> Summary:
        """Status, players, scores and winner."""

    def ledger_scope(
        self, game_id: str, state: GameState | None, parent_scope: str | None = None
    ) -> str | None:
        """The ledger scope of game ``game_id``'s accounts; None for the global wallets.

        A game whose inventories are its own (GH-1: a Hall cycle) returns its id. A child
        game (an Exoptosis match of a cycle) is given its parent's scope as
        ``parent_scope`` and returns it (this default), so that its pool and its players'
        cards live beside the cycle's inventories. ``state`` is None while the game is
        being created.
        """
        return parent_scope

    # -- inbound events (see :class:`Message`, :class:`Edit`, :class:`Deletion`,
    # :class:`Reaction`). A hook a ruleset does not override costs nothing: the shell
    # sees that and runs no step for it.

    def on_message(self, ctx: Context, state: GameState, message: Message) -> GameState | None:
        """A message sent to the game (in one of its channels, or chosen with ``game ID``).

        Return the new state to take the message whole (``this message is a proposal``:
        ``message.id`` may be kept in the state, for the edits and reactions that will
        name it), or None (this default) to have each of its lines read as a command
        (:meth:`parse`, then :meth:`handle`, one step per line). The sender may be anyone
        registered: a ruleset that is not open to all checks ``message.sender`` itself."""
        return None

    def takes_whole(self, channel: str) -> bool:
        """Whether :meth:`on_message` may take a message sent in ``channel`` (``pm`` for a
        PM with a ``game`` line); the shell offers it no other, so a message no rule takes
        whole costs no step. By default: any, when the ruleset overrides ``on_message``."""
        return True

    def on_edit(self, ctx: Context, state: GameState, edit: Edit) -> GameState:
        """A message of the game was edited; by default nothing happens (the shell records
        "ignored: no rule uses it"). Raise :class:`Ignored` for an edit that concerns no
        rule, :class:`Rejected` to refuse it (the sender is told why)."""
        raise Ignored("no rule uses it")

    def on_delete(self, ctx: Context, state: GameState, deletion: Deletion) -> GameState:
        """A message of the game was deleted; ignored by default (see :meth:`on_edit`)."""
        raise Ignored("no rule uses it")

    def on_reaction(self, ctx: Context, state: GameState, reaction: Reaction) -> GameState:
        """A reaction was added or removed on a message or post of the game; ignored by
        default (see :meth:`on_edit`)."""
        raise Ignored("no rule uses it")

    def message_window(self, deadline: str) -> datetime | None:
        """For a deadline that needs to know who wrote to the game when (GH-34's tie-break):
        the start of the window; the shell then reads, from the inbox, each sender's first
        text message to the game (or its matches) from then to the deadline's due time, and
        hands them to :meth:`on_deadline` as ``ctx.first_messages`` (kept in the step's
        input, so a replay sees the same). None (this default): nothing is read."""
        return None

    def on_child_finished(
        self, ctx: Context, state: GameState, child_id: str, summary: Summary
    ) -> GameState:
        """The child game ``child_id`` (opened with :meth:`Context.open_child`) has finished
        with ``summary``. It runs as a step of this game right after the child's finishing
        step, in the same transaction: rewards handed out here land with the match's end
        or not at all. By default nothing happens."""
        return state

    def on_child_action(
        self, ctx: Context, state: GameState, child_id: str, actor: str
    ) -> GameState:
        """``actor`` took an action in the child game ``child_id`` (see
        :meth:`Context.act_in_parent`); it runs as a step of this game right after the
        child's, in the same transaction. By default nothing happens."""
        return state

    def on_parent_finished(
        self, ctx: Context, state: GameState, parent_id: str, winner: str | None
    ) -> GameState:
        """This child game's parent ``parent_id`` finished (``winner`` won it, or None): a
        match does not outlive its Hall cycle (GH-8). It runs as a step of this game right
        after the parent's finishing step, in the same transaction, only while this game
        is unfinished. By default nothing happens."""
        return state

    def grant(self, ctx: Context, state: GameState, name: str, item: str, amount: int) -> GameState:
        """``dealer grant NAME ITEM N --game ID``: an admin issues ``amount`` of ``item`` from
        the mint into ``name``'s inventory in this game's scope; raise :class:`Rejected` if
        the game cannot take it. Only games with a scope of their own accept grants."""
        raise Rejected(f"{self.title} keeps no inventories of its own; grant without --game")

    def involves(self, state: GameState, actor: str) -> bool:
        """Whether ``actor`` takes part in the game (routes PMs without a ``game`` line)."""
        return actor in self.summary(state).players

    record_events: tuple[str, ...] = ()
    """The prefixes of the event types :meth:`record_view` and :meth:`fairness_record` read
    (``()``: every event). ``dealer game show`` and the status page read only those, so a
    long game's page does not read its whole history."""

    def record_view(
        self, events: list[tuple[str, dict[str, Any]]], summary: Summary
    ) -> dict[str, Any]:
        """Further keys of ``dealer game show`` read from the game's events and summary (a
        Hall's proposals, adopted ones and rulings); none by default."""
        return {}

    def fairness_record(self, events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """The full values behind the hashes the game's posts shorten, read from its events
        (``dealer game show``); a game whose posts shorten none has none."""
        return []

    def check_sealed(
        self, game_id: str, server_seed: str, events: list[tuple[str, dict[str, Any]]]
    ) -> SealedCheck:
        """Check the game's sealed submissions (receipts, commitments) against its revealed
        server seed (``dealer verify``); a game that seals nothing has nothing to check."""
        return SealedCheck()
