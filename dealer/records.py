"""The pure half of a step, shared by the shell, the in-memory shell and the replay: run its
input through the rules (:func:`perform`), keep what it collected (:func:`collect`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime
from typing import Any, Mapping

from dealer.fairness import Draw, FairSource, client_hash, commitment
from dealer.games.base import Context, GameState, PostDraft, Rejected, Rules, Summary
from dealer.history import (
    ChildActed,
    ChildFinished,
    ClientSeedAdded,
    CommandSent,
    DeletionSent,
    EditSent,
    MessageTaken,
    ParentFinished,
    ReactionSent,
    DeadlineCancelled,
    DeadlineFired,
    DeadlineMoved,
    DeadlineSet,
    DrawRecord,
    FairDraws,
    GameCreated,
    HistoryEvent,
    ItemGranted,
    SeedCommitted,
    SeedRevealed,
    StepInput,
)
from dealer.ledger import Transfer


class NotTaken(Exception):
    """``Rules.on_message`` left the message to be read line by line: no step."""


def perform(rules: Rules, ctx: Context, state: GameState | None, step: StepInput,
            command: Any = None) -> GameState:
    """Run ``step`` through ``rules`` on ``state`` (None: a creation); Rejected when refused."""
    if isinstance(step, GameCreated):
        settings = rules.Settings.model_validate(step.settings)
        return rules.start(ctx, list(step.players), settings, step.start)
    assert state is not None, f"a {step.type} step needs a game that exists"
    if isinstance(step, CommandSent):
        if command is None:
            command = rules.parse(step.line)
        if not rules.open_to_all and not rules.involves(state, step.actor):
            raise Rejected(f"You do not play in game {ctx.game_id}.", allowed=[])
        return rules.handle(ctx, state, step.actor, command)
    if isinstance(step, DeadlineFired):
        ctx.first_messages = dict(step.first_messages or {})
        return rules.on_deadline(ctx, state, step.deadline)
    if isinstance(step, ItemGranted):
        return rules.grant(ctx, state, step.player, step.item, step.amount)
    if isinstance(step, MessageTaken):
        taken = rules.on_message(ctx, state, step)
        if taken is None:
            raise NotTaken(step.id)
        return taken
    if isinstance(step, EditSent):
        return rules.on_edit(ctx, state, step)
    if isinstance(step, DeletionSent):
        return rules.on_delete(ctx, state, step)
    if isinstance(step, ReactionSent):
        return rules.on_reaction(ctx, state, step)
    if isinstance(step, ChildFinished):
        # The summary as the history keeps it (JSON), so a replay hands the rules the same.
        data = step.data()
        summary = Summary(status=data["status"], players=data["players"], scores=data["scores"],
                          winner=data["winner"], detail=data["detail"])
        return rules.on_child_finished(ctx, state, step.game, summary)
    if isinstance(step, ChildActed):
        return rules.on_child_action(ctx, state, step.game, step.player)
    if isinstance(step, ParentFinished):
        return rules.on_parent_finished(ctx, state, step.game, step.winner)
    if isinstance(step, ClientSeedAdded):
        # GH-40: the seed is mixed into every later draw of the current epoch.
        ctx.rng.add_client_seed(step.seed)
        ctx.reply(
            step.player, "seed_added", "common/seed.txt", f"{ctx.game_id}: your seed is in",
            seed=step.seed, client_hash=client_hash(ctx.rng.client_seeds),
            commitment=ctx.rng.commitment, until="phase" if ctx.kind == "hall" else "game",
        )
        return state
    raise TypeError(f"no step runs from a {type(step).__name__}")


@dataclass(frozen=True)
class FairMark:
    """Where a game's fair source stood when a step began."""

    epoch: int
    counter: int
    client_seeds: tuple[str, ...]
    revealed: bool
    draws: int = 0
    retired: int = 0

    @classmethod
    def of(cls, rng: FairSource, revealed: bool) -> "FairMark":
        """The mark of ``rng`` as it stands."""
        return cls(rng.epoch, rng.counter, tuple(rng.client_seeds), revealed,
                   len(rng.draws), len(rng.retired))


@dataclass(frozen=True)
class NewEpoch:
    """The epoch a rotation started, as its row is first written."""

    epoch: int
    server_seed: str
    client_seeds: list[str]
    counter: int


@dataclass
class FairChanges:
    """What a step did to the fair source (GH-40)."""

    draws: list[Draw] = field(default_factory=list)
    retired: list[tuple[int, str, int]] = field(default_factory=list)
    """Epochs ended by rotation: ``(epoch, server_seed, final counter)``, revealed now."""
    new_epoch: NewEpoch | None = None
    current: tuple[int, int, list[str]] | None = None
    """Without a rotation: the current epoch's ``(epoch, counter, client_seeds)``, if changed."""
    reveal: int | None = None
    """The epoch whose seed is revealed because the game finished."""


DeadlineChange = DeadlineSet | DeadlineMoved | DeadlineCancelled
"""A deadline the step created, moved or cancelled, as its history records it."""


@dataclass
class StepRecords:
    """Everything one accepted step keeps, as plain data."""

    new_state: GameState
    """The state after the step (:attr:`state` is what the store keeps of it)."""
    status: str
    players: list[str]
    transfers: list[Transfer]
    input: tuple[str, dict[str, Any]]
    """The step's input as stored, completed with what it read: the first history entry."""
    history: list[HistoryEvent]
    """The history entries after it: the rules' events, children, deadline and fair-source changes."""
    deadlines: list[DeadlineChange]
    fair: FairChanges
    posts: list[PostDraft]

    @cached_property
    def state(self) -> dict[str, Any]:
        """The new state's JSON, dumped only when asked: the shell writes ``model_dump_json``'s text."""
        return self.new_state.model_dump(mode="json")

    @cached_property
    def events(self) -> list[tuple[str, dict[str, Any]]]:
        """The history entries as stored, ``(type, data)``: :attr:`input` then :attr:`history`."""
        return [self.input, *(event.stored() for event in self.history)]


def collect(step: StepInput, ctx: Context, state: GameState, summary: Summary,
            pending: Mapping[str, datetime], fair: FairMark) -> StepRecords:
    """The records of an accepted step; ``pending`` and ``fair`` as they stood when it began."""
    # The input, completed with what the step read from outside the history.
    completed = step.data()
    completed.update(balances=ctx.ledger.opening_reads(), epoch=fair.epoch, counter=fair.counter)
    deadlines = deadline_changes(ctx.deadline_changes, pending)
    changes, fair_events = fair_changes(ctx.rng, fair, finished=summary.status == "finished")
    events: list[HistoryEvent] = [*ctx.events, *ctx.children, *deadlines, *fair_events]
    return StepRecords(
        new_state=state,
        status=summary.status,
        players=list(summary.players),
        transfers=list(ctx.ledger.staged),
        input=(step.type, completed),
        history=events,
        deadlines=deadlines,
        fair=changes,
        posts=list(ctx.posts),
    )


def deadline_changes(changes: Mapping[str, datetime | None],
                     pending: Mapping[str, datetime]) -> list[DeadlineChange]:
    """The deadline rows to create, move or cancel, as their events."""
    result: list[DeadlineChange] = []
    for name, when in changes.items():
        if when is None:
            if name in pending:
                result.append(DeadlineCancelled(deadline=name))
        elif name not in pending:
            result.append(DeadlineSet(deadline=name, due_at=when))
        elif pending[name] != when:
            result.append(DeadlineMoved(deadline=name, due_at=when))
    return result


def apply_deadlines(pending: dict[str, datetime], changes: list[DeadlineChange]) -> None:
    """Bring an in-memory set of pending deadlines up to date with a step's changes."""
    for change in changes:
        if isinstance(change, DeadlineCancelled):
            pending.pop(change.deadline, None)
        else:
            pending[change.deadline] = change.due_at


def fair_changes(rng: FairSource, before: FairMark,
                 finished: bool) -> tuple[FairChanges, list[HistoryEvent]]:
    """The step's draws, rotations and reveals, and their events (GH-40)."""
    changes = FairChanges(draws=rng.draws[before.draws:], retired=rng.retired[before.retired:])
    events: list[HistoryEvent] = []
    if changes.draws:
        events.append(FairDraws(draws=[
            DrawRecord(epoch=d.epoch, counter=d.counter, n=d.n, result=d.result, purpose=d.purpose)
            for d in changes.draws
        ]))
    revealed = before.revealed
    if changes.retired:
        for epoch, server_seed, _counter in changes.retired:
            events.append(SeedRevealed(epoch=epoch, server_seed=server_seed))
        changes.new_epoch = NewEpoch(rng.epoch, rng.server_seed, list(rng.client_seeds), rng.counter)
        events.append(SeedCommitted(epoch=rng.epoch, commitment=commitment(rng.server_seed)))
        revealed = False
    elif rng.counter != before.counter or tuple(rng.client_seeds) != before.client_seeds:
        changes.current = (rng.epoch, rng.counter, list(rng.client_seeds))
    if finished and not revealed:
        changes.reveal = rng.epoch
        events.append(SeedRevealed(epoch=rng.epoch, server_seed=rng.server_seed))
    return changes, events


def revealed_after(revealed: bool, changes: FairChanges) -> bool:
    """Whether the current epoch's seed is revealed once ``changes`` are kept."""
    if changes.reveal is not None:
        return True
    return False if changes.new_epoch is not None else revealed
