"""Phases and activity (RULES GH-6), victory (GH-8) and the per-phase fair seed (GH-40)."""

from __future__ import annotations

from datetime import datetime

from dealer.clock import format_duration, format_utc
from dealer.fairness import commitment
from dealer.games.base import Context, Rejected
from dealer.games.hall import events, governance
from dealer.games.hall.economy import give_starting_items
from dealer.games.hall.fights import phase_ends
from dealer.games.hall.items import label
from dealer.games.hall.state import HallState
from dealer.games.hall.trades import expire_offers, offer_words
from dealer.ledger import CHIPS, VERTEBRAE


def deadline_name(number: int) -> str:
    """The deadline at which phase ``number`` begins."""
    return f"phase-{number}"


def phase_number(name: str) -> int | None:
    """The phase a deadline name opens, or None for a name that is not a phase boundary."""
    prefix, _, number = name.partition("-")
    return int(number) if prefix == "phase" and number.isdigit() else None


def require_running(state: HallState, now: datetime) -> None:
    """Refuse an action while the Hall is not open, or one meant for a phase already closed."""
    # Interpretation: before the opening nothing can be done (not even `join`); the reply
    # says when to send it again.
    if state.status == "pending":
        raise Rejected(f"the Hall opens at {format_utc(state.opens_at)}; send it again then",
                       rule="GH-6", allowed=["inventory — see your inventory"])
    if state.status == "finished":
        raise Rejected(f"this cycle is over: {state.winner} won it", rule="GH-8",
                       allowed=["inventory — see your inventory"])
    started = state.phase_started_at
    assert started is not None and state.opened_at is not None
    if now < started:
        when = format_utc(now)
        running = f"phase {state.phase} is running now, send it again"
        if now < state.opened_at:
            raise Rejected(f"too late: sent at {when}, before the Hall opened; {running}",
                           rule="GH-6")
        previous = state.previous_phase_started_at
        if previous is not None and now >= previous:
            raise Rejected(f"too late: sent at {when} for phase {state.phase - 1}, which ended "
                           f"at {format_utc(started)}; {running}", rule="GH-6")
        # Interpretation (docs/HALL.md): the cycle keeps only the starts of the current and
        # the previous phase (its state must not grow with its age), so a message older
        # still is told so without the number of its phase.
        raise Rejected(f"too late: sent at {when}, before phase {state.phase - 1} began "
                       f"({format_utc(previous or started)}); {running}", rule="GH-6")


def open_if_due(ctx: Context, state: HallState) -> bool:
    """Open the Hall if its opening is due at this instant (docs/HALL.md, 1); whether it did."""
    if state.status != "pending" or not ctx.take_due(deadline_name(1)):
        return False
    open_first_phase(ctx, state, ctx.now)
    return True


def open_first_phase(ctx: Context, state: HallState, at: datetime) -> None:
    """The opening: phase 1 begins ``at`` (GH-6) and members get their starting items (GH-1)."""
    state.status = "running"
    state.begin_phase(1, at)
    for member in state.members:
        give_starting_items(ctx, state, member.name)
    _schedule_next(ctx, state, at)
    ctx.record(events.PhaseBegan(number=1, commitment=ctx.rng.commitment))
    ctx.post("opening", "hall/opening.txt", "The Gilded Hall is open",
             **opening_context(ctx, state))


def opening_context(ctx: Context, state: HallState) -> dict[str, object]:
    """What the opening post (or the announcement of a later opening) shows."""
    return dict(
        open=state.status == "running",
        opens_at=state.opens_at,
        phase_ends_at=state.phase_ends_at,
        length=format_duration(state.settings.phase_length),
        members=[m.name for m in state.members],
        commitment=ctx.rng.commitment,
        prices=state.settings.prices(),
        settings=state.settings,
        starting=[label(item, amount) for item, amount in
                  ((CHIPS, state.settings.starting_chips),
                   (VERTEBRAE, state.settings.starting_vertebrae)) if amount],
    )


def next_phase(ctx: Context, state: HallState) -> None:
    """Close the current phase and open the next (GH-6, GH-1 expiry, GH-40 seed rotation)."""
    closing = state.phase
    acted = [m.name for m in state.members if m.acted]
    happenings = list(state.log)
    expired = expire_offers(state)
    fair = _reveal(ctx)
    ctx.rng.rotate()
    for member in state.members:
        # GH-6: inactive in the new phase exactly when it took no action in the one closing.
        member.inactive = not member.acted
        member.acted = False
        member.gifted = None  # GH-7: a new gift per phase
    state.bonuses = []  # GH-7: "if they then act in that phase": a later action earns nothing
    state.log = []
    state.begin_phase(closing + 1, ctx.now)
    _schedule_next(ctx, state, ctx.now)
    inactive = [m.name for m in state.members if m.inactive]
    ctx.record(events.PhaseBegan(number=state.phase, closed=closing, revealed_seed=str(fair["seed"]),
                                 commitment=ctx.rng.commitment, inactive=inactive,
                                 expired=[o.id for o in expired]))
    ctx.post(
        "phase_summary", "hall/phase.txt", f"Phase {closing} is over; phase {state.phase} begins",
        closed=closing, number=state.phase, acted=acted, idle=[m.name for m in state.members
                                                              if m.name not in acted],
        happenings=happenings, expired=[offer_words(o) for o in expired], inactive=inactive,
        fair=fair, new_commitment=ctx.rng.commitment, phase_ends_at=state.phase_ends_at,
        length=format_duration(state.settings.phase_length),
    )
    phase_ends(ctx, state, closing)  # GH-18 battle, GH-19 lapsed challenges
    governance.phase_ended(ctx, state, closing)  # GH-21 Standard votes close, GH-30


def _schedule_next(ctx: Context, state: HallState, start: datetime) -> None:
    state.phase_ends_at = start + state.settings.phase_length
    ctx.set_deadline(deadline_name(state.phase + 1), state.phase_ends_at)


def _reveal(ctx: Context) -> dict[str, object]:
    """GH-40: what a player needs to recompute the closing epoch's draws."""
    seed = ctx.rng.server_seed
    return dict(seed=seed, commitment=commitment(seed), epoch=ctx.rng.epoch,
                client_seeds=list(ctx.rng.client_seeds), draws=ctx.rng.counter)


def check_victory(ctx: Context, state: HallState) -> None:
    """GH-8: a member holding ``victory_chips`` chips wins (several: the most, then the first joined)."""
    if state.status != "running":
        return
    target = state.settings.victory_chips
    holdings = [(ctx.ledger.balance(ctx.scope.player(m.name), CHIPS), -order, m.name)
                for order, m in enumerate(state.members)]
    qualified = [entry for entry in holdings if entry[0] >= target]
    if not qualified:
        return
    chips, _, winner = max(qualified)
    _finish(ctx, state, winner, chips)


def _finish(ctx: Context, state: HallState, winner: str, chips: int) -> None:
    happenings = list(state.log)
    expired = expire_offers(state)
    fair = _reveal(ctx)
    state.status = "finished"
    state.winner = winner
    state.finished_at = ctx.now
    state.bonuses = []
    for name in list(ctx.deadlines):
        ctx.cancel_deadline(name)
    state.phase_ends_at = None
    ctx.record(events.Victory(winner=winner, chips=chips, phase=state.phase,
                              revealed_seed=str(fair["seed"])))
    ctx.post(
        "victory", "hall/victory.txt", f"{winner} wins the cycle",
        winner=winner, chips=chips, target=state.settings.victory_chips, phase=state.phase,
        happenings=happenings, expired=[offer_words(o) for o in expired], fair=fair,
        standings=_standings(ctx, state),
    )


def _standings(ctx: Context, state: HallState) -> list[dict[str, object]]:
    rows = [dict(name=m.name, chips=ctx.ledger.balance(ctx.scope.player(m.name), CHIPS))
            for m in state.members]
    return sorted(rows, key=lambda row: -int(row["chips"]))  # type: ignore[call-overload]


def refresh_chips(ctx: Context, state: HallState) -> None:
    """Keep each member's chips and vertebrae in the state, for ``summary`` and ``help``."""
    state.chips = {m.name: ctx.ledger.balance(ctx.scope.player(m.name), CHIPS)
                   for m in state.members}
    state.vertebrae = {m.name: ctx.ledger.balance(ctx.scope.player(m.name), VERTEBRAE)
                       for m in state.members}
