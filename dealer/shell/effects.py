"""What one step writes, with Core statements through the transaction's unit of work."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import Insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from dealer import ledger as L
from dealer.fairness import commitment, new_server_seed
from dealer.games.base import PostDraft
from dealer.history import DeadlineCancelled, DeadlineMoved, HistoryEvent
from dealer.records import DeadlineChange, FairChanges, StepRecords
from dealer.render import render_post
from dealer.shell import unit_of_work
from dealer.shell.unit_of_work import UnitOfWork
from dealer.store import queries as Q
from dealer.store.models import Game, JsonText
from dealer.text import escape_post

Executor = Session | Connection
"""The session, or on the hot path its connection: no autoflush nor ORM compile state (0.1 ms a statement)."""

def _insert(executor: Executor, statement: Insert, rows: list[dict[str, Any]],
            unit: UnitOfWork | None) -> None:
    """Insert ``rows`` through ``unit`` (staged in a group), else now."""
    if unit is not None:
        unit.add(statement, rows)
    else:
        executor.execute(statement, rows)


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


def commit_effects(session: Session, game: Q.LockedGame, records: StepRecords, now: datetime,
                   origin: str, players: list[str], pending: dict[str, Q.PendingDeadline]) -> None:
    """Write what one step produced; a Game loaded in the session is told its new values, so it
    stays consistent without a flush. The caller commits."""
    conn = session.connection()
    unit = unit_of_work.of(session)
    sync_players(conn, game.id, players, records.players)
    moved = apply_transfers(conn, records.transfers, now, game.id, unit=unit)
    write_deadlines(conn, game, records.deadlines, pending, unit=unit)
    write_fair_source(conn, game, records.fair, now, unit=unit)
    first_seq = game.next_event_seq or 1
    events = [records.input, *((event.type, _event_data(event)) for event in records.history)]
    append_events(conn, game.id, first_seq, now, events, unit=unit)
    values = {
        "state": JsonText(records.new_state.model_dump_json()),
        "status": records.status,
        "updated_at": now,
        "next_event_seq": first_seq + len(events),
    }
    update = {"game_id": game.id, **{f"new_{k}": v for k, v in values.items()}}
    unit.own(game.id, Q.UPDATE_GAME, [update])
    unit.follow(game, records, players, moved, values)
    loaded = session.identity_map.get(identity_key(Game, game.id))
    if loaded is not None:  # keep a Game object the caller holds up to date
        for key, value in values.items():
            set_committed_value(loaded, key, records.state if key == "state" else value)
    queue_posts(conn, records.posts, now, game.id, origin, unit=unit)


def _event_data(event: HistoryEvent) -> Any:
    """An event's data as pydantic's JSON text (a third of the cost of dumping and encoding)."""
    if type(event).data is HistoryEvent.data:
        return JsonText(event.model_dump_json(by_alias=True))
    return event.data()


def sync_players(session: Executor, game_id: str, before: list[str], after: list[str]) -> None:
    """Make ``game_players`` list exactly ``after`` (it listed ``before``)."""
    current = set(before)
    wanted = set(after)
    if wanted - current:
        session.execute(
            Q.INSERT_GAME_PLAYERS, [{"game_id": game_id, "player": name} for name in sorted(wanted - current)]
        )
    if current - wanted:
        session.execute(Q.remove_game_players(game_id, current - wanted))


def apply_transfers(session: Executor, transfers: list[L.Transfer], now: datetime,
                    game_id: str | None, *,
                    unit: UnitOfWork | None = None) -> dict[tuple[str, str], int]:
    """Record ledger entries and change balances by their net effect (returned by ``(account,
    item)``), with ``amount = amount + delta`` so no update is lost; the check constraint
    refuses a negative balance, rolling the step back."""
    if not transfers:
        return {}
    deltas: dict[tuple[str, str], int] = defaultdict(int)
    for t in transfers:
        deltas[(t.source, t.item)] -= t.amount
        deltas[(t.target, t.item)] += t.amount
    _insert(
        session, Q.INSERT_LEDGER_ENTRIES,
        [
            {"at": now, "game_id": game_id, "source": t.source, "target": t.target,
             "item": t.item, "amount": t.amount, "memo": t.memo}
            for t in transfers
        ],
        unit,
    )
    changes = [{"a": account, "i": item, "d": delta}
               for (account, item), delta in sorted(deltas.items()) if delta]
    if not changes:
        return {}
    # Every balance in one statement, in sorted order (the order rows are locked in). It
    # changes fewer rows than asked only where an account gets its first of an item:
    # those rows are then created, one by one.
    if session.execute(Q.CHANGE_BALANCE, changes).rowcount < len(changes):
        for change in changes:
            if session.execute(Q.BALANCE, {"account": change["a"], "item": change["i"]}).first() is None:
                session.execute(Q.INSERT_HOLDING,
                                {"account": change["a"], "item": change["i"], "amount": change["d"]})
    return {key: delta for key, delta in deltas.items() if delta}


def append_event(session: Session, game: Game, at: datetime, event: HistoryEvent) -> None:
    """Append one event to the game's history (outside a step: overrides, admin)."""
    first = game.next_event_seq or 1
    game.next_event_seq = first + 1
    append_events(session, game.id, first, at, [event.stored()])


def append_events(session: Executor, game_id: str, first_seq: int, at: datetime,
                  events: list[tuple[str, dict[str, Any] | JsonText]], *,
                  unit: UnitOfWork | None = None) -> None:
    """Insert events ``(type, data)`` numbered from ``first_seq`` into the game's history."""
    if not events:
        return
    _insert(
        session, Q.INSERT_EVENTS,
        [
            {"game_id": game_id, "seq": first_seq + i, "at": at, "type": type_, "data": data}
            for i, (type_, data) in enumerate(events)
        ],
        unit,
    )


def write_deadlines(session: Executor, game: Q.LockedGame, changes: list[DeadlineChange],
                    pending: dict[str, Q.PendingDeadline], *,
                    unit: UnitOfWork | None = None) -> None:
    """Create, move or cancel the game's deadline rows as the step's records say."""
    created = []
    for change in changes:
        if isinstance(change, DeadlineCancelled):
            session.execute(Q.CANCEL_DEADLINE, {"deadline_id": pending[change.deadline].id})
        elif isinstance(change, DeadlineMoved):
            session.execute(Q.MOVE_DEADLINE, {"deadline_id": pending[change.deadline].id, "when": change.due_at})
        else:
            created.append(change)
    if created:
        paused = game.paused  # read with the game's row (Q.LOCK_GAME): no query of its own
        rows = [
            {"game_id": game.id, "name": change.deadline, "due_at": change.due_at,
             "set_due_at": change.due_at, "status": "pending", "paused": paused}
            for change in created
        ]
        if unit is None:
            session.execute(Q.INSERT_DEADLINE, rows)
        else:
            unit.own(game.id, Q.INSERT_DEADLINE, rows)


def write_fair_source(session: Executor, game: Q.LockedGame, fair: FairChanges, now: datetime, *,
                      unit: UnitOfWork | None = None) -> None:
    """Persist the fair source: its draws, counter and client seeds, rotations and reveals."""
    if fair.draws:
        _insert(
            session, Q.INSERT_DRAWS,
            [
                {"game_id": game.id, "epoch": d.epoch, "counter": d.counter, "n": d.n,
                 "result": d.result, "client": d.client, "purpose": d.purpose[:120]}
                for d in fair.draws
            ],
            unit,
        )
    for epoch, _server_seed, counter in fair.retired:
        session.execute(Q.update_epoch(game.id, epoch).values(revealed_at=now, counter=counter))
    if fair.new_epoch is not None:
        row = new_seed_row(game.id, fair.new_epoch.epoch, fair.new_epoch.server_seed)
        row.update(client_seeds=list(fair.new_epoch.client_seeds), counter=fair.new_epoch.counter)
        session.execute(Q.INSERT_SEED.values(**row))
    elif fair.current is not None:
        epoch, counter, client_seeds = fair.current
        session.execute(Q.update_epoch(game.id, epoch).values(counter=counter, client_seeds=client_seeds))
    if fair.reveal is not None:
        session.execute(Q.update_epoch(game.id, fair.reveal).values(revealed_at=now))


def queue_posts(session: Executor, drafts: list[PostDraft], now: datetime, game_id: str | None,
                origin: str, *, unit: UnitOfWork | None = None) -> None:
    """Render each draft and queue it in the outbox (exactly once per origin and index)."""
    if not drafts:
        return
    _insert(
        session, Q.INSERT_POSTS,
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
                "stale_after": draft.stale_after,
                "ref": draft.ref,
                "mentions": list(draft.mentions) or None,
            }
            for index, draft in enumerate(drafts)
        ],
        unit,
    )
