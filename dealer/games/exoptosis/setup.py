"""Choosing and revealing the hands (RULES GH-10), the betting (GH-11), the turn order (GH-12)."""

from __future__ import annotations

from itertools import groupby

from dealer.games.base import Context, Rejected
from dealer.games.exoptosis import events
from dealer.games.exoptosis.cards import free_cards, labels, take
from dealer.games.exoptosis.commands import CardChoice, ChooseHand, Fold, MatchBet, Raise
from dealer.games.exoptosis.state import ExoptosisState, Held, Seat
from dealer.games.exoptosis.table import (
    begin_turn, board, check_last_one, leave, pool, pot, return_hand,
)
from dealer.games.hall.items import card_label
from dealer.ledger import CHIPS

HAND_MIN = 4  # GH-10: at least 4 cards


def pick(cards: dict[str, int], choice: CardChoice) -> str | None:
    """The item a named card takes: the plain copy unless ``holo`` was said (interpretation)."""
    card, holo = choice
    options = [card.item(True)] if holo else [card.item(False), card.item(True)]
    return next((item for item in options if cards.get(item, 0) > 0), None)


def choose_hand(ctx: Context, state: ExoptosisState, seat: Seat, command: ChooseHand) -> None:
    """GH-10: take the chosen cards into the match (replacing the last choice); reveal once all chose."""
    if len(command.cards) < HAND_MIN:
        raise Rejected(f"a hand is at least {HAND_MIN} cards; you named {len(command.cards)}",
                       rule="GH-10")
    previous = list(seat.hand or [])
    # Judge the new choice against the inventory as if the previous hand were home.
    available = free_cards(ctx, seat.name)
    for held in previous:
        available[held.item] = available.get(held.item, 0) + 1
    items = []
    for choice in command.cards:
        item = pick(available, choice)
        if item is None:
            raise Rejected(f"{_named(choice)} is not in your inventory, or is held by a match "
                           "already; a hand is made of your own cards that are in no match",
                           rule="GH-10", allowed=_inventory_lines(ctx, seat.name, previous))
        available[item] -= 1
        items.append(item)
    return_hand(ctx, seat, f"GH-10 {seat.name} changed its hand")
    seat.hand = [take(ctx, seat.name, item, f"GH-10 {seat.name}'s hand") for item in items]
    ctx.record(events.HandChosen(player=seat.name, cards=items))
    waiting = [s.name for s in state.remaining if s.hand is None]
    ctx.reply(seat.name, "confirmation", "exoptosis/hand.txt", "Your Exoptosis hand",
              cards=labels(seat.hand), changed=bool(previous), waiting=waiting,
              setup_ends_at=ctx.deadlines.get("setup"))
    if not waiting:
        reveal(ctx, state)


def _named(choice: CardChoice) -> str:
    card, holo = choice
    return f"holo {card.name}" if holo else card.name


def _inventory_lines(ctx: Context, name: str, previous: list[Held]) -> list[str]:
    cards = free_cards(ctx, name)
    for held in previous:
        cards[held.item] = cards.get(held.item, 0) + 1
    shown = [f"{n} × {card_label(item)}" if n > 1 else card_label(item)
             for item, n in cards.items()]
    return [f"hand CARDS — your cards in no match: {', '.join(shown) or 'none'} (GH-10)"]


def close_setup(ctx: Context, state: ExoptosisState) -> None:
    """GH-10: the setup window is over: whoever has not chosen is out (losing nothing)."""
    for seat in state.remaining:
        if seat.hand is None:
            leave(ctx, state, seat, "chose no hand in time")
    reveal(ctx, state)


def reveal(ctx: Context, state: ExoptosisState) -> None:
    """GH-10: every hand revealed in one post; then the betting window (GH-11)."""
    ctx.cancel_deadline("setup")
    out = [s.name for s in state.seats if s.out]
    ctx.record(events.HandsRevealed(
        hands={s.name: [h.item for h in s.hand or []] for s in state.remaining}, out=out))
    if check_last_one(ctx, state):
        return
    state.phase = "betting"
    state.consents = []  # GH-16: the setup and the betting are one turn each (interpretation)
    closes = ctx.now + state.settings.betting_window
    ctx.set_deadline("betting", closes)
    ctx.post("revealed", "exoptosis/revealed.txt", "Exoptosis: the hands",
             closes=closes, **board(ctx, state))


# --- GH-11 betting --------------------------------------------------------------------


def highest(state: ExoptosisState) -> int:
    """The highest stake of a remaining participant."""
    return max((s.stake for s in state.remaining), default=0)


def bet(ctx: Context, state: ExoptosisState, seat: Seat, command: Raise | MatchBet | Fold) -> None:
    """GH-11: raise, match or fold."""
    if isinstance(command, Fold):
        refund = seat.stake
        if refund:
            ctx.ledger.move(pool(ctx), ctx.scope.player(seat.name), CHIPS, refund,
                            "GH-11 fold: stake returned")
        seat.stake = 0
        home = leave(ctx, state, seat, "folded")
        ctx.record(events.Bet(player=seat.name, verb="fold", paid=-refund, stake=0))
        ctx.post("fold", "exoptosis/fold.txt", f"{seat.name} folds", name=seat.name,
                 refund=refund, home=home, **board(ctx, state))
        if not check_last_one(ctx, state):
            _close_if_settled(ctx, state)
        return
    top = highest(state)
    # Interpretation: `raise N` raises the highest bet by N (not to N); the raiser pays what
    # takes its own stake to the new highest bet.
    target = top + command.amount if isinstance(command, Raise) else top
    owed = target - seat.stake
    account = ctx.scope.player(seat.name)
    held = ctx.ledger.balance(account, CHIPS)
    if owed > held:
        verb = f"raise by {command.amount}" if isinstance(command, Raise) else "match"
        raise Rejected(f"to {verb} you must put in {owed} chips (the bet would be {target}, "
                       f"your stake is {seat.stake}) and you have {held}", rule="GH-11",
                       allowed=_bet_lines(held, seat.stake, top))
    if owed:
        ctx.ledger.move(account, pool(ctx), CHIPS, owed, f"GH-11 {seat.name} bets")
    seat.stake = target
    if isinstance(command, Raise):
        for other in state.remaining:
            other.settled = False  # everyone must answer the new bet
    seat.settled = True
    verb = "raise" if isinstance(command, Raise) else "match"
    ctx.record(events.Bet(player=seat.name, verb=verb, paid=owed, stake=target))
    ctx.post("bet", "exoptosis/bet.txt", f"{seat.name}: {verb}", name=seat.name, verb=verb,
             paid=owed, target=target, closes=ctx.deadlines.get("betting"), **board(ctx, state))
    _close_if_settled(ctx, state)


def _bet_lines(held: int, stake: int, top: int) -> list[str]:
    lines = []
    if stake + held >= top:
        lines.append(f"match — put in {top - stake} to meet the bet of {top} (GH-11)")
    if stake + held > top:
        lines.append(f"raise {stake + held - top} — the most you can raise, all your chips (GH-11)")
    lines.append("fold — leave the match before play, losing nothing (GH-11)")
    return lines


def _close_if_settled(ctx: Context, state: ExoptosisState) -> None:
    """GH-11: the window closes early when everyone has matched the highest bet or declined to raise."""
    if state.phase == "betting" and all(s.settled for s in state.remaining):
        close_betting(ctx, state)


def close_betting(ctx: Context, state: ExoptosisState) -> None:
    """GH-11: the bet that stands is the highest two reached; then play begins (GH-12)."""
    ctx.cancel_deadline("betting")
    stakes = sorted((s.stake for s in state.remaining), reverse=True)
    standing = stakes[1] if len(stakes) > 1 else 0
    refunds: dict[str, int] = {}
    out = []
    for seat in state.remaining:
        if seat.stake > standing:
            refunds[seat.name] = seat.stake - standing
            seat.stake = standing
        elif seat.stake < standing:
            refunds[seat.name] = seat.stake
            seat.stake = 0
            out.append(seat.name)
        if refunds.get(seat.name):
            ctx.ledger.move(pool(ctx), ctx.scope.player(seat.name), CHIPS, refunds[seat.name],
                            "GH-11 returned when the betting closed")
    home = {}
    for name in out:
        seat = state.seat(name)
        assert seat is not None
        home[name] = leave(ctx, state, seat, "did not meet the bet")
    ctx.record(events.BettingClosed(bet=standing, refunds=refunds, out=out))
    ctx.post("betting_closed", "exoptosis/betting_closed.txt", "Exoptosis: the betting is over",
             bet=standing, refunds=refunds, out=out, pool_now=pot(ctx))
    if check_last_one(ctx, state):
        return
    begin_play(ctx, state)



def turn_order(ctx: Context, state: ExoptosisState) -> tuple[list[str], list[list[str]]]:
    """GH-12: by hand size, descending; each tied group shuffled by the fair source."""
    seats = sorted(state.remaining, key=lambda s: -len(s.hand or []))
    order: list[str] = []
    ties: list[list[str]] = []
    for size, group in groupby(seats, key=lambda s: len(s.hand or [])):
        names = [s.name for s in group]
        if len(names) > 1:
            ties.append(list(names))
            names = ctx.rng.shuffled(names, f"GH-12 tie of {size}-card hands")
        order += names
    return order, ties


def begin_play(ctx: Context, state: ExoptosisState) -> None:
    """Play begins: the order is fixed and the first participant's turn starts (GH-12)."""
    state.order, state.ties = turn_order(ctx, state)
    state.phase = "play"
    begin_turn(ctx, state, state.order[0], ctx.now)
    ctx.record(events.PlayBegan(order=state.order, ties=state.ties))
    ctx.post("play_began", "exoptosis/play_began.txt", "Exoptosis: play begins",
             order=state.order, ties=state.ties,
             sizes={s.name: len(s.hand or []) for s in state.remaining}, **board(ctx, state))
