"""What may be played (GH-13) and where a match's cards are: held by the match, then home."""

from __future__ import annotations

from dealer.cards import Card, card_of_item
from dealer.games.base import Context
from dealer.games.exoptosis.state import ExoptosisState, Held
from dealer.games.hall.items import card_label, is_card


def may_play(card: Card, last: Card | None) -> bool:
    """GH-13: whether ``card`` may be played on ``last`` (None: the first card, non-special).
    On a Joker only its colour, a Joker included (interpretation: "only cards of its colour"
    is read before "a Joker can be played upon anything"); a Joker on anything else; else a
    value equal or one apart, or a non-special card of the opposite colour."""
    if last is None:
        return not card.special
    if last.is_joker:
        return card.colour == last.colour
    if card.is_joker:
        return True
    assert card.value is not None and last.value is not None
    if abs(card.value - last.value) <= 1:
        return True
    return not card.special and card.colour != last.colour


def playable(state: ExoptosisState, name: str) -> list[Held]:
    """The cards of ``name``'s hand it may play now (GH-13)."""
    seat = state.seat(name)
    if seat is None or not seat.hand:
        return []
    return [held for held in seat.hand if may_play(held.card, state.last_card)]


def label(held: Held) -> str:
    """``7 of Hearts`` or ``holo 7 of Hearts``."""
    return card_label(held.item)


def labels(hand: list[Held]) -> list[str]:
    """The labels of a hand, in the order it holds them."""
    return [label(held) for held in hand]


def free_cards(ctx: Context, name: str) -> dict[str, int]:
    """GH-14: the cards of ``name``'s inventory in no match."""
    held = ctx.ledger.holdings(ctx.scope.player(name))
    return {item: n for item, n in sorted(held.items()) if is_card(item)}


def take(ctx: Context, owner: str, item: str, why: str) -> Held:
    """Move one card from ``owner``'s inventory into the match's account (GH-10)."""
    ctx.ledger.move(ctx.scope.player(owner), ctx.scope.pool(ctx.game_id), item, 1, why)
    return Held(item=item, owner=owner)


def give_back(ctx: Context, held: Held, why: str) -> None:
    """Move one card from the match's account back to its owner's inventory."""
    ctx.ledger.move(ctx.scope.pool(ctx.game_id), ctx.scope.player(held.owner), held.item, 1, why)


def draw(ctx: Context, name: str, why: str, unlike: str | None = None) -> Held | None:
    """GH-14: a fair random card of ``name``'s in no match, or None; ``unlike``: GH-15's Queen."""
    cards = free_cards(ctx, name)
    if unlike is not None:
        cards = {item: n for item, n in cards.items() if _code(item) != _code(unlike)}
    units = [item for item, n in cards.items() for _ in range(n)]
    if not units:
        return None
    item = units[ctx.rng.below(len(units), f"GH-14 {name} draws")]
    return take(ctx, name, item, why)


def _code(item: str) -> str:
    parsed = card_of_item(item)
    assert parsed is not None
    return parsed[0].code


def note_spare(ctx: Context, state: ExoptosisState) -> None:
    """Keep each participant's cards in no match in the state, for ``help`` (GH-14: add or ask)."""
    for seat in state.seats:
        seat.spare = [item for item, n in free_cards(ctx, seat.name).items()
                      for _ in range(n)] if seat.out is None and state.phase == "play" else []
