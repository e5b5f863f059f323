"""Scripted players: what a player does (:class:`Act`), what it may read (:class:`GameView`),
how it behaves (:class:`Behaviour`, :class:`Temperament`), and :class:`ShellView`, which plays
them against a :class:`~dealer.testing.RulesShell` in memory.

A run casts players per game (:func:`cast`, keeping each object for the game's life: a player
remembers its votes and proposals), calls ``turn(view, rng)`` a few times per phase and delivers
the acts; an Exoptosis match a Hall opens gets a cast of its own (its ``child.opened`` players).
A player's draws are its own seeded ``random.Random`` (it is the player, not the game: the game's
draws go through the fair source)."""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Protocol

from dealer.games.base import Ignored, Rejected
from dealer.ledger import CHIPS
from dealer.records import NotTaken
from dealer.testing import RulesShell
from dealer.text import command_lines

KINDS = ("say", "edit", "delete", "react", "unreact")
EXPECTS = ("valid", "malformed", "refused", "any")


@dataclass(frozen=True)
class Act:
    """One thing a scripted player does now."""

    sender: str
    kind: str = "say"
    body: str = ""
    channel: str = "pm"
    """"pm", or a channel of the game (its Rules' channel names)."""
    game: str | None = None
    """The game meant (a PM names it when the player has several)."""
    key: str | None = None
    """say: a name later acts may use to edit/delete (or react to) this message."""
    ref: str | None = None
    """edit/delete: the key of an earlier say. react/unreact: a post's key (PostSeen.key), a
    say's key, or ``msg:ID``: another player's message that the game's state names by its
    inbox id ID (a Hall proposal's or candidacy's ``message``)."""
    emoji: str | None = None
    expect: str = "any"
    """What the player means the line to be: valid, malformed, refused, or any (figures only)."""

    def __post_init__(self) -> None:
        """Catch a mistyped act where it is written, not where it is delivered."""
        if self.kind not in KINDS:
            raise ValueError(f"unknown act kind {self.kind!r}")
        if self.expect not in EXPECTS:
            raise ValueError(f"unknown expectation {self.expect!r}")
        if self.kind in ("edit", "delete", "react", "unreact") and not self.ref:
            raise ValueError(f"a {self.kind} needs a ref")
        if self.kind in ("react", "unreact") and not self.emoji:
            raise ValueError(f"a {self.kind} needs an emoji")


@dataclass(frozen=True)
class PostSeen:
    """A public post of the game as a player sees it."""

    key: str
    """A stable key for reacting to this post (the runner's platform id)."""
    channel: str
    body: str
    ref: str | None = None
    """The rules' name for the post (``poll-3``) when it has one: a Hall poll is found by it."""


class GameView(Protocol):
    """What a player may read of one game (a run backs it by the store; tests by RulesShell)."""

    game_id: str
    kind: str
    now: datetime

    def state(self) -> Any:
        """The game's current state model (read only); None before it exists."""

    def balance(self, player: str, item: str) -> int:
        """What ``player`` holds of ``item`` in the game's scope."""

    def holdings(self, player: str) -> dict[str, int]:
        """Everything ``player`` holds in the game's scope, item -> amount (none at zero)."""

    def posts(self) -> list[PostSeen]:
        """The game's channel posts so far, oldest first."""

    def finished(self) -> bool:
        """Whether the game is over."""


class Behaviour(Protocol):
    """A scripted player: reads its view, decides what to do now. It remembers what it did
    (its votes, its proposals), so one object plays a player for the whole run."""

    name: str
    temperament: Temperament
    closing: bool
    """The run opens no more games: hasten this one's end where the player can."""

    def turn(self, view: GameView, rng: random.Random) -> list[Act]:
        """The acts to deliver now (possibly none)."""


@dataclass(frozen=True)
class Temperament:
    """How a player goes about it: how often it errs, whether it goes quiet, whether it hurries."""

    name: str
    malformed: float = 0.0
    """The share of its command lines that do not parse."""
    refused: float = 0.0
    """The share of its command lines that parse but break a rule."""
    silent_after: int | None = None
    """After this many turns it sends nothing more (and forfeits what needs it)."""
    simultaneous: bool = False
    """It writes in the same second as another player (the runner times it so)."""

    def slip(self, rng: random.Random) -> str:
        """What this line will be: valid, malformed or refused, by the temperament's shares."""
        draw = rng.random()
        if draw < self.malformed:
            return "malformed"
        if draw < self.malformed + self.refused:
            return "refused"
        return "valid"


DILIGENT = Temperament("diligent")
SLOPPY = Temperament("sloppy", malformed=0.2, refused=0.2)
SILENT = Temperament("silent", silent_after=3)
SIMULTANEOUS = Temperament("simultaneous", simultaneous=True)
TEMPERAMENTS = {t.name: t for t in (DILIGENT, SLOPPY, SILENT, SIMULTANEOUS)}

DEFAULT_MIX = (("diligent", 0.55), ("sloppy", 0.25), ("silent", 0.1), ("simultaneous", 0.1))
"""The share of each temperament in a cast when none is given."""


@dataclass
class Player:
    """What every scripted player shares: its name, temperament and count of turns."""

    name: str
    temperament: Temperament = DILIGENT
    turns: int = field(default=0, init=False)
    closing: bool = field(default=False, init=False)
    """Set by the run once it opens no more games: a player that can hasten its game's end
    does (a Hall member buys chips to win the cycle, GH-8, and starts no fight)."""

    def turn(self, view: GameView, rng: random.Random) -> list[Act]:
        """Count the turn; a silent player past its time does nothing, others :meth:`decide`."""
        self.turns += 1
        limit = self.temperament.silent_after
        if limit is not None and self.turns > limit:
            return []
        if view.finished():
            return []
        return self.decide(view, rng)

    def decide(self, view: GameView, rng: random.Random) -> list[Act]:
        """The acts of this turn (each game's players say what)."""
        raise NotImplementedError

    def say(self, view: GameView, body: str, expect: str = "any", **kw: Any) -> Act:
        """A message of this player to ``view``'s game."""
        return Act(sender=self.name, body=body, game=view.game_id, expect=expect, **kw)

    def line(
        self, view: GameView, rng: random.Random, valid: str,
        malformed: Callable[[], str | None] | str | None = None,
        refused: Callable[[], str | None] | str | None = None, **kw: Any,
    ) -> Act:
        """A command line: ``valid``, or (by the temperament) a malformed or refused version.

        A slip with no version offered falls back to the valid line."""
        slip = self.temperament.slip(rng)
        versions = {"malformed": malformed, "refused": refused}
        other = versions.get(slip)
        other = other() if callable(other) else other
        if other is not None:
            return self.say(view, other, expect=slip, **kw)
        return self.say(view, valid, expect="valid", **kw)


def garble(line: str, rng: random.Random) -> str:
    """A line that does not parse, its command word kept (else a public channel reads chatter)."""
    words = line.split()
    if len(words) > 1 and rng.random() < 0.5:
        return " ".join(words[:1] + ["%%" + words[1] + "??"] + words[2:])
    return (words[0] if words else "bet") + " @@@ ###"


# --- the cast ---------------------------------------------------------------------------

MODULES = {"roulette": "roulette", "races": "races", "hall": "hall", "exoptosis": "exoptosis"}
"""The module of this package holding each game's players: ``player(name, temperament)``."""


def temperaments(
    names: Iterable[str], rng: random.Random,
    mix: Iterable[tuple[str, float]] = DEFAULT_MIX,
) -> dict[str, Temperament]:
    """A temperament for each name, drawn by ``mix`` (name, share); the first name is diligent,
    so a game always has one player who plays it through."""
    mix = list(mix)
    labels = [label for label, _ in mix]
    weights = [share for _, share in mix]
    out: dict[str, Temperament] = {}
    for i, name in enumerate(names):
        label = "diligent" if i == 0 else rng.choices(labels, weights)[0]
        out[name] = TEMPERAMENTS[label]
    return out


def cast(
    kind: str, names: list[str], rng: random.Random,
    temper: dict[str, Temperament] | Iterable[tuple[str, float]] | None = None,
) -> dict[str, Behaviour]:
    """A scripted player of game ``kind`` for each of ``names``; ``temper`` gives each one's
    temperament, or the mix to draw them from (default :data:`DEFAULT_MIX`)."""
    module = importlib.import_module(f"{__package__}.{MODULES[kind]}")
    if not isinstance(temper, dict):
        temper = temperaments(names, rng, temper if temper is not None else DEFAULT_MIX)
    return {name: module.player(name, temper.get(name, DILIGENT)) for name in names}


# --- playing in memory ------------------------------------------------------------------

@dataclass
class ShellView:
    """A :class:`GameView` on a :class:`RulesShell`, which also delivers acts to it, for tests.

    ``outcomes`` keeps, per delivered act, what became of it: valid, malformed (the line did
    not parse), refused (it parsed and broke a rule), ignored, or chatter."""

    shell: RulesShell
    now: datetime
    outcomes: list[tuple[Act, str]] = field(default_factory=list)
    said: dict[str, str] = field(default_factory=dict)
    """A say's key -> the message id the shell knows it by."""
    _count: int = 0

    @property
    def game_id(self) -> str:
        """The shell's game."""
        return self.shell.game_id

    @property
    def kind(self) -> str:
        """The ruleset's kind."""
        return self.shell.rules.kind

    def state(self) -> Any:
        """The game's state (None before it is opened)."""
        return self.shell.state

    def balance(self, player: str, item: str = CHIPS) -> int:
        """What ``player`` holds of ``item`` in the game's scope."""
        return self.shell.has(player, item)

    def holdings(self, player: str) -> dict[str, int]:
        """Everything ``player`` holds in the game's scope."""
        account = self.shell.account(player)
        return {item: n for (acct, item), n in self.shell.balances.items()
                if acct == account and n}

    def posts(self) -> list[PostSeen]:
        """The public posts, keyed by their place in the shell's list."""
        return [PostSeen(key=f"post-{i}", channel=s.draft.channel, body=s.body, ref=s.draft.ref)
                for i, s in enumerate(self.shell.sent) if s.to is None]

    def finished(self) -> bool:
        """Whether the shell's game is over."""
        return self.shell.state is not None and self.shell.summary().status == "finished"

    def advance(self, at: datetime) -> None:
        """Move the view's clock to ``at``, firing the deadlines due by then."""
        self.shell.fire_due(at)
        self.now = at

    def play(self, players: dict[str, Behaviour], rng: random.Random) -> list[tuple[Act, str]]:
        """One turn of each player (in name order), its acts delivered now; return the outcomes."""
        done: list[tuple[Act, str]] = []
        for name in sorted(players):
            for act in players[name].turn(self, rng):
                done.append((act, self.deliver(act)))
        return done

    def play_until(
        self, players: dict[str, Behaviour], rng: random.Random, every: timedelta,
        done: Callable[[], bool], turns: int = 1000,
    ) -> int:
        """Play a turn of everyone every ``every`` (deadlines firing between) until ``done()``;
        return the number of turns played, or raise AssertionError after ``turns``."""
        for played in range(turns):
            if done():
                return played
            self.play(players, rng)
            self.advance(self.now + every)
        if done():
            return turns
        raise AssertionError(f"not done after {turns} turns")

    def deliver(self, act: Act, at: datetime | None = None) -> str:
        """Hand ``act`` to the shell at ``at`` (default now); return what became of it."""
        at = at or self.now
        outcome = self._deliver(act, at)
        self.outcomes.append((act, outcome))
        return outcome

    def _deliver(self, act: Act, at: datetime) -> str:
        shell = self.shell
        self._count += 1
        try:
            if act.kind == "say":
                return self._say(act, at)
            if act.kind in ("react", "unreact"):
                target, ref = self._target(act.ref)
                shell.react(act.sender, target, act.emoji or "", at, ref=ref,
                            removed=act.kind == "unreact", id=f"r{self._count}")
            elif act.kind == "edit":
                shell.edit(act.sender, self.said.get(act.ref or "", act.ref or ""), act.body, at)
            else:
                shell.delete(act.sender, self.said.get(act.ref or "", act.ref or ""), at)
        except Rejected:
            return "refused"
        except Ignored:
            return "ignored"
        return "valid"

    def _target(self, key: str | None) -> tuple[str, str | None]:
        """The message id and post ref a reaction's ``key`` names."""
        if key in self.said:
            return self.said[key], None
        if key and key.startswith("msg:"):
            return key[4:], None
        for post in self.posts():
            if post.key == key:
                return key, post.ref
        return key or "", None

    def _say(self, act: Act, at: datetime) -> str:
        """A message: whole when the ruleset takes it so in its channel, else line by line."""
        shell = self.shell
        msg_id = f"m{self._count}"
        if act.key:
            self.said[act.key] = msg_id
        if act.channel != "pm" and act.channel in shell.rules.channels:
            try:
                shell.message(act.sender, act.body, at, act.channel, msg_id)
                return "valid"
            except NotTaken:
                pass
        outcome = "chatter"
        for line in command_lines(act.body):
            try:
                shell.rules.parse(line)
            except Rejected:
                if act.channel != "pm" and not shell.rules.is_command_line(line):
                    continue
                shell.wrote.append((act.sender, at))
                outcome = "malformed"
                continue
            try:
                shell.step(act.sender, line, at)
            except Rejected:
                outcome = "refused" if outcome != "malformed" else outcome
                continue
            if outcome == "chatter":
                outcome = "valid"
        return outcome


def shares(outcomes: Iterable[tuple[Act, str]]) -> dict[str, float]:
    """The share of each outcome among the command lines delivered (figures for a report)."""
    counts: dict[str, int] = {}
    total = 0
    for _, outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
        total += 1
    return {k: v / total for k, v in counts.items()} if total else {}
