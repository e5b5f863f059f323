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

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from dealer import ledger as L
from dealer.fairness import FairSource, commitment, new_server_seed
from dealer.games import rules_for
from dealer.games.base import Context, GameState, PostDraft, Rules, Summary
from dealer.render import render_post
from dealer.text import escape_post
from dealer.store.models import (
    Deadline,
    Draw,
    Event,
    Game,
    GamePlayer,
    Holding,
    LedgerEntry,
    Post,
    Seed,
)

log = logging.getLogger(__name__)

Action = Callable[[Rules, Context, Any], GameState]


@dataclass
class StepResult:
    """What a committed step changed, for the caller's bookkeeping and replies."""

    summary: Summary
    posts: int
    events: list[tuple[str, dict[str, Any]]]


def load_state(game: Game) -> tuple[Rules, GameState]:
    """The ruleset of ``game`` and its state, parsed."""
    rules = rules_for(game.kind)
    return rules, rules.State.model_validate(game.state)


def _state_or_none(game: Game) -> tuple[Rules, GameState | None]:
    """Like :func:`load_state`, but a game being created has no state yet."""
    if not game.state:
        return rules_for(game.kind), None
    return load_state(game)


def participants(session: Session, game_id: str) -> list[str]:
    """The names of the players taking part in ``game_id`` (as the last step left them)."""
    rows = session.scalars(select(GamePlayer.player).where(GamePlayer.game_id == game_id))
    return list(rows)


def ledger_snapshot(session: Session, accounts: Iterable[str]) -> L.Ledger:
    """The balances of ``accounts`` as they stand in the store."""
    wanted = sorted(set(accounts))
    rows = session.execute(
        select(Holding.account, Holding.item, Holding.amount).where(Holding.account.in_(wanted))
    )
    return L.Ledger.from_rows(rows)


def current_seed(session: Session, game_id: str) -> Seed:
    """The game's newest epoch (its fair source's seed)."""
    seed = session.scalars(
        select(Seed).where(Seed.game_id == game_id).order_by(Seed.epoch.desc()).limit(1)
    ).first()
    if seed is None:
        raise LookupError(f"game {game_id} has no fair source")
    return seed


def new_seed_row(game_id: str, epoch: int, server_seed: str | None = None) -> Seed:
    """A fresh epoch with a new secret server seed (made here, in the shell)."""
    server_seed = server_seed or new_server_seed()
    return Seed(
        game_id=game_id,
        epoch=epoch,
        server_seed=server_seed,
        commitment=commitment(server_seed),
        client_seeds=[],
        counter=0,
    )


def pending_deadlines(session: Session, game_id: str) -> dict[str, datetime]:
    """The game's pending deadlines by name."""
    rows = session.execute(
        select(Deadline.name, Deadline.due_at).where(
            Deadline.game_id == game_id, Deadline.status == "pending"
        )
    )
    return {name: due for name, due in rows}


def run_step(
    session: Session,
    game: Game,
    now: datetime,
    action: Action,
    *,
    origin: str,
    actor: str | None = None,
    extra_players: Iterable[str] = (),
) -> StepResult:
    """Run ``action`` on ``game`` at ``now`` and stage every effect in ``session``.

    ``origin`` names the cause (``in:12:0``, ``deadline:7``, ``create``); it makes the
    posts' idempotency keys. The caller commits.
    """
    # Lock the game's row: two daemons on one Postgres never step the same game at once
    # (SQLite takes its write lock at BEGIN IMMEDIATE instead).
    session.execute(select(Game.id).where(Game.id == game.id).with_for_update())
    session.refresh(game)
    rules, state = _state_or_none(game)
    players = participants(session, game.id)
    accounts = [L.player(p) for p in [*players, *extra_players]]
    if actor:
        accounts.append(L.player(actor))
    accounts += [L.HOUSE, L.VOID, L.pool(game.id)]
    seed = current_seed(session, game.id)
    rng = FairSource(
        seed.server_seed,
        client_seeds=list(seed.client_seeds),
        counter=seed.counter,
        epoch=seed.epoch,
        seed_factory=new_server_seed,
    )
    ctx = Context(
        game_id=game.id,
        kind=game.kind,
        channel=game.channel,
        now=now,
        rng=rng,
        ledger=ledger_snapshot(session, accounts),
        deadlines=pending_deadlines(session, game.id),
    )
    new_state = action(rules, ctx, state)
    summary = rules.summary(new_state)
    commit_effects(session, game, rules, new_state, summary, ctx, seed, origin)
    return StepResult(summary, len(ctx.posts), list(ctx.events))


def commit_effects(
    session: Session,
    game: Game,
    rules: Rules,
    state: GameState,
    summary: Summary,
    ctx: Context,
    seed: Seed,
    origin: str,
) -> None:
    """Write what one step produced (the caller's transaction commits it)."""
    now = ctx.now
    game.state = state.model_dump(mode="json")
    game.status = summary.status
    game.updated_at = now
    sync_players(session, game.id, summary.players)
    apply_transfers(session, ctx.ledger.staged, now, game.id)
    for type_, data in ctx.events:
        append_event(session, game, now, type_, data)
    apply_deadline_changes(session, game, ctx.deadline_changes, now)
    save_fair_source(session, game, ctx.rng, seed, now, finished=summary.status == "finished")
    queue_posts(session, ctx.posts, now, game.id, origin)
    session.flush()


def sync_players(session: Session, game_id: str, players: list[str]) -> None:
    """Make ``game_players`` list exactly ``players``."""
    current = set(participants(session, game_id))
    wanted = set(players)
    for name in wanted - current:
        session.add(GamePlayer(game_id=game_id, player=name))
    if current - wanted:
        session.execute(
            delete(GamePlayer).where(
                GamePlayer.game_id == game_id, GamePlayer.player.in_(current - wanted)
            )
        )


def apply_transfers(
    session: Session, transfers: list[L.Transfer], now: datetime, game_id: str | None
) -> None:
    """Record ledger entries and change balances by their net effect.

    Balances change with ``amount = amount + delta`` in SQL, so two steps touching the
    same wallet never lose an update; the table's check constraint refuses a negative
    balance, which rolls the whole step back.
    """
    deltas: dict[tuple[str, str], int] = defaultdict(int)
    for t in transfers:
        session.add(
            LedgerEntry(
                at=now, game_id=game_id, source=t.source, target=t.target,
                item=t.item, amount=t.amount, memo=t.memo,
            )
        )
        deltas[(t.source, t.item)] -= t.amount
        deltas[(t.target, t.item)] += t.amount
    for (account, item), delta in sorted(deltas.items()):
        if delta:
            change_balance(session, account, item, delta)


def change_balance(session: Session, account: str, item: str, delta: int) -> None:
    """Add ``delta`` to ``account``'s ``item`` (creating the row if needed)."""
    result = session.execute(
        update(Holding)
        .where(Holding.account == account, Holding.item == item)
        .values(amount=Holding.amount + delta)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount == 0:
        session.add(Holding(account=account, item=item, amount=delta))
        session.flush()


def append_event(
    session: Session, game: Game, at: datetime, type_: str, data: dict[str, Any]
) -> None:
    """Append one event to the game's history."""
    seq = game.next_event_seq or 1
    game.next_event_seq = seq + 1
    session.add(Event(game_id=game.id, seq=seq, at=at, type=type_, data=data))


def apply_deadline_changes(
    session: Session, game: Game, changes: dict[str, datetime | None], now: datetime
) -> None:
    """Create, move or cancel the game's deadline rows as the rules asked."""
    if not changes:
        return
    from dealer.overrides import game_is_paused  # late import: overrides uses this module

    paused = game_is_paused(session, game.id)
    pending = {
        d.name: d
        for d in session.scalars(
            select(Deadline).where(Deadline.game_id == game.id, Deadline.status == "pending")
        )
    }
    for name, when in changes.items():
        row = pending.get(name)
        if when is None:
            if row is not None:
                row.status = "cancelled"
                append_event(session, game, now, "deadline.cancelled", {"deadline": name})
            continue
        if row is None:
            session.add(
                Deadline(
                    game_id=game.id, name=name, due_at=when, set_due_at=when,
                    status="pending", paused=paused,
                )
            )
            append_event(session, game, now, "deadline.set", {"deadline": name, "due_at": _iso(when)})
        elif row.due_at != when:
            row.due_at = when
            row.set_due_at = when
            append_event(session, game, now, "deadline.moved", {"deadline": name, "due_at": _iso(when)})


def _iso(value: datetime) -> str:
    from dealer.clock import iso

    return iso(value)


def save_fair_source(
    session: Session, game: Game, rng: FairSource, seed: Seed, now: datetime, finished: bool
) -> None:
    """Persist the fair source: counter, client seeds, draws, rotations and reveals."""
    for draw in rng.draws:
        session.add(
            Draw(
                game_id=game.id, epoch=draw.epoch, counter=draw.counter, n=draw.n,
                result=draw.result, client=draw.client, purpose=draw.purpose[:120],
            )
        )
    if rng.retired:
        for epoch, server_seed, counter in rng.retired:
            row = seed if epoch == seed.epoch else session.get(Seed, (game.id, epoch))
            if row is not None:
                row.revealed_at = now
                row.counter = counter
                row.client_seeds = list(row.client_seeds)
            append_event(session, game, now, "seed.revealed", {"epoch": epoch, "server_seed": server_seed})
        current = new_seed_row(game.id, rng.epoch, rng.server_seed)
        current.client_seeds = list(rng.client_seeds)
        current.counter = rng.counter
        session.add(current)
        append_event(session, game, now, "seed.committed", {"epoch": rng.epoch, "commitment": current.commitment})
        seed = current
    else:
        seed.counter = rng.counter
        seed.client_seeds = list(rng.client_seeds)
    if finished and seed.revealed_at is None:
        session.flush()
        seed.revealed_at = now
        append_event(session, game, now, "seed.revealed", {"epoch": seed.epoch, "server_seed": seed.server_seed})


def queue_posts(
    session: Session, drafts: list[PostDraft], now: datetime, game_id: str | None, origin: str
) -> None:
    """Render each draft and queue it in the outbox (exactly once per origin and index)."""
    for index, draft in enumerate(drafts):
        session.add(
            Post(
                key=f"{origin}:{index}",
                game_id=game_id,
                channel=draft.channel,
                recipient=draft.recipient,
                kind=draft.kind,
                # Subjects can quote player text (an error quotes the line): escape them too.
                subject=escape_post(draft.subject),
                body=render_post(draft, now, game_id),
                created_at=now,
                status="pending",
                attempts=0,
            )
        )
