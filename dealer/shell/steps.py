"""One step of a game against the store: load, run the pure rules, write every effect in
the caller's transaction; if the rules raise, nothing is written."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterable

from pydantic import ValidationError
from sqlalchemy.orm import Session

from dealer import ledger as L, logs
from dealer.clock import iso
from dealer.fairness import FairSource, new_server_seed
from dealer.games import hosts_matches, rules_for
from dealer.games.base import (
    Context, GameSettings, GameState, Rejected, Rules, Summary,
)
from dealer.history import (
    ChildActed, ChildFinished, ChildOpened, GameCreated, ParentFinished, StepInput,
)
from dealer.records import FairMark, collect, perform
from dealer.shell.effects import Executor, commit_effects, new_seed_row
from dealer.shell import unit_of_work
from dealer.store import queries as Q
from dealer.views import game_state, ledger_scope
from dealer.store.models import Game

log = logging.getLogger(__name__)

@dataclass
class StepResult:
    """What a committed step changed, for the caller's bookkeeping and replies."""

    summary: Summary
    posts: int
    deadlines_changed: bool


def _state_or_none(game: Game | Q.LockedGame) -> tuple[Rules, GameState | None]:
    """Like :func:`dealer.views.game_state`, but a game being created has no state yet (``{}``, or its text)."""
    if not game.state or game.state == "{}":
        return rules_for(game.kind), None
    return game_state(game)


def ledger_snapshot(session: Executor, accounts: Iterable[str],
                    locked: Q.LockedBalances | None = None) -> L.Ledger:
    """The ledger a step works with, over ``accounts``: the currencies read with the locked row
    when they cover them (else now), any other item on first look, so a step's cost does not
    grow with what the members have collected."""
    wanted = sorted(set(accounts))
    ledger = L.Ledger({(account, item): 0 for account in wanted for item in Q.CURRENCIES})
    if locked is not None:
        ledger.balances.update((key, amount) for key, amount in locked.amounts.items()
                               if key in ledger.balances)
    else:
        ledger.balances.update(
            ((row.account, row.item), row.amount)
            for row in session.execute(Q.currency_holdings(len(wanted)),
                                       {f"a{i}": a for i, a in enumerate(wanted)})
        )
    ledger.source = StoreBalances(session, wanted)
    return ledger


class StoreBalances:
    """Balances read on first use; an account the step may not touch reads as empty."""

    def __init__(self, session: Executor, accounts: Iterable[str]) -> None:
        self.session = session
        self.accounts = frozenset(accounts)

    def balance(self, account: str, item: str) -> int:
        """What ``account`` holds of ``item``."""
        if account not in self.accounts:
            return 0
        amount = self.session.execute(Q.BALANCE, {"account": account, "item": item}).scalar()
        return amount or 0

    def holdings(self, account: str) -> dict[str, int]:
        """Every item ``account`` holds."""
        if account not in self.accounts:
            return {}
        return {row.item: row.amount for row in self.session.execute(Q.ACCOUNT_HOLDINGS, {"account": account})}


class GameHeld(RuntimeError):
    """The game waits behind a deadline whose step crashed: a bet sent after a round's end
    must not land in a round that never closed, so later input stays pending."""


def check_not_held(game_id: str, pending: dict[str, Q.PendingDeadline], now: datetime,
                   firing: int | None = None, inbound: bool = False) -> None:
    """Raise :class:`GameHeld` if a failed, unpaused deadline other than ``firing`` was due
    strictly before ``now`` (a message at a deadline's very time counts before it); or, for
    a deadline being fired or an ``inbound`` message, if any unpaused deadline of the game
    was due before it: a game's input is applied in time order, and an earlier deadline
    still pending is another daemon's, locked but not yet fired (after a downtime, with two
    replicas), which goes on with what follows it."""
    for name, row in pending.items():
        if row.paused or row.id == firing:
            continue
        if row.error is not None and row.due_at < now:
            raise GameHeld(
                f"game {game_id} waits behind its deadline {name} (due {iso(row.due_at)}), "
                f"which could not be fired: {row.error}"
            )
        if (inbound and row.due_at < now) or (
                firing is not None and (row.due_at, row.id) < (now, firing)):
            raise GameHeld(
                f"game {game_id} waits behind its earlier deadline {name} (due "
                f"{iso(row.due_at)}), not fired yet"
            )


def run_step(session: Session, game: Game | str, now: datetime, step: StepInput, *, origin: str,
             actor: str | None = None, extra_players: Iterable[str] = (), firing: int | None = None,
             inbound: bool = False, command: Any = None,
             after: Callable[[Context], None] | None = None) -> StepResult:
    """Run ``step`` (the history's input) on ``game`` at ``now`` and stage every effect.

    ``after`` sees the context before records are made (a message takes its sender's replies
    out); ``origin`` (``in:12:0``, ``deadline:7``, ``create``) makes the posts' idempotency
    keys; ``inbound``: a message's step (held behind an earlier deadline still pending).
    Raises :class:`GameHeld`, writing nothing. The caller commits."""
    game_id = game if isinstance(game, str) else game.id
    logs.bind(game_id=game_id)  # every line logged about this step names its game
    # The step's statements run on the session's connection (the hot path); what the
    # caller staged as ORM objects is written first, as a session statement would.
    session.flush()
    conn = session.connection()
    unit = unit_of_work.of(session)
    kept = unit.game(game_id, firing)
    game = kept.row
    rules, state = _state_or_none(game)
    # Who takes part is the ruleset's to say; game_players mirrors it for routing.
    players = rules.summary(state).players if state is not None else []
    # GH-1: a Hall cycle's accounts live in its own scope, apart from the global wallets;
    # a child game's (a match of the cycle) in its parent's.
    if game.parent_id:
        unit.before_reading()  # the parent's row, which a step of the group may have written
    parent_scope = ledger_scope(session, game.parent_id) if game.parent_id else None
    scope = L.Scope(rules.ledger_scope(game.id, state, parent_scope))
    accounts = [scope.player(p) for p in [*players, *extra_players]]
    if actor:
        accounts.append(scope.player(actor))
    accounts += [scope.house, scope.void, scope.pool(game.id)]
    # The currencies of the members, the house, the void and the pool, read with the
    # locked row: used if they cover every account (a join's new player is not yet a
    # member; a game being created has none).
    locked = kept.balances
    if game.epoch is None:
        raise LookupError(f"game {game.id} has no fair source")
    # The game's newest epoch, read with its locked row.
    rng = FairSource(game.server_seed, client_seeds=list(game.client_seeds), counter=game.counter,
                     epoch=game.epoch, seed_factory=new_server_seed)
    fair = FairMark.of(rng, revealed=game.revealed_at is not None)
    # The deadline being fired is no longer pending (its fired mark may be kept with its
    # group's rows, not yet written).
    pending = {row.name: row for row in kept.pending if row.id != firing}
    check_not_held(game.id, pending, now, firing, inbound)
    ctx = Context(
        game_id=game.id,
        kind=game.kind,
        channel=game.channel,
        now=now,
        rng=rng,
        ledger=ledger_snapshot(conn, accounts, locked if locked.covers(
            game.id, game.parent_id, scope.name, accounts) else None),
        deadlines={name: row.due_at for name, row in pending.items()},
        scope=scope,
        parent_id=game.parent_id,
    )
    new_state = perform(rules, ctx, state, step, command)
    if after is not None:
        after(ctx)
    summary = rules.summary(new_state)
    children = [_check_child(conn, child) for child in ctx.children]  # may refuse the step
    records = collect(
        step, ctx, new_state, summary, {name: row.due_at for name, row in pending.items()}, fair,
    )
    commit_effects(session, game, records, now, origin, players, pending)
    for draft, (child_rules, settings) in zip(ctx.children, children):
        open_game(
            session, child_rules, draft.game_id, now, players=draft.players, settings=settings,
            start=draft.start, channel=draft.channel or game.channel, parent_id=game.id,
            origin=f"{origin}:child:{draft.game_id}",
        )
    for index, player in enumerate(ctx.parent_actions if game.parent_id else []):
        # GH-6: an action in a match is an action in its Hall, in the same transaction.
        acted = ChildActed(game=game.id, player=player)
        try:
            run_step(session, game.parent_id, now, acted, origin=f"{origin}:acted:{index}")
        except Rejected as exc:
            raise ChildRefused(f"game {game.parent_id} refused an action in its child game "
                               f"{game.id}: {exc.what}") from exc
    if game.parent_id and summary.status == "finished" and game.status != "finished":
        _tell_parent(session, game.parent_id, game.id, summary, now, origin)
    ended = 0
    if (summary.status == "finished" and game.status != "finished" and game.parent_id is None
            and hosts_matches(game.kind)):
        ended = _end_children(session, game.id, summary.winner, now, origin)
    # Deadlines changed: the game's own, or those of a game this step opened (a child's),
    # stepped (the parent told of a child's action or end) or ended (its children).
    told_parent = bool(game.parent_id and (ctx.parent_actions or summary.status == "finished"))
    moved = bool(records.deadlines or ctx.children or told_parent or ended)
    return StepResult(summary, len(records.posts), moved)


class ChildRefused(RuntimeError):
    """A child game or its parent refused what the other's step asked: a fault of the rules,
    so the whole transaction is rolled back and fails loudly."""


def _check_child(session: Executor, draft: ChildOpened) -> tuple[Rules, GameSettings]:
    """Check a child game a step opens (ruleset, settings) before the step writes anything."""
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


def _tell_parent(session: Session, parent_id: str, child_id: str, summary: Summary, now: datetime,
                 origin: str) -> None:
    """The parent's ``on_child_finished`` as its own step in the same transaction: the rewards
    land with the match's end, or neither does."""
    heard = ChildFinished(game=child_id, status=summary.status, players=list(summary.players),
                          scores=summary.scores, winner=summary.winner, detail=summary.detail)
    try:
        run_step(session, parent_id, now, heard, origin=f"{origin}:parent")
    except Rejected as exc:
        raise ChildRefused(
            f"game {parent_id} refused the end of its child game {child_id}: {exc.what}"
        ) from exc


def _end_children(session: Session, parent_id: str, winner: str | None, now: datetime,
                  origin: str) -> int:
    """GH-8: end the finishing game's unfinished children, each in its own step of the same
    transaction; return how many."""
    unit_of_work.of(session).before_reading()  # a child's status a step of the group wrote
    children = [row[0] for row in Q.child_games(session, parent_id) if row[2] != "finished"]
    for child_id in children:
        ended = ParentFinished(game=parent_id, winner=winner)
        try:
            run_step(session, child_id, now, ended, origin=f"{origin}:ended:{child_id}")
        except Rejected as exc:
            raise ChildRefused(
                f"game {child_id} refused the end of its parent game {parent_id}: {exc.what}"
            ) from exc
    return len(children)


def open_game(session: Session, rules: Rules, game_id: str, now: datetime, *, players: list[str],
              settings: GameSettings, start: datetime, channel: str | None = None,
              parent_id: str | None = None, server_seed: str | None = None,
              origin: str | None = None) -> None:
    """Create the game (row, channels, first epoch) and run its ``start`` as its first step.
    A child (``parent_id``) owns no channel: it posts in ``channel``, its parent's by default."""
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
            GameCreated(players=players, settings=settings.model_dump(mode="json"), start=start),
            origin=origin or f"create:{game_id}", extra_players=players,
        )
    except Rejected as exc:
        if parent_id is None:
            raise
        raise ChildRefused(f"child game {game_id} of {parent_id} could not start: {exc.what}") from exc
