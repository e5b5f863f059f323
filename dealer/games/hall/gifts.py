"""Card gifting (RULES GH-7) and what counts as an action (GH-6, GH-7)."""

from __future__ import annotations

from dealer.games.base import Context, Rejected
from dealer.games.hall import events
from dealer.games.hall.commands import Gift
from dealer.games.hall.economy import draw_span, grant_cards
from dealer.games.hall.items import card_count, card_label
from dealer.games.hall.state import GiftBonus, Happening, HallState

INACTIVE_EXTRA = 2  # GH-7: an inactive receiver gets 2 more cards
FEW_CARDS = 5  # GH-7: a receiver with fewer than 5 cards gets 1 more
FEW_EXTRA = 1


def gift(ctx: Context, state: HallState, actor: str, command: Gift) -> None:
    """GH-7: once per phase, give another member a random card, plus the extras it is due."""
    giver = state.member(actor)
    assert giver is not None  # the caller admits members only
    if giver.gifted is not None:
        raise Rejected(
            f"you already gifted {giver.gifted} in phase {state.phase}; one gift per phase",
            rule="GH-7",
        )
    receiver = state.member(command.receiver)
    if receiver is None:
        names = ", ".join(state.others(actor)) or "nobody yet"
        raise Rejected(f"{command.receiver} is not in the Hall", rule="GH-7",
                       allowed=[f"members you can gift: {names}"])
    if receiver.name == actor:
        raise Rejected("you cannot gift yourself; choose another player", rule="GH-7")
    # GH-7: both conditions are judged as things stand just before the gift. "Cards" counts
    # every card held, copies and holographic ones included (interpretation). The draws
    # come in this order: the gift's card, the 2 for inactivity, the 1 for few cards.
    inactive = receiver.inactive
    few = card_count(ctx.ledger, ctx.scope.player(receiver.name)) < FEW_CARDS
    count = 1 + (INACTIVE_EXTRA if inactive else 0) + (FEW_EXTRA if few else 0)
    first = ctx.rng.counter
    cards = grant_cards(ctx, receiver.name, count, state.settings.holo_percent,
                        f"GH-7 gift from {actor}")
    giver.gifted = receiver.name
    if inactive:
        state.bonuses.append(GiftBonus(giver=actor, receiver=receiver.name))
    shown = [card_label(card) for card in cards]
    state.log.append(Happening(kind="gift", actor=actor, other=receiver.name, items=shown,
                               what=_reasons(inactive, few), **draw_span(ctx, first)))
    ctx.record(events.GiftGiven(giver=actor, receiver=receiver.name, inactive=inactive,
                                few_cards=few, cards=cards))
    context = dict(giver=actor, receiver=receiver.name, cards=shown, inactive=inactive, few=few,
                   phase=state.phase, phase_ends_at=state.phase_ends_at)
    ctx.reply(actor, "confirmation", "hall/gift_sent.txt", f"Gift to {receiver.name}", **context)
    ctx.reply(receiver.name, "notice", "hall/gift_received.txt", f"A gift from {actor}",
              **context)


def _reasons(inactive: bool, few: bool) -> str:
    """``1 + 2 as inactive + 1 for fewer than 5 cards``: how the count came about."""
    reasons = ["1"]
    if inactive:
        reasons.append(f"{INACTIVE_EXTRA} as inactive")
    if few:
        reasons.append(f"{FEW_EXTRA} for fewer than {FEW_CARDS} cards")
    return " + ".join(reasons)


def count_action(ctx: Context, state: HallState, actor: str) -> None:
    """GH-6: ``actor`` acted; GH-7: a gift's inactive receiver acting earns its giver a random card."""
    member = state.member(actor)
    if member is None:
        return
    member.acted = True
    due = [bonus for bonus in state.bonuses if bonus.receiver == actor]
    state.bonuses = [bonus for bonus in state.bonuses if bonus.receiver != actor]
    for bonus in due:
        first = ctx.rng.counter
        cards = grant_cards(ctx, bonus.giver, 1, state.settings.holo_percent,
                            f"GH-7 {actor} acted after a gift")
        shown = [card_label(card) for card in cards]
        state.log.append(Happening(kind="gift_bonus", actor=bonus.giver, other=actor, items=shown,
                                   **draw_span(ctx, first)))
        ctx.record(events.GiftBonus(giver=bonus.giver, receiver=actor, cards=cards))
        ctx.reply(bonus.giver, "notice", "hall/gift_bonus.txt", f"{actor} acted: a card for you",
                  giver=bonus.giver, receiver=actor, cards=shown)
