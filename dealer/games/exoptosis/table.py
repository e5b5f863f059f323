"""The board every Exoptosis post shows, and the moves all parts of a match share (GH-16 to GH-18)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dealer.games.base import Context
from dealer.games.exoptosis import events
from dealer.games.exoptosis.cards import give_back, label, labels
from dealer.games.exoptosis.state import ExoptosisState, Seat
from dealer.games.hall.economy import grant_cards
from dealer.games.hall.items import card_label
from dealer.ledger import CHIPS, VERTEBRAE

REWARD_CARDS = 3  # GH-18: 3 random cards
REWARD_VERTEBRAE = (5, 16)  # GH-18: 5 to 16 vertebrae, uniform
REWARD_CHIPS = 2  # GH-18: 2 chips
HOLO_PERCENT = 5  # GH-3: a random card is holographic with 5 %


def pool(ctx: Context) -> str:
    """The match's account: its stakes and every card it holds (GH-10, GH-11)."""
    return ctx.scope.pool(ctx.game_id)


def pot(ctx: Context) -> int:
    """The chips in the pool."""
    return ctx.ledger.balance(pool(ctx), CHIPS)


def board(ctx: Context, state: ExoptosisState) -> dict[str, Any]:
    """The board: every hand (public once revealed, GH-10), the last card, the pool, the turn."""
    return dict(
        hands=[dict(name=s.name, cards=labels(s.hand or []), stake=s.stake)
               for s in state.remaining],
        out=[dict(name=s.name, why=s.out) for s in state.seats if s.out],
        last=card_label_of(state),
        pool=pot(ctx),
        current=state.current,
        turn=state.turn,
        turn_ends_at=state.turn_ends_at,
        asked=state.asked.model_dump() if state.asked else None,
    )


def card_label_of(state: ExoptosisState) -> str | None:
    """The last card played, as players read it."""
    return label(state.played[-1]) if state.played else None


def return_hand(ctx: Context, seat: Seat, why: str) -> list[str]:
    """Send every card of ``seat``'s hand home to its owner; return their labels."""
    shown = []
    for held in seat.hand or []:
        give_back(ctx, held, why)
        shown.append(f"{label(held)} to {held.owner}")
    seat.hand = [] if seat.hand is not None else None
    return shown


def leave(ctx: Context, state: ExoptosisState, seat: Seat, why: str) -> list[str]:
    """``seat`` leaves: its hand goes home at once (interpretation); the labels of those cards."""
    seat.out = why
    seat.settled = False
    home = return_hand(ctx, seat, f"GH-10 {seat.name} left the match")
    if state.current == seat.name and state.phase == "play":
        state.asked = None
    if state.asked and state.asked.giver == seat.name:
        state.asked = None  # the asker's turn goes on
    ctx.record(events.Left(player=seat.name, why=why))
    return home


def begin_turn(ctx: Context, state: ExoptosisState, name: str, at: datetime) -> None:
    """GH-12, GH-17: ``name``'s turn begins ``at`` and lasts ``turn_length``."""
    state.turn += 1
    state.current = name
    state.asked = None
    state.consents = []  # GH-16: consent counts within one turn
    state.turn_began_at, state.turn_ends_at = at, at + state.settings.turn_length
    ctx.cancel_deadline("give")
    ctx.set_deadline("turn", state.turn_ends_at)


def next_in_order(state: ExoptosisState, after: str) -> str:
    """The next remaining participant in turn order after ``after`` (GH-12)."""
    order = state.order
    start = order.index(after)
    for step in range(1, len(order) + 1):
        name = order[(start + step) % len(order)]
        seat = state.seat(name)
        if seat is not None and seat.out is None:
            return name
    return after


def pass_turn(ctx: Context, state: ExoptosisState) -> None:
    """The current turn ends; the next remaining participant's begins now."""
    assert state.current is not None
    begin_turn(ctx, state, next_in_order(state, state.current), ctx.now)


def empty_hand_winner(state: ExoptosisState, first: str | None = None) -> str | None:
    """GH-16: the first with no card wins (several at once: the one who acted first, interpretation)."""
    if state.phase != "play":
        return None
    names = state.order
    start = names.index(first) if first in names else 0
    for name in names[start:] + names[:start]:
        seat = state.seat(name)
        if seat is not None and seat.out is None and seat.hand == []:
            return seat.name
    return None


def ended_board(ctx: Context, state: ExoptosisState) -> dict[str, Any]:
    """The board as the winning move left it (its post goes out before the result's)."""
    return {**board(ctx, state), "current": None, "asked": None, "turn_ends_at": None}


def check_last_one(ctx: Context, state: ExoptosisState) -> bool:
    """GH-16: the last one remaining wins (a fold is a forfeit, GH-11); whether the match ended."""
    remaining = state.remaining
    if len(remaining) >= 2:
        return False
    if state.phase in ("betting", "play") and len(remaining) == 1:
        finish(ctx, state, "won", remaining[0].name)
    else:
        finish(ctx, state, "cancelled", None)
    return True


def finish(ctx: Context, state: ExoptosisState, result: str, winner: str | None,
           cycle_winner: str | None = None) -> None:
    """The match ends: the pool to its winner (GH-16) or every stake back (GH-8), cards home (GH-10)."""
    account = pool(ctx)
    chips = pot(ctx)
    if winner is not None:
        ctx.ledger.move(account, ctx.scope.player(winner), CHIPS, chips, "GH-16 the winner takes the pool")
    else:
        # GH-16: "stakes are returned" to whoever put them in, forfeiters too (interpretation:
        # the seed's "any bet chips are returned to their original owners").
        for seat in state.seats:
            if seat.stake:
                ctx.ledger.move(account, ctx.scope.player(seat.name), CHIPS, seat.stake,
                                f"GH-16 stake returned ({result})")
    home = []
    for seat in state.seats:
        home += return_hand(ctx, seat, "GH-10 the match is over")
    for held in state.played:
        give_back(ctx, held, "GH-10 the match is over")
        home.append(f"{label(held)} to {held.owner}")
    state.played = []
    reward: dict[str, int] = {}
    reward_words = None
    if winner is not None and state.settings.fight == "battle":
        reward, reward_words = draw_reward(ctx, winner)
    state.phase = "finished"
    state.result = result  # type: ignore[assignment]
    state.winner = winner
    state.reward = reward_words
    state.current = None
    state.turn_ends_at = None
    state.asked = None
    for name in list(ctx.deadlines):
        ctx.cancel_deadline(name)
    ctx.record(events.MatchEnded(result=result, winner=winner, pool=chips, reward=reward))
    ctx.post("result", "exoptosis/result.txt", _subject(result, winner),
             result=result, winner=winner, pool=chips, home=home, reward=reward_words,
             fight=state.settings.fight, seed=ctx.rng.server_seed, cycle_winner=cycle_winner)


def _subject(result: str, winner: str | None) -> str:
    if result == "won":
        return f"{winner} wins the Exoptosis match"
    if result == "ended":
        return "The Exoptosis match ends with its cycle"
    return f"The Exoptosis match is {result}"


def draw_reward(ctx: Context, winner: str) -> tuple[dict[str, int], str]:
    """GH-18: one of 3 random cards, 5 to 16 vertebrae or 2 chips, at fair random, from the mint."""
    account = ctx.scope.player(winner)
    kind = ctx.rng.below(3, "GH-18 battle reward")
    if kind == 0:
        cards = grant_cards(ctx, winner, REWARD_CARDS, HOLO_PERCENT, "GH-18 battle reward")
        counted: dict[str, int] = {}
        for item in cards:
            counted[item] = counted.get(item, 0) + 1
        return counted, "3 random cards: " + ", ".join(card_label(c) for c in cards)
    if kind == 1:
        amount = ctx.rng.between(*REWARD_VERTEBRAE, "GH-18 vertebrae")
        ctx.ledger.mint(account, VERTEBRAE, amount, "GH-18 battle reward")
        return {VERTEBRAE: amount}, f"{amount} vertebrae"
    ctx.ledger.mint(account, CHIPS, REWARD_CHIPS, "GH-18 battle reward")
    return {CHIPS: REWARD_CHIPS}, f"{REWARD_CHIPS} chips"
