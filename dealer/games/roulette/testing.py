"""A tiny in-memory shell for Stationary Roulette: steps, deadlines, posts, ledger.

A fake shipped with the game (STYLE.md, "ship the fakes") for its tests and for anyone
who wants to play a game through in a REPL. It does what the real shell does around a pure
ruleset: a fresh context per step with the
balances and the pending deadlines carried forward, deadlines fired in time order before a
message sent after them, and everything a rejected step collected thrown away.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from dealer.games.base import Context, PostDraft, Rejected
from dealer.games.roulette import StationaryRoulette
from dealer.games.roulette.model import RouletteSettings, RouletteState, phase_name
from dealer.ledger import CHIPS, MINT, player
from dealer.render import render_post

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
SEED = "5eed" * 16
RULES = StationaryRoulette()


@dataclass
class Sent:
    """One post or reply a step produced, with its rendered body."""

    at: datetime
    draft: PostDraft
    body: str

    @property
    def kind(self) -> str:
        """The post's kind (``round_result``, ``confirmation`` ...)."""
        return self.draft.kind

    @property
    def to(self) -> str | None:
        """The recipient of a private reply; None for a public post."""
        return self.draft.recipient


@dataclass
class Shell:
    """Drive one game of Stationary Roulette through time."""

    state: RouletteState
    balances: dict[tuple[str, str], int]
    deadlines: dict[str, datetime] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    render: bool = True
    game_id: str = "g1"

    @classmethod
    def create(
        cls,
        chips: dict[str, int] | None = None,
        start: datetime = T0,
        now: datetime = T0,
        render: bool = True,
        **settings: Any,
    ) -> "Shell":
        """A new game between the players of ``chips`` (default alice and bob, 100 each)."""
        chips = chips if chips is not None else {"alice": 100, "bob": 100}
        balances = {(player(p), CHIPS): n for p, n in chips.items()}
        balances[(MINT, CHIPS)] = -sum(chips.values())  # so the ledger totals are zero
        ctx = new_context(now, balances, {})
        state = RULES.start(ctx, list(chips), RouletteSettings(**settings), start)
        shell = cls(state=state, balances=balances, render=render)
        shell.commit(ctx, state)
        return shell

    # --- steps -----------------------------------------------------------------------

    def context(self, now: datetime) -> Context:
        """A fresh context at ``now`` with the current balances and deadlines."""
        return new_context(now, self.balances, self.deadlines)

    def commit(self, ctx: Context, state: RouletteState) -> None:
        """Keep what a step produced, as the shell's transaction would."""
        self.state = RouletteState.model_validate(state.model_dump(mode="json"))
        self.balances = dict(ctx.ledger.balances)
        self.deadlines = dict(ctx.deadlines)
        json.dumps(ctx.events)  # events are stored as JSON
        self.events.extend(ctx.events)
        for draft in ctx.posts:
            body = render_post(draft, ctx.now, self.game_id) if self.render else ""
            self.sent.append(Sent(ctx.now, draft, body))

    def fire_due(self, until: datetime) -> None:
        """Fire every pending deadline due at or before ``until``, in time order."""
        while True:
            due = sorted((when, name) for name, when in self.deadlines.items() if when <= until)
            if not due:
                return
            when, name = due[0]
            self.fire(name)

    def fire(self, name: str) -> None:
        """Fire the pending deadline ``name`` at its due time."""
        when = self.deadlines.pop(name)
        ctx = self.context(when)
        self.commit(ctx, RULES.on_deadline(ctx, self.state, name))

    def send(self, actor: str, line: str, at: datetime, fire_first: bool = True) -> Rejected | None:
        """Deliver ``actor``'s line sent at ``at``; return the rejection, if any.

        With ``fire_first`` (the shell's normal order) every deadline due before the message
        fires first; without it the message is handled as one that arrived late.
        """
        if fire_first:
            self.fire_due(at)
        ctx = self.context(at)
        try:
            command = RULES.parse(line)
            state = RULES.handle(ctx, self.state, actor, command)
        except Rejected as exc:
            return exc  # the shell discards everything the context collected
        self.commit(ctx, state)
        return None

    def accept(self, actor: str, line: str, at: datetime) -> None:
        """Deliver a line that must be accepted."""
        rejected = self.send(actor, line, at)
        assert rejected is None, f"{line!r} rejected: {rejected.what} ({rejected.rule})"

    def during(self, hour: float = 1) -> datetime:
        """A time ``hour`` hours into the current phase."""
        return self.state.phase_starts[-1] + hours(hour)

    def play_phase(self, close: bool = True, **lines: str | list[str]) -> None:
        """Submit each player's lines (keyword = player) in the current phase, an hour
        apart and all accepted, then (with ``close``) fire deadlines through its end."""
        hour = 1.0
        for name, sent in lines.items():
            for line in [sent] if isinstance(sent, str) else sent:
                self.accept(name, line, self.during(hour))
                hour += 1
        if close and self.state.status == "running":
            self.fire_due(self.deadlines[phase_name(self.state.phase)])

    def run_to_end(self) -> None:
        """Fire deadlines until the game is over."""
        while self.state.status != "finished":
            assert self.deadlines, "a running game always has a pending deadline"
            self.fire_due(min(self.deadlines.values()))

    # --- looking -----------------------------------------------------------------------

    def chips(self, name: str) -> int:
        """Player ``name``'s chips."""
        return self.balances.get((player(name), CHIPS), 0)

    def house(self) -> int:
        """The house's chips."""
        return self.balances.get(("house", CHIPS), 0)

    def posts(self, kind: str | None = None) -> list[Sent]:
        """The public posts so far (of ``kind``)."""
        return [s for s in self.sent if s.to is None and (kind is None or s.kind == kind)]

    def replies(self, to: str, kind: str | None = None) -> list[Sent]:
        """The private replies to ``to`` so far (of ``kind``)."""
        return [s for s in self.sent if s.to == to and (kind is None or s.kind == kind)]


def new_context(now: datetime, balances: dict, deadlines: dict) -> Context:
    """A standalone context for game ``g1`` at ``now`` (fixed server seed ``SEED``)."""
    ctx = Context.standalone(
        now, game_id="g1", kind="roulette", channel="#stationary-roulette",
        balances=dict(balances), server_seed=SEED,
    )
    ctx.deadlines = dict(deadlines)
    return ctx


def hours(n: float) -> timedelta:
    """``n`` hours."""
    return timedelta(hours=n)
