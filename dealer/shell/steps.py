"""One step of a game against the store: load, run the pure rules, commit every effect.

A step is a player's command, a deadline, or the creation of a game. It reads the game's
state, a ledger snapshot, the fair source and the pending deadlines, calls the ruleset,
and then writes, in the caller's transaction: the new state, the ledger entries and
balances, the events, the deadline rows, the fair source's counter and draws, and the
rendered posts in the outbox. If the rules raise :class:`~dealer.games.base.Rejected`
(or anything else), nothing is written.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterable

from pydantic import ValidationError
from sqlalchemy import Row
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from dealer import ledger as L
from dealer.clock import iso
from dealer.fairness import FairSource, commitment, new_server_seed
from dealer.games import rules_for
from dealer.games.base import (
    ChildDraft, Context, GameSettings, GameState, PostDraft, Rejected, Rules, Summary,
)
from dealer.store import queries as Q
from dealer.render import render_post
from dealer.text import escape_post
from dealer.store.models import Game

log = logging.getLogger(__name__)

Action = Callable[[Rules, Context, Any], GameState]


@dataclass
class StepResult:
    """What a committed step changed, for the caller's bookkeeping and replies."""

    summary: Summary
    posts: int
    events: list[tuple[str, dict[str, Any]]]
    deadlines_changed: bool


def load_state(game: Game | Row[Any]) -> tuple[Rules, GameState]:
    """The ruleset of ``game`` (a Game or a games row) and its state, parsed."""
    rules = rules_for(game.kind)
    return rules, rules.State.from_stored(game.state)


def _state_or_none(game: Game | Row[Any]) -> tuple[Rules, GameState | None]:
    """Like :func:`load_state`, but a game being created has no state yet."""
    if not game.state:
        return rules_for(game.kind), None
    return load_state(game)


def ledger_snapshot(session: Session, accounts: Iterable[str]) -> L.Ledger:
    """The balances of ``accounts`` as they stand in the store."""
    rows = session.execute(Q.HOLDINGS, {"accounts": sorted(set(accounts))})
    return L.Ledger.from_rows(rows)


@dataclass
class SeedRow:
    """The fields of a game's current epoch that a step reads."""

    epoch: int
    server_seed: str
    client_seeds: list[str]
    counter: int
    revealed: bool


def current_seed(session: Session, game_id: str) -> SeedRow:
    """The game's newest epoch (its fair source's seed)."""
    row = session.execute(Q.CURRENT_SEED, {"game_id": game_id}).first()
    if row is None:
        raise LookupError(f"game {game_id} has no fair source")
    return SeedRow(row.epoch, row.server_seed, list(row.client_seeds), row.counter, row.revealed_at is not None)


def new_seed_row(game_id: str, epoch: int, server_seed: str | None = None) -> dict[str, Any]:
    """A fresh epoch with a new secret server seed (made here, in the shell)."""
    server_seed = server_seed or new_server_seed()
    return {
        "game_id": game_id,
        "epoch": epoch,
        "server_seed": server_seed,
        "commitment": commitment(server_seed),
        "client_seeds": [],
        "counter": 0,
        "revealed_at": None,
    }


@dataclass
class PendingDeadline:
    """A pending deadline row, as a step sees it."""

    id: int
    due_at: datetime
    paused: bool = False
    error: str | None = None  # why its step last crashed


def pending_deadline_rows(session: Session, game_id: str) -> dict[str, PendingDeadline]:
    """The game's pending deadlines by name."""
    rows = session.execute(Q.PENDING_DEADLINES, {"game_id": game_id})
    return {row.name: PendingDeadline(row.id, row.due_at, row.paused, row.error) for row in rows}


class GameHeld(RuntimeError):
    """The game waits behind one of its deadlines whose step crashed.

    Nothing that comes after that deadline is applied to the game until it fires: a bet
    sent after a round's end must not land in a round that never closed. The daemon leaves
    such messages and later deadlines pending and retries them on every pass.
    """


def check_not_held(
    game_id: str, pending: dict[str, PendingDeadline], now: datetime, firing: int | None = None
) -> None:
    """Raise :class:`GameHeld` if a failed, unpaused deadline of the game is due before ``now``.

    ``firing`` is the deadline being fired, which never holds itself. A message sent at a
    deadline's very time counts before it (as in the pass), so only deadlines due strictly
    before ``now`` hold.
    """
    for name, row in pending.items():
        if row.error is not None and not row.paused and row.due_at < now and row.id != firing:
            raise GameHeld(
                f"game {game_id} waits behind its deadline {name} (due {iso(row.due_at)}), "
                f"which could not be fired: {row.error}"
            )


def run_step(
    session: Session,
    game: Game | str,
    now: datetime,
    action: Action,
    *,
    origin: str,
    actor: str | None = None,
    extra_players: Iterable[str] = (),
    firing: int | None = None,
) -> StepResult:
    """Run ``action`` on ``game`` at ``now`` and stage every effect in ``session``.

    ``origin`` names the cause (``in:12:0``, ``deadline:7``, ``create``); it makes the
    posts' idempotency keys. ``game`` may be given by id; ``firing`` is the id of the
    deadline this step fires. The caller commits. Raises :class:`GameHeld` (writing
    nothing) while a deadline of the game that is due before ``now`` cannot be fired.
    """
    game_id = game if isinstance(game, str) else game.id
    # Lock the game's row and read it afresh: two daemons on one Postgres never step the
    # same game at once (SQLite takes its write lock at BEGIN IMMEDIATE instead).
    game = session.execute(Q.LOCK_GAME, {"id": game_id}).one()
    rules, state = _state_or_none(game)
    # Who takes part is the ruleset's to say; game_players mirrors it for routing.
    players = rules.summary(state).players if state is not None else []
    # GH-1: a Hall cycle's accounts live in its own scope, apart from the global wallets;
    # a child game's (a match of the cycle) in its parent's.
    parent_scope = game_scope(session, game.parent_id) if game.parent_id else None
    scope = L.Scope(rules.ledger_scope(game.id, state, parent_scope))
    accounts = [scope.player(p) for p in [*players, *extra_players]]
    if actor:
        accounts.append(scope.player(actor))
    accounts += [scope.house, scope.void, scope.pool(game.id)]
    seed = current_seed(session, game.id)
    rng = FairSource(
        seed.server_seed,
        client_seeds=list(seed.client_seeds),
        counter=seed.counter,
        epoch=seed.epoch,
        seed_factory=new_server_seed,
    )
    pending = pending_deadline_rows(session, game.id)
    check_not_held(game.id, pending, now, firing)
    ctx = Context(
        game_id=game.id,
        kind=game.kind,
        channel=game.channel,
        now=now,
        rng=rng,
        ledger=ledger_snapshot(session, accounts),
        deadlines={name: row.due_at for name, row in pending.items()},
        scope=scope,
        parent_id=game.parent_id,
    )
    new_state = action(rules, ctx, state)
    summary = rules.summary(new_state)
    children = [_check_child(session, child) for child in ctx.children]  # may refuse the step
    commit_effects(session, game, new_state, summary, ctx, seed, origin, players, pending)
    for draft, (child_rules, settings) in zip(ctx.children, children):
        open_game(
            session, child_rules, draft.game_id, now, players=draft.players, settings=settings,
            start=draft.start, channel=draft.channel or game.channel, parent_id=game.id,
            origin=f"{origin}:child:{draft.game_id}",
        )
    if game.parent_id and summary.status == "finished" and game.status != "finished":
        _tell_parent(session, game.parent_id, game.id, summary, now, origin)
    return StepResult(summary, len(ctx.posts), list(ctx.events), bool(ctx.deadline_changes))


class ChildRefused(RuntimeError):
    """A child game's ruleset or its parent refused what a step of the other asked, after
    the step's effects were staged: a fault of the rules, never a player's error. The
    whole transaction is rolled back and the message or deadline fails loudly."""


def game_scope(session: Session, game_id: str) -> str | None:
    """The ledger scope of game ``game_id``'s accounts (its parent's for a child game)."""
    row = session.execute(Q.SCOPE_OF, {"game_id": game_id}).one()
    rules, state = _state_or_none(row)
    parent_scope = game_scope(session, row.parent_id) if row.parent_id else None
    return rules.ledger_scope(row.id, state, parent_scope)


def _check_child(session: Session, draft: ChildDraft) -> tuple[Rules, GameSettings]:
    """A child game a step opens, checked before the step writes anything: its ruleset and
    settings (raise :class:`Rejected` if it cannot be opened)."""
    try:
        rules = rules_for(draft.kind)
    except KeyError as exc:
        raise Rejected(str(exc.args[0])) from None
    if session.execute(Q.GAME_EXISTS, {"game_id": draft.game_id}).first() is not None:
        raise Rejected(f"a game {draft.game_id!r} already exists")
    try:
        settings = rules.Settings.model_validate(draft.settings)
    except ValidationError as exc:
        raise Rejected(f"the settings of {draft.kind} game {draft.game_id} are wrong: {exc}") from None
    return rules, settings


def _tell_parent(
    session: Session, parent_id: str, child_id: str, summary: Summary, now: datetime, origin: str
) -> None:
    """Run the parent's :meth:`~dealer.games.base.Rules.on_child_finished` as its own step,
    right after the child's finishing step and in the same transaction: the parent's
    rewards land with the match's end, or neither does."""

    def hear(rules: Rules, ctx: Context, state: GameState) -> GameState:
        ctx.record("child.finished", game=child_id, winner=summary.winner, status=summary.status)
        return rules.on_child_finished(ctx, state, child_id, summary)

    try:
        run_step(session, parent_id, now, hear, origin=f"{origin}:parent")
    except Rejected as exc:
        raise ChildRefused(
            f"game {parent_id} refused the end of its child game {child_id}: {exc.what}"
        ) from exc


def open_game(
    session: Session,
    rules: Rules,
    game_id: str,
    now: datetime,
    *,
    players: list[str],
    settings: GameSettings,
    start: datetime,
    channel: str | None = None,
    parent_id: str | None = None,
    server_seed: str | None = None,
    origin: str | None = None,
) -> None:
    """Create game ``game_id`` (its row, channels and first fair-source epoch) and run its
    ruleset's :meth:`~dealer.games.base.Rules.start` as its first step.

    A top-level game owns its main channel and those its ruleset declares. A child game
    (``parent_id``) owns none: it posts in ``channel`` (its parent's by default) and is
    reached by ``game ID`` or as its players' game. Raises :class:`Rejected` if the rules
    refuse to start a top-level game; a child that refuses raises :class:`ChildRefused`.
    """
    main = channel or rules.default_channel
    session.execute(Q.INSERT_GAME, {
        "id": game_id, "kind": rules.kind, "status": "pending", "channel": main,
        "settings": settings.model_dump(mode="json"), "state": {}, "created_at": now,
        "updated_at": now, "next_event_seq": 1, "parent_id": parent_id,
    })
    if parent_id is None:
        Q.own_channels(session, game_id, [main, *rules.channels])
    session.execute(Q.INSERT_SEED.values(**new_seed_row(game_id, 0, server_seed)))
    try:
        run_step(
            session, game_id, now,
            lambda r, ctx, _state: r.start(ctx, players, settings, start),
            origin=origin or f"create:{game_id}", extra_players=players,
        )
    except Rejected as exc:
        if parent_id is None:
            raise
        raise ChildRefused(f"child game {game_id} of {parent_id} could not start: {exc.what}") from exc


def commit_effects(
    session: Session,
    game: Row[Any],
    state: GameState,
    summary: Summary,
    ctx: Context,
    seed: SeedRow,
    origin: str,
    players: list[str],
    pending: dict[str, PendingDeadline],
) -> None:
    """Write what one step produced (the caller's transaction commits it).

    Everything is written with Core statements (a step is on the daemon's hot path: a
    thousand games may share one deadline); a Game object loaded in the session is then
    told its new committed values, so the session stays consistent without a flush.
    """
    now = ctx.now
    sync_players(session, game.id, players, summary.players)
    apply_transfers(session, ctx.ledger.staged, now, game.id)
    events = list(ctx.events)
    events += apply_deadline_changes(session, game, ctx.deadline_changes, pending)
    events += save_fair_source(session, game, ctx.rng, seed, now, finished=summary.status == "finished")
    first_seq = game.next_event_seq or 1
    append_events(session, game.id, first_seq, now, events)
    values = {
        "state": state.model_dump(mode="json"),
        "status": summary.status,
        "updated_at": now,
        "next_event_seq": first_seq + len(events),
    }
    session.execute(Q.UPDATE_GAME, {"game_id": game.id, **{f"new_{k}": v for k, v in values.items()}})
    loaded = session.identity_map.get(identity_key(Game, game.id))
    if loaded is not None:  # keep a Game object the caller holds up to date
        for key, value in values.items():
            set_committed_value(loaded, key, value)
    queue_posts(session, ctx.posts, now, game.id, origin)


def sync_players(session: Session, game_id: str, before: list[str], after: list[str]) -> None:
    """Make ``game_players`` list exactly ``after`` (it listed ``before``)."""
    current = set(before)
    wanted = set(after)
    if wanted - current:
        session.execute(
            Q.INSERT_GAME_PLAYERS, [{"game_id": game_id, "player": name} for name in sorted(wanted - current)]
        )
    if current - wanted:
        session.execute(Q.remove_game_players(game_id, current - wanted))


def apply_transfers(
    session: Session, transfers: list[L.Transfer], now: datetime, game_id: str | None
) -> None:
    """Record ledger entries and change balances by their net effect.

    Balances change with ``amount = amount + delta`` in SQL, so two steps touching the
    same wallet never lose an update; the table's check constraint refuses a negative
    balance, which rolls the whole step back.
    """
    if not transfers:
        return
    deltas: dict[tuple[str, str], int] = defaultdict(int)
    for t in transfers:
        deltas[(t.source, t.item)] -= t.amount
        deltas[(t.target, t.item)] += t.amount
    session.execute(
        Q.INSERT_LEDGER_ENTRIES,
        [
            {"at": now, "game_id": game_id, "source": t.source, "target": t.target,
             "item": t.item, "amount": t.amount, "memo": t.memo}
            for t in transfers
        ],
    )
    for (account, item), delta in sorted(deltas.items()):
        if delta:
            change_balance(session, account, item, delta)


def change_balance(session: Session, account: str, item: str, delta: int) -> None:
    """Add ``delta`` to ``account``'s ``item`` (creating the row if needed)."""
    result = session.execute(Q.CHANGE_BALANCE, {"a": account, "i": item, "d": delta})
    if result.rowcount == 0:
        session.execute(Q.INSERT_HOLDING, {"account": account, "item": item, "amount": delta})


def append_event(
    session: Session, game: Game, at: datetime, type_: str, data: dict[str, Any]
) -> None:
    """Append one event to the game's history (outside a step: overrides, admin)."""
    first = game.next_event_seq or 1
    game.next_event_seq = first + 1
    append_events(session, game.id, first, at, [(type_, data)])


def append_events(
    session: Session,
    game_id: str,
    first_seq: int,
    at: datetime,
    events: list[tuple[str, dict[str, Any]]],
) -> None:
    """Insert events numbered from ``first_seq`` into the game's history."""
    if not events:
        return
    session.execute(
        Q.INSERT_EVENTS,
        [
            {"game_id": game_id, "seq": first_seq + i, "at": at, "type": type_, "data": data}
            for i, (type_, data) in enumerate(events)
        ],
    )


def apply_deadline_changes(
    session: Session,
    game: Row[Any],
    changes: dict[str, datetime | None],
    pending: dict[str, PendingDeadline],
) -> list[tuple[str, dict[str, Any]]]:
    """Create, move or cancel the game's deadline rows as the rules asked; return the
    history events that record it."""
    events: list[tuple[str, dict[str, Any]]] = []
    paused: bool | None = None
    for name, when in changes.items():
        row = pending.get(name)
        if when is None:
            if row is not None:
                session.execute(Q.CANCEL_DEADLINE, {"deadline_id": row.id})
                events.append(("deadline.cancelled", {"deadline": name}))
            continue
        if row is None:
            if paused is None:
                paused = Q.game_is_paused(session, game.id)
            session.execute(
                Q.INSERT_DEADLINE,
                {"game_id": game.id, "name": name, "due_at": when, "set_due_at": when,
                 "status": "pending", "paused": paused},
            )
            events.append(("deadline.set", {"deadline": name, "due_at": iso(when)}))
        elif row.due_at != when:
            session.execute(Q.MOVE_DEADLINE, {"deadline_id": row.id, "when": when})
            events.append(("deadline.moved", {"deadline": name, "due_at": iso(when)}))
    return events


def save_fair_source(
    session: Session, game: Row[Any], rng: FairSource, seed: SeedRow, now: datetime, finished: bool
) -> list[tuple[str, dict[str, Any]]]:
    """Persist the fair source (counter, client seeds, draws, rotations, reveals); return
    the history events that record rotations and reveals."""
    events: list[tuple[str, dict[str, Any]]] = []
    if rng.draws:
        session.execute(
            Q.INSERT_DRAWS,
            [
                {"game_id": game.id, "epoch": d.epoch, "counter": d.counter, "n": d.n,
                 "result": d.result, "client": d.client, "purpose": d.purpose[:120]}
                for d in rng.draws
            ],
        )
        # GH-40: the step's draws also stand in the game's history, each with its counter.
        events.append((
            "fair.draws",
            {"draws": [{"epoch": d.epoch, "counter": d.counter, "n": d.n, "result": d.result,
                        "purpose": d.purpose} for d in rng.draws]},
        ))

    def epoch_row(epoch: int):  # type: ignore[no-untyped-def]
        return Q.update_epoch(game.id, epoch)

    revealed = seed.revealed
    if rng.retired:
        for epoch, server_seed, counter in rng.retired:
            session.execute(epoch_row(epoch).values(revealed_at=now, counter=counter))
            events.append(("seed.revealed", {"epoch": epoch, "server_seed": server_seed}))
        current = new_seed_row(game.id, rng.epoch, rng.server_seed)
        current.update(client_seeds=list(rng.client_seeds), counter=rng.counter)
        session.execute(Q.INSERT_SEED.values(**current))
        events.append(("seed.committed", {"epoch": rng.epoch, "commitment": current["commitment"]}))
        revealed = False
    elif rng.counter != seed.counter or rng.client_seeds != seed.client_seeds:
        session.execute(
            epoch_row(seed.epoch).values(counter=rng.counter, client_seeds=list(rng.client_seeds))
        )
    if finished and not revealed:
        session.execute(epoch_row(rng.epoch).values(revealed_at=now))
        events.append(("seed.revealed", {"epoch": rng.epoch, "server_seed": rng.server_seed}))
    return events


def queue_posts(
    session: Session, drafts: list[PostDraft], now: datetime, game_id: str | None, origin: str
) -> None:
    """Render each draft and queue it in the outbox (exactly once per origin and index)."""
    if not drafts:
        return
    session.execute(
        Q.INSERT_POSTS,
        [
            {
                "key": f"{origin}:{index}",
                "game_id": game_id,
                "channel": draft.channel,
                "recipient": draft.recipient,
                "kind": draft.kind,
                # Subjects can quote player text (an error quotes the line): escape them too.
                "subject": escape_post(draft.subject),
                "body": render_post(draft, now, game_id),
                "created_at": now,
                "status": "pending",
                "attempts": 0,
            }
            for index, draft in enumerate(drafts)
        ],
    )
