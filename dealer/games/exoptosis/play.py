"""Taking a turn (RULES GH-13 to GH-15, GH-17): play, add, ask, give, and a turn skipped."""

from __future__ import annotations

from dealer.cards import UnknownCard, parse_card
from dealer.clock import format_utc
from dealer.games.base import Context, Rejected
from dealer.games.names import read_names, split_name
from dealer.games.exoptosis import events
from dealer.games.exoptosis.cards import (
    draw, free_cards, give_back, label, may_play, playable, take,
)
from dealer.games.exoptosis.commands import COMMANDS, Add, Ask, CardChoice, Give, Play
from dealer.games.exoptosis.setup import pick
from dealer.games.exoptosis.state import Asked, ExoptosisState, Held, Seat
from dealer.games.exoptosis.table import (
    board, empty_hand_winner, ended_board, finish, next_in_order, pass_turn,
)
from dealer.games.hall.items import card_label

ACE_DRAWS = 2  # GH-15: the Ace's target draws 2


def _in_hand(seat: Seat, choice: CardChoice) -> Held | None:
    """The copy of a named card in ``seat``'s hand (plain first unless ``holo`` was said)."""
    counts: dict[str, int] = {}
    for held in seat.hand or []:
        counts[held.item] = counts.get(held.item, 0) + 1
    item = pick(counts, choice)
    return next((h for h in seat.hand or [] if h.item == item), None) if item else None


def require_turn(ctx: Context, state: ExoptosisState, seat: Seat, what: str) -> None:
    """Refuse a turn's command from anyone whose turn it is not (GH-12), or sent before its turn
    began: it came late (a daemon down), after its time's turn passed (GH-17, docs/EXOPTOSIS.md)."""
    if state.phase != "play":
        raise Rejected(f"you can {what} only once play has begun; now is the "
                       f"{state.phase}", rule="GH-12")
    if state.current != seat.name:
        raise Rejected(f"it is {state.current}'s turn, not yours; you can {what} on your turn",
                       rule="GH-12")
    if state.turn_began_at is not None and ctx.now < state.turn_began_at:
        raise Rejected(f"sent before your turn began (at {format_utc(state.turn_began_at)}), in a turn "
                       f"that has passed since; you can {what} now", rule="GH-17")
    if state.asked is not None:
        raise Rejected(f"you asked {state.asked.giver} for a card; wait until it gives one",
                       rule="GH-14")


def _participant(state: ExoptosisState, name: str, rule: str) -> Seat:
    seat = state.seat(name)
    if seat is None or seat.out is not None:
        names = ", ".join(s.name for s in state.remaining)
        raise Rejected(f"{name} is not a participant still in this match; participants: {names}",
                       rule=rule)
    return seat


def _why_not(card_name: str, state: ExoptosisState) -> str:
    """GH-13 in words, for the card refused."""
    last = state.last_card
    if last is None:
        return f"{card_name} is special, and the first card of the match must be non-special"
    if last.is_joker:
        return (f"on the {last.name} only {last.colour} cards may be played; "
                f"{card_name} is not {last.colour}")
    return (f"{card_name} cannot be played on the {last.name} (value {last.value}): a card must "
            "be of value equal to, one above or one below it, or, if non-special, of the "
            "opposite colour")


def play(ctx: Context, state: ExoptosisState, seat: Seat, command: Play) -> None:
    """GH-13: play a card of one's hand on the last one; GH-15: its effect, on the targets named."""
    require_turn(ctx, state, seat, "play")
    held = _in_hand(seat, command.card)
    if held is None:
        raise Rejected(f"{command.card[0].name} is not in your hand", rule="GH-13",
                       allowed=COMMANDS.help(state, seat.name))
    if not may_play(held.card, state.last_card):
        raise Rejected(_why_not(held.card.name, state), rule="GH-13",
                       allowed=COMMANDS.help(state, seat.name))
    targets = _targets(state, seat, held, command.targets)
    assert seat.hand is not None
    seat.hand.remove(held)
    state.played.append(held)
    state.last = held.card.code
    effect = _effect(ctx, state, seat, held, targets)
    ctx.record(events.CardPlayed(player=seat.name, card=held.item,
                                 targets=[t if isinstance(t, str) else t.item for t in targets],
                                 effect=effect))
    winner = empty_hand_winner(state, seat.name)
    if winner is None:
        pass_turn(ctx, state)
    # The play is posted first, with the board it left (the pool not yet taken); the
    # result follows.
    ctx.post("played", "exoptosis/played.txt", f"{seat.name} plays {label(held)}",
             name=seat.name, card=label(held), effect=effect, winner=winner,
             **(ended_board(ctx, state) if winner else board(ctx, state)))
    if winner is not None:
        finish(ctx, state, "won", winner)


def _targets(state: ExoptosisState, seat: Seat, held: Held, words: tuple[str, ...]) -> list:
    """GH-15: an effect's targets checked (King: two different ones, interpretation)."""
    rank = held.card.rank
    name = label(held)
    # Names hold spaces ("Mary Ann"): each target is the longest run of words naming a
    # participant, so "on Mary Ann bob" names two and "on Mary Ann 7H" one and a card.
    participants = [s.name for s in state.seats]
    words = tuple(words or ())  # no "on ..." at all
    if rank in ("A", "K"):
        words = tuple(read_names(words, participants))
    if rank == "A":
        if len(words) != 1:
            raise Rejected(f"the {name} needs one other participant: 'play {held.card.code} on "
                           "NAME'", rule="GH-15")
        target = _participant(state, words[0], "GH-15")
        if target.name == seat.name:
            raise Rejected(f"the {name} targets another participant, not yourself", rule="GH-15")
        return [target.name]
    if rank == "K":
        if len(words) != 2:
            raise Rejected(f"the {name} needs two participants: 'play {held.card.code} on NAME "
                           "NAME' (you may name yourself)", rule="GH-15")
        first, second = (_participant(state, w, "GH-15") for w in words)
        if first.name == second.name:
            raise Rejected(f"the {name} needs two different participants", rule="GH-15")
        return [first.name, second.name]
    if rank == "Q":
        if len(words) < 2:
            raise Rejected(f"the {name} needs a participant and a card of their hand: 'play "
                           f"{held.card.code} on NAME CARD'", rule="GH-15")
        named, rest = split_name(words, participants)
        target = _participant(state, named, "GH-15")
        try:
            card, holo = parse_card(" ".join(rest))
        except UnknownCard as exc:
            raise Rejected(str(exc), rule="GH-15") from None
        chosen = _in_hand(target, (card, True if holo else None))
        if chosen is None or chosen is held:
            raise Rejected(f"{card.name} is not in {target.name}'s hand", rule="GH-15")
        return [target.name, chosen]
    if words:
        raise Rejected(f"the {name} has no effect that names a target; send 'play "
                       f"{held.card.code}'", rule="GH-15")
    return []


def _effect(ctx: Context, state: ExoptosisState, seat: Seat, held: Held, targets: list) -> list[str]:
    """GH-15: carry out the played card's effect; return what it did, in words."""
    rank = held.card.rank
    if rank == "A":
        return [_draws(ctx, state, targets[0], ACE_DRAWS, f"GH-15 {label(held)}")]
    if rank == "J":
        after = next_in_order(state, seat.name)
        return [_draws(ctx, state, after, 1, f"GH-15 {label(held)}")]
    if rank == "K":
        return [_draws(ctx, state, name, 1, f"GH-15 {label(held)}") for name in targets]
    if rank == "Q":
        name, chosen = targets
        target = state.seat(name)
        assert target is not None and target.hand is not None
        target.hand.remove(chosen)
        give_back(ctx, chosen, f"GH-15 {label(held)}")
        words = f"{label(chosen)} went back to {chosen.owner}'s inventory"
        drawn = draw(ctx, target.name, f"GH-15 {label(held)}", unlike=chosen.item)
        if drawn is None:
            return [f"{words}; {target.name} has no different card outside a match, so its draw "
                    "does nothing"]
        target.hand.append(drawn)
        return [f"{words}; {target.name} drew {label(drawn)}"]
    return []


def _draws(ctx: Context, state: ExoptosisState, name: str, count: int, why: str) -> str:
    """``name`` draws ``count`` cards (GH-14's "draw"); the words of what happened."""
    seat = state.seat(name)
    assert seat is not None and seat.hand is not None
    drawn = []
    for _ in range(count):
        card = draw(ctx, name, why)
        if card is None:
            break
        seat.hand.append(card)
        drawn.append(label(card))
    missing = count - len(drawn)
    text = f"{name} drew {', '.join(drawn)}" if drawn else f"{name} drew nothing"
    if missing:
        text += (f" ({missing} draw{'s' if missing > 1 else ''} did nothing: no card left in its "
                 "inventory outside a match)")
    return text


def add(ctx: Context, state: ExoptosisState, seat: Seat, command: Add) -> None:
    """GH-14: a participant that cannot play adds a card of its inventory; its turn ends."""
    require_turn(ctx, state, seat, "add a card")
    if playable(state, seat.name):
        raise Rejected("you can play a card, so you cannot add one", rule="GH-14",
                       allowed=COMMANDS.help(state, seat.name))
    item = pick(free_cards(ctx, seat.name), command.card)
    if item is None:
        raise Rejected(f"{command.card[0].name} is not in your inventory outside a match",
                       rule="GH-14", allowed=_add_lines(ctx, state, seat.name))
    held = take(ctx, seat.name, item, f"GH-14 {seat.name} adds a card")
    assert seat.hand is not None
    seat.hand.append(held)
    ctx.record(events.CardAdded(player=seat.name, card=item))
    pass_turn(ctx, state)
    ctx.post("added", "exoptosis/added.txt", f"{seat.name} adds a card", name=seat.name,
             card=label(held), **board(ctx, state))


def _add_lines(ctx: Context, state: ExoptosisState, name: str) -> list[str]:
    cards = free_cards(ctx, name)
    if not cards:
        return COMMANDS.help(state, name)
    return [f"add {card_label(item)} — a card of your inventory (GH-14)" for item in cards][:10]


def ask(ctx: Context, state: ExoptosisState, seat: Seat, command: Ask) -> None:
    """GH-14: one that can neither play nor add asks another, who has a turn's length to give."""
    require_turn(ctx, state, seat, "ask for a card")
    if playable(state, seat.name):
        raise Rejected("you can play a card, so you cannot ask for one", rule="GH-14",
                       allowed=COMMANDS.help(state, seat.name))
    if free_cards(ctx, seat.name):
        raise Rejected("you still have cards in your inventory outside a match: add one "
                       "instead", rule="GH-14", allowed=_add_lines(ctx, state, seat.name))
    giver = _participant(state, command.giver, "GH-14")
    if giver.name == seat.name:
        raise Rejected("ask another participant, not yourself", rule="GH-14")
    state.asked = Asked(asker=seat.name, giver=giver.name)
    until = ctx.now + state.settings.turn_length
    state.turn_ends_at = until
    ctx.cancel_deadline("turn")
    ctx.set_deadline("give", until)
    ctx.record(events.CardAsked(asker=seat.name, giver=giver.name))
    ctx.post("asked", "exoptosis/asked.txt", f"{seat.name} asks {giver.name} for a card",
             asker=seat.name, giver=giver.name, until=until, **board(ctx, state))


def give(ctx: Context, state: ExoptosisState, seat: Seat, command: Give | None) -> None:
    """GH-14: the asked gives a card of its hand (``command`` None: a fair random one, out of time)."""
    asked = state.asked
    if asked is None or asked.giver != seat.name:
        raise Rejected("nobody asked you for a card", rule="GH-14")
    assert seat.hand is not None
    if command is None:
        held = seat.hand[ctx.rng.below(len(seat.hand), f"GH-14 {seat.name} gives at random")]
    else:
        found = _in_hand(seat, command.card)
        if found is None:
            raise Rejected(f"{command.card[0].name} is not in your hand", rule="GH-14",
                           allowed=[f"give {h.card.code} — {label(h)} (GH-14)" for h in seat.hand])
        held = found
    asker = state.seat(asked.asker)
    assert asker is not None and asker.hand is not None
    seat.hand.remove(held)
    asker.hand.append(held)
    state.asked = None
    ctx.cancel_deadline("give")
    ctx.record(events.CardGiven(giver=seat.name, asker=asker.name, card=held.item,
                                random=command is None))
    # Interpretation (GH-16): a giver whose last card is given has no card in hand: it wins.
    winner = empty_hand_winner(state, seat.name)
    if winner is None:
        state.current = asker.name
        pass_turn(ctx, state)
    ctx.post("given", "exoptosis/given.txt", f"{seat.name} gives {asker.name} a card",
             giver=seat.name, asker=asker.name, card=label(held), random=command is None,
             winner=winner, **(ended_board(ctx, state) if winner else board(ctx, state)))
    if winner is not None:
        finish(ctx, state, "won", winner)


def skip(ctx: Context, state: ExoptosisState) -> None:
    """GH-17: a turn not taken within its length is skipped."""
    name = state.current
    assert name is not None
    turn = state.turn
    ctx.record(events.TurnSkipped(player=name, turn=turn))
    pass_turn(ctx, state)
    ctx.post("skipped", "exoptosis/skipped.txt", f"{name}'s turn is skipped", name=name,
             **board(ctx, state))
