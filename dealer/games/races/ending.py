"""How a table ends: the payout (OR-9), abandonment (OR-10) or no race (OR-3)."""

from __future__ import annotations

from typing import Any, Sequence

from dealer.games.base import Context
from dealer.games.races import events
from dealer.games.races.payout import Payment, payout, refund, totals_by_bettor
from dealer.games.races.posts import announce, field_view
from dealer.games.races.state import Horse, Outcome, PhaseMark, RacesState
from dealer.ledger import CHIPS, VOID, player, pool

_DEADLINES = ("open", "seating", "betting", "idle")


def finish_race(ctx: Context, state: RacesState, winners: Sequence[Horse]) -> RacesState:
    """OR-9: pay the prize out over the winning horses' bettors; the table is finished."""
    state.winners = [h.name for h in winners]
    payments = payout(state.prize, winners, state.bets, set(state.left))
    _pay(ctx, payments)
    _finish(ctx, state, "raced", payments)
    announce(
        ctx, "result", "the race is over",
        winners=[h for h in field_view(state) if h["name"] in state.winners],
        horses=field_view(state), length=state.length, actions=state.actions,
        pool=state.pool, house_share=state.house_share, prize=state.prize,
        allocation=state.prize // len(winners), bettors=_bettor_lines(state, payments),
        voids=_void_lines(payments), voided=sum(p.amount for p in payments if p.void),
        server_seed=ctx.rng.server_seed, commitment=ctx.rng.commitment,
    )
    return state


def abandon(ctx: Context, state: RacesState) -> RacesState:
    """OR-10: every seated player stood up: the pool refunded (docs/RACES.md)."""
    phase = state.phase
    payments = refund(state.prize, state.bets)
    _pay(ctx, payments)
    _finish(ctx, state, "abandoned", payments)
    announce(
        ctx, "abandoned", "the table is abandoned",
        during=phase, pool=state.pool, house_share=state.house_share, prize=state.prize,
        horses=field_view(state) if phase == "racing" else [], length=state.length,
        bettors=_bettor_lines(state, payments), voids=_void_lines(payments),
        server_seed=ctx.rng.server_seed, commitment=ctx.rng.commitment,
    )
    return state


def no_race(ctx: Context, state: RacesState, stood_up: list[str]) -> RacesState:
    """OR-3: seating closed and no seated player had a horse, so the table closes unraced."""
    _finish(ctx, state, "no_race", [])
    announce(
        ctx, "no_race", "no race today",
        stood_up=stood_up, server_seed=ctx.rng.server_seed, commitment=ctx.rng.commitment,
    )
    return state


def _pay(ctx: Context, payments: Sequence[Payment]) -> None:
    """Move each payment out of the table's pool: to its bettor or to void."""
    for p in payments:
        target = VOID if p.void else player(p.bettor or "")
        memo = f"OR-{10 if p.reason == 'refund' else 9} {p.reason}" + (f" ({p.horse})" if p.horse else "")
        ctx.ledger.move(pool(ctx.game_id), target, CHIPS, p.amount, memo)


def _finish(ctx: Context, state: RacesState, outcome: Outcome, payments: Sequence[Payment]) -> None:
    state.phase = "finished"
    state.outcome = outcome
    state.lap_owed = False
    state.phases.append(PhaseMark(phase="finished", started_at=ctx.now))
    for name in _DEADLINES:
        if name in ctx.deadlines:
            ctx.cancel_deadline(name)
    ctx.record(events.TableFinished(
        outcome=outcome, winners=list(state.winners),
        payments=[
            events.PaymentRecord(to="void" if p.void else p.bettor, bettor=p.bettor,
                                 amount=p.amount, reason=p.reason, horse=p.horse)
            for p in payments
        ],
    ))


def _bettor_lines(state: RacesState, payments: Sequence[Payment]) -> list[dict[str, Any]]:
    """A line per bettor: its bets, what it receives, and what of its winnings went to void."""
    lines = []
    for bettor, total in totals_by_bettor(state.bets).items():
        mine = [p for p in payments if p.bettor == bettor]
        lines.append({
            "bettor": bettor,
            "total": total,
            "bets": [{"horse": h, "amount": a} for h, a in _bets_of(state, bettor).items()],
            "received": sum(p.amount for p in mine if not p.void),
            "voided": sum(p.amount for p in mine if p.void),
            "left": bettor in state.left,
        })
    return lines


def _bets_of(state: RacesState, bettor: str) -> dict[str, int]:
    totals: dict[str, int] = {}
    for bet in state.bets:
        if bet.bettor == bettor:
            totals[bet.horse] = totals.get(bet.horse, 0) + bet.amount
    return totals


def _void_lines(payments: Sequence[Payment]) -> list[dict[str, Any]]:
    """Each amount that went to void, with why (NPC horse, no bets, stood up, rounding)."""
    return [
        {"amount": p.amount, "reason": p.reason, "horse": p.horse, "bettor": p.bettor}
        for p in payments if p.void
    ]
