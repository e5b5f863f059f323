"""``dealer replay ID``: rebuild a game from its history through the shell's pure functions
and compare every event, the state, deadlines and fair source with the store (docs/HISTORY.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from dealer.clock import iso
from dealer.fairness import FairSource
from dealer.games import rules_for
from dealer.games.base import Context, Rejected
from dealer.history import (
    AdminOverride,
    DeadlineFired,
    GameCreated,
    HistoryEvent,
    StepInput,
    UnknownEvent,
    load_event,
    shown,
)
from dealer.ledger import Ledger, Scope
from dealer.records import FairMark, apply_deadlines, collect, perform, revealed_after
from dealer.views import ledger_scope
from dealer.store.models import Deadline, Event, Game, Seed


@dataclass
class StoredGame:
    """Everything the replay compares, as the store holds it: the game's row, its seeds by
    epoch, its pending deadlines and its history."""

    row: Game
    parent_scope: str | None
    """The ledger scope of the parent game (a child game's accounts live in it)."""
    seeds: dict[int, Seed]
    deadlines: dict[str, datetime]
    history: list[Event]


@dataclass
class ReplayReport:
    """What the replay found: the steps replayed, and the first difference (None: all match)."""

    game_id: str
    steps: int = 0
    difference: str | None = None

    @property
    def ok(self) -> bool:
        """True when the replay rebuilt exactly what the store holds."""
        return self.difference is None


def load_game(session: Session, game_id: str) -> StoredGame:
    """Read a game's row, seeds, pending deadlines and history; LookupError if none."""
    game = session.get(Game, game_id)
    if game is None:
        raise LookupError(f"there is no game {game_id!r}")
    seeds = {s.epoch: s for s in session.scalars(select(Seed).where(Seed.game_id == game_id))}
    deadlines = {
        d.name: d.due_at
        for d in session.scalars(
            select(Deadline).where(Deadline.game_id == game_id, Deadline.status == "pending")
        )
    }
    history = list(session.scalars(select(Event).where(Event.game_id == game_id).order_by(Event.seq)))
    parent_scope = ledger_scope(session, game.parent_id) if game.parent_id else None
    return StoredGame(game, parent_scope, seeds, deadlines, history)


def replay_game(session: Session, game_id: str) -> ReplayReport:
    """Replay the stored game ``game_id`` and compare it with the store."""
    return replay(load_game(session, game_id))


class _Mismatch(Exception):
    """The first difference; ends the replay (what follows it cannot be trusted)."""


def replay(game: StoredGame) -> ReplayReport:
    """Rebuild ``game`` from its history and compare the result with what it holds."""
    report = ReplayReport(game.row.id)
    try:
        _Replay(game, report).run()
    except _Mismatch as exc:
        report.difference = str(exc)
    return report


class _Replay:
    """The replay of one game: the state, deadlines and fair source, carried step by step."""

    def __init__(self, game: StoredGame, report: ReplayReport) -> None:
        self.game = game
        self.report = report
        self.rules = rules_for(game.row.kind)
        self.state: dict[str, Any] | None = None
        self.status: str | None = None
        self.pending: dict[str, datetime] = {}
        if 0 not in game.seeds:
            raise _Mismatch("the game has no fair source (no seed of epoch 0)")
        self.rng = FairSource(game.seeds[0].server_seed, seed_factory=self._next_seed)
        self.revealed = False

    def _next_seed(self) -> str:
        """The server seed of the epoch after the current one, as the store keeps it."""
        following = self.game.seeds.get(self.rng.epoch + 1)
        if following is None:
            raise _Mismatch(f"the fair source rotated to epoch {self.rng.epoch + 1}, "
                            "which the store has no seed for")
        return following.server_seed

    def run(self) -> None:
        history = self.game.history
        if not history:
            raise _Mismatch("the game has no history")
        index = 0
        while index < len(history):
            entry = history[index]
            event = self._load(entry)
            if isinstance(event, AdminOverride):
                for shift in event.deadlines:
                    if shift.deadline in self.pending:
                        self.pending[shift.deadline] = shift.to
                index += 1
                continue
            if not isinstance(event, StepInput):
                raise _Mismatch(
                    f"event {entry.seq} ({entry.type}) belongs to no step: the history has no "
                    "step input before it (it was recorded before histories were replayable, "
                    "or rows are missing)"
                )
            end = index + 1
            while end < len(history) and not self._starts_step_or_admin(history[end]):
                end += 1
            self._step(entry, event, history[index:end])
            index = end
        self._compare_end()

    def _load(self, entry: Event) -> HistoryEvent:
        try:
            return load_event(self.game.row.kind, entry.type, entry.data)
        except UnknownEvent as exc:
            raise _Mismatch(f"event {entry.seq}: {exc}") from None
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem["loc"]) or "data"
            raise _Mismatch(f"event {entry.seq} ({entry.type}) is not a valid {entry.type}: "
                            f"{where}: {problem['msg']}") from None

    def _starts_step_or_admin(self, entry: Event) -> bool:
        event = self._load(entry)
        return isinstance(event, (StepInput, AdminOverride))

    def _step(self, entry: Event, step: StepInput, stored: list[Event]) -> None:
        number = self.report.steps + 1
        label = f"step {number} at {iso(entry.at)} (event {entry.seq}: {_describe(step)})"
        if (self.state is None) != isinstance(step, GameCreated):
            raise _Mismatch(f"{label}: " + ("the history does not begin with the game's creation"
                                             if self.state is None else "a second creation"))
        if (step.epoch, step.counter) != (self.rng.epoch, self.rng.counter):
            raise _Mismatch(
                f"{label}: the step began with the fair source at epoch {step.epoch}, counter "
                f"{step.counter}; the replay is at epoch {self.rng.epoch}, counter "
                f"{self.rng.counter}"
            )
        if isinstance(step, DeadlineFired):
            due = self.pending.pop(step.deadline, None)
            if due != entry.at:  # a deadline fires at its due time
                raise _Mismatch(f"{label}: deadline {step.deadline!r} fired, but the history "
                                f"has it {'due at ' + iso(due) if due else 'not pending'}")
        rng = FairSource(self.rng.server_seed, client_seeds=list(self.rng.client_seeds),
                         counter=self.rng.counter, epoch=self.rng.epoch,
                         seed_factory=self._next_seed)
        self.rng = rng  # the seed factory reads the epoch of the source in use
        mark = FairMark.of(rng, self.revealed)
        state = self.rules.State.from_stored(self.state) if self.state is not None else None
        ctx = Context(
            game_id=self.game.row.id, kind=self.game.row.kind, channel=self.game.row.channel, now=entry.at,
            rng=rng, ledger=Ledger.from_reads(step.balances), deadlines=dict(self.pending),
            scope=Scope(self.rules.ledger_scope(self.game.row.id, state, self.game.parent_scope)),
            parent_id=self.game.row.parent_id,
        )
        try:
            new_state = perform(self.rules, ctx, state, step)
        except Rejected as exc:
            raise _Mismatch(f"{label}: the rules refuse it on replay: {exc.what}") from None
        records = collect(step, ctx, new_state, self.rules.summary(new_state), self.pending, mark)
        difference = _compare_events([(e.type, e.data) for e in stored], records.events)
        if difference:
            raise _Mismatch(f"{label}: {difference}")
        self.state = records.state
        self.status = records.status
        apply_deadlines(self.pending, records.deadlines)
        self.revealed = revealed_after(self.revealed, records.fair)
        self.report.steps = number

    def _compare_end(self) -> None:
        game = self.game
        difference = first_difference(game.row.state, self.state, "state")
        if difference:
            raise _Mismatch(f"after {self.report.steps} steps: {difference}")
        if game.row.status != self.status:
            raise _Mismatch(f"after {self.report.steps} steps: the store says the game is "
                            f"{game.row.status}, the replay {self.status}")
        for name in sorted(set(game.deadlines) | set(self.pending)):
            stored, replayed = game.deadlines.get(name), self.pending.get(name)
            if stored != replayed:
                raise _Mismatch(
                    f"after {self.report.steps} steps: deadline {name!r}: the store has "
                    f"{_when(stored)}, the replay {_when(replayed)}"
                )
        current = max(game.seeds)
        seed = game.seeds[current]
        position = (self.rng.epoch, self.rng.counter, list(self.rng.client_seeds))
        if (current, seed.counter, seed.client_seeds) != position:
            raise _Mismatch(
                f"after {self.report.steps} steps: the store's fair source is at epoch "
                f"{current}, counter {seed.counter}, client seeds {seed.client_seeds}; the "
                f"replay's at epoch {position[0]}, counter {position[1]}, client seeds "
                f"{position[2]}"
            )


def _describe(step: StepInput) -> str:
    fields = shown(step.type, step.data())
    return f"{step.type} " + ", ".join(f"{k}={_short(v)}" for k, v in fields.items())


def _when(value: datetime | None) -> str:
    return "none pending" if value is None else iso(value)


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compare_events(stored: list[tuple[str, dict[str, Any]]],
                    replayed: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The first difference between a step's stored events and the replay's, or None."""
    for number, (mine, theirs) in enumerate(zip(stored, replayed), start=1):
        if mine[0] != theirs[0]:
            return (f"its event {number} is {mine[0]} in the store, but the replay records "
                    f"{theirs[0]} {_short(theirs[1])}")
        difference = first_difference(mine[1], theirs[1], mine[0])
        if difference:
            return f"its event {number}: {difference}"
    if len(stored) != len(replayed):
        extra = replayed[len(stored)] if len(replayed) > len(stored) else stored[len(replayed)]
        return (f"the store holds {len(stored)} events for it, the replay {len(replayed)} "
                f"(the first unmatched: {extra[0]} {_short(extra[1])})")
    return None


def first_difference(stored: Any, replayed: Any, path: str) -> str | None:
    """Where two JSON values first differ, in words (``state.points.alice: stored 12, replay 14``)."""
    if isinstance(stored, dict) and isinstance(replayed, dict):
        for key in [*stored, *(k for k in replayed if k not in stored)]:
            if key not in replayed:
                return f"{path}.{key}: the store has {_short(stored[key])}, the replay nothing"
            if key not in stored:
                return f"{path}.{key}: the store has nothing, the replay {_short(replayed[key])}"
            difference = first_difference(stored[key], replayed[key], f"{path}.{key}")
            if difference:
                return difference
        return None
    if isinstance(stored, list) and isinstance(replayed, list):
        for index, (a, b) in enumerate(zip(stored, replayed)):
            difference = first_difference(a, b, f"{path}[{index}]")
            if difference:
                return difference
        if len(stored) != len(replayed):
            return f"{path}: the store has {len(stored)} entries, the replay {len(replayed)}"
        return None
    same_kind = isinstance(stored, bool) == isinstance(replayed, bool)
    if stored == replayed and same_kind:
        return None
    return f"{path}: the store has {_short(stored)}, the replay {_short(replayed)}"
