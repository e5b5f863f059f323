"""Betting (OR-5): bets and passes, who betting waits for, and its close with the house's share."""

from __future__ import annotations

from dealer.games.base import Context, Rejected
from dealer.games.races import events, racing
from dealer.games.races.commands import PlaceBet
from dealer.games.races.field import find_horse
from dealer.games.races.payout import totals_by_bettor
from dealer.games.races.posts import announce, bets_view, confirm, duration_text, field_view
from dealer.games.races.state import Bet, PhaseMark, RacesState
from dealer.ledger import CHIPS, HOUSE, player, pool
from dealer.text import plural

BETTING = "betting"  # the deadline that closes betting: moved by every bet (OR-5)


def open_betting(ctx: Context, state: RacesState) -> RacesState:
    """OR-5: betting opens as seating closes; it closes ``betting_window`` later if nobody bets."""
    state.phase = "betting"
    state.phases.append(PhaseMark(phase="betting", started_at=ctx.now))
    closes_at = ctx.now + state.settings.betting_window
    ctx.set_deadline(BETTING, closes_at)
    announce(
        ctx, "betting_opened", "betting is open",
        horses=field_view(state), closes_at=closes_at, waiting=waiting_for(state),
        house_share_percent=state.settings.house_share_percent,
        betting_window=duration_text(state.settings.betting_window),
    )
    return state


def place_bet(ctx: Context, state: RacesState, actor: str, command: PlaceBet) -> RacesState:
    """OR-5: the chips leave the actor's wallet at once into the table's pool."""
    if state.phase == "seating":
        raise Rejected("betting opens when seating closes; say 'interested' to be waited for",
                       "OR-5", ["interested"])
    if state.phase != "betting":
        raise Rejected("betting has closed: the race is on", "OR-5")
    horse = find_horse(state.horses, command.horse)
    if horse is None:
        raise Rejected(f"no horse is named {command.horse!r}", "OR-5",
                       [f"bet {command.amount} on {h.name}" for h in state.horses])
    held = ctx.ledger.balance(player(actor), CHIPS)
    if held < command.amount:
        raise Rejected(
            f"you have {plural(held, 'chip')}: a bet of {command.amount} is larger than your wallet",
            "OR-5",
        )
    ctx.ledger.move(player(actor), pool(ctx.game_id), CHIPS, command.amount,
                    f"OR-5 bet on {horse.name}")
    state.bets.append(Bet(bettor=actor, horse=horse.name, amount=command.amount, at=ctx.now))
    state.pool += command.amount
    closes_at = ctx.now + state.settings.betting_window  # an hour after the last bet
    ctx.set_deadline(BETTING, closes_at)
    ctx.record(events.BetPlaced(bettor=actor, horse=horse.name, amount=command.amount))
    confirm(
        ctx, actor, "reply_bet", "bet accepted",
        amount=command.amount, horse=horse.name,
        on_horse=totals_by_bettor(state.bets, horse.name)[actor],
        wallet=ctx.ledger.balance(player(actor), CHIPS), pool=state.pool, closes_at=closes_at,
    )
    return maybe_close(ctx, state)


def pass_(ctx: Context, state: RacesState, actor: str) -> RacesState:
    """OR-5: say one will not bet (more); betting no longer waits for the actor."""
    if state.phase == "seating":
        raise Rejected("betting has not opened yet", "OR-5")
    if state.phase != "betting":
        raise Rejected("betting has closed: the race is on", "OR-5")
    if actor in state.passed:
        raise Rejected("you already passed", "OR-5")
    state.passed.append(actor)
    ctx.record(events.Passed(player=actor))
    confirm(ctx, actor, "reply_pass", "you passed", waiting=waiting_for(state),
            closes_at=ctx.deadlines.get(BETTING))
    return maybe_close(ctx, state)


def waiting_for(state: RacesState) -> list[str]:
    """OR-5: the seated and interested players who have neither bet nor passed."""
    done = set(state.passed) | {bet.bettor for bet in state.bets}
    return [p for p in dict.fromkeys([*state.seated, *state.interested]) if p not in done]


def maybe_close(ctx: Context, state: RacesState) -> RacesState:
    """OR-5: close betting early once nobody it waits for is left."""
    if state.phase == "betting" and not waiting_for(state):
        return close(ctx, state, early=True)
    return state


def close(ctx: Context, state: RacesState, early: bool = False) -> RacesState:
    """OR-5: floor(house share % of the pool) goes to the house and the race begins."""
    if BETTING in ctx.deadlines:
        ctx.cancel_deadline(BETTING)
    state.house_share = state.pool * state.settings.house_share_percent // 100
    ctx.ledger.move(pool(ctx.game_id), HOUSE, CHIPS, state.house_share, "OR-5 house share")
    ctx.record(events.BettingClosed(pool=state.pool, house_share=state.house_share, early=early))
    racing.start_race(ctx, state)
    announce(
        ctx, "betting_closed", "betting closed, the race begins",
        early=early, pool=state.pool, house_share=state.house_share, prize=state.prize,
        house_share_percent=state.settings.house_share_percent, bets=bets_view(state),
        horses=field_view(state), length=state.length, riders=racing.riders(state),
        idle_at=ctx.deadlines.get(racing.IDLE),
    )
    return state
