"""Trading by offer and acceptance (RULES GH-1): one atomic swap, or nothing."""

from __future__ import annotations

from dealer.cards import card_of_item
from dealer.games.base import Context, Rejected
from dealer.games.hall import events
from dealer.games.hall.commands import ANSWER, WITHDRAW, AnswerOffer, MakeOffer
from dealer.games.hall.items import label, labels
from dealer.games.hall.state import Happening, HallState, Offer


def make_offer(ctx: Context, state: HallState, actor: str, command: MakeOffer) -> None:
    """Record an offer from ``actor`` to another member and tell both."""
    target = state.member(command.target)
    if target is None:
        raise Rejected(f"{command.target} is not in the Hall", rule="GH-1",
                       allowed=_member_names(state, actor))
    if target.name == actor:
        raise Rejected("you cannot trade with yourself", rule="GH-1")
    gives, wants = dict(command.gives), dict(command.wants)
    if not gives and not wants:
        raise Rejected("an offer of nothing for nothing trades nothing", rule="GH-1")
    # Interpretation: the offerer must hold what it offers now; what it asks for is checked
    # only at acceptance (the target may obtain it in the meantime).
    shortfall = missing(ctx, actor, gives)
    if shortfall:
        raise Rejected(f"you cannot offer what you do not hold: {'; '.join(shortfall)}",
                       rule="GH-1", allowed=["inventory — see what you hold"])
    offer = Offer(id=state.next_offer, offerer=actor, target=target.name, gives=gives,
                  wants=wants, made_at=ctx.now)
    state.next_offer += 1
    state.offers.append(offer)
    ctx.record(events.OfferMade(id=offer.id, offerer=actor, target=target.name, gives=gives,
                                wants=wants))
    context = _offer_context(state, offer)
    ctx.reply(actor, "confirmation", "hall/offer_made.txt", f"Offer {offer.id} sent", **context)
    ctx.reply(target.name, "notice", "hall/offer_received.txt",
              f"{actor} offers you a trade (offer {offer.id})", **context)


def answer_offer(ctx: Context, state: HallState, actor: str, command: AnswerOffer) -> None:
    """Accept, decline or withdraw an open offer."""
    offer = next((o for o in state.offers if o.id == command.offer), None)
    if offer is None:
        raise Rejected(f"there is no open offer {command.offer}", rule="GH-1",
                       allowed=open_offer_lines(state, actor))
    if command.verb == "withdraw":
        _withdraw(ctx, state, actor, offer)
    elif actor != offer.target:
        raise Rejected(f"offer {offer.id} was made to {offer.target}, not to you", rule="GH-1",
                       allowed=open_offer_lines(state, actor))
    elif command.verb == "accept":
        _accept(ctx, state, actor, offer)
    else:
        _decline(ctx, state, actor, offer)


def _accept(ctx: Context, state: HallState, actor: str, offer: Offer) -> None:
    """The atomic swap: check both sides first, then move everything, or fail as a whole."""
    if not _can_swap(ctx, offer):
        _fail(ctx, state, offer)
        return
    memo = f"GH-1 trade {offer.id}"
    offerer, target = ctx.scope.player(offer.offerer), ctx.scope.player(actor)
    for item, amount in sorted(offer.gives.items()):
        ctx.ledger.move(offerer, target, item, amount, memo)
    for item, amount in sorted(offer.wants.items()):
        ctx.ledger.move(target, offerer, item, amount, memo)
    state.offers.remove(offer)
    state.log.append(Happening(kind="trade", actor=offer.offerer, other=actor, offer=offer.id,
                               items=labels(offer.gives), back=labels(offer.wants)))
    ctx.record(events.TradeDone(id=offer.id, offerer=offer.offerer, target=actor,
                                gives=offer.gives, wants=offer.wants))
    context = _offer_context(state, offer)
    for name in (actor, offer.offerer):
        ctx.reply(name, "confirmation" if name == actor else "notice", "hall/trade_done.txt",
                  f"Trade {offer.id} done", reader=name, **context)


def _can_swap(ctx: Context, offer: Offer) -> bool:
    return not (missing(ctx, offer.offerer, offer.gives) or missing(ctx, offer.target, offer.wants))


def _fail(ctx: Context, state: HallState, offer: Offer) -> None:
    """GH-1 (interpretation): an acceptance that cannot be completed moves nothing, closes the offer."""
    state.offers.remove(offer)

    def why(reader: str | None) -> str:
        """Each side's shortfall, in the second person for ``reader``."""
        gaps = []
        for name, bundle in ((offer.offerer, offer.gives), (offer.target, offer.wants)):
            gaps += missing(ctx, name, bundle, subject="you" if name == reader else name)
        return "; ".join(gaps)

    state.log.append(Happening(kind="trade_failed", actor=offer.offerer, other=offer.target,
                               offer=offer.id, items=labels(offer.gives),
                               back=labels(offer.wants), what=why(None)))
    ctx.record(events.TradeFailed(id=offer.id, offerer=offer.offerer, target=offer.target,
                                  why=why(None)))
    context = _offer_context(state, offer)
    for name in (offer.target, offer.offerer):
        ctx.reply(name, "notice", "hall/trade_failed.txt", f"Offer {offer.id} failed",
                  reader=name, why=why(name), **context)


def _decline(ctx: Context, state: HallState, actor: str, offer: Offer) -> None:
    state.offers.remove(offer)
    ctx.record(events.OfferDeclined(id=offer.id, by=actor))
    _tell_closed(ctx, state, offer, actor, "declined")


def _withdraw(ctx: Context, state: HallState, actor: str, offer: Offer) -> None:
    if actor != offer.offerer:
        raise Rejected(f"only {offer.offerer} can withdraw offer {offer.id}", rule="GH-1",
                       allowed=open_offer_lines(state, actor))
    state.offers.remove(offer)
    ctx.record(events.OfferWithdrawn(id=offer.id, by=actor))
    _tell_closed(ctx, state, offer, actor, "withdrawn")


def _tell_closed(ctx: Context, state: HallState, offer: Offer, actor: str, how: str) -> None:
    context = _offer_context(state, offer)
    other = offer.target if actor == offer.offerer else offer.offerer
    ctx.reply(actor, "confirmation", "hall/offer_closed.txt", f"Offer {offer.id} {how}",
              how=how, by=actor, reader=actor, **context)
    ctx.reply(other, "notice", "hall/offer_closed.txt", f"Offer {offer.id} {how}",
              how=how, by=actor, reader=other, **context)


def expire_offers(state: HallState) -> list[Offer]:
    """GH-1 (interpretation): every open offer lapses when its phase ends; return them."""
    expired, state.offers = state.offers, []
    return expired


def missing(ctx: Context, name: str, bundle: dict[str, int], subject: str = "you") -> list[str]:
    """What ``name`` lacks to hand over ``bundle``, in words (``subject``: ``you`` or its name)."""
    you = subject == "you"
    gaps = []
    for item, amount in sorted(bundle.items()):
        held = ctx.ledger.balance(ctx.scope.player(name), item)
        if held < amount:
            gaps.append(
                f"{subject} {'do' if you else 'does'} not hold {label(item, amount)} "
                f"({'you have' if you else 'it has'} {held})" + _holo_hint(ctx, name, item)
            )
    return gaps


def _holo_hint(ctx: Context, name: str, item: str) -> str:
    """A hint when the card is held only in its other (plain / holographic) form."""
    parsed = card_of_item(item)
    if parsed is None:
        return ""
    card, holo = parsed
    if ctx.ledger.balance(ctx.scope.player(name), card.item(not holo)) > 0:
        other = card.code if holo else f"holo {card.code}"
        return f"; the {'plain' if holo else 'holographic'} one is written '{other}'"
    return ""


def open_offer_lines(state: HallState, actor: str) -> list[str]:
    """Help lines for the offers ``actor`` may answer or withdraw now."""
    return ANSWER.help_now(state, actor) + WITHDRAW.help_now(state, actor)


def offers_of(state: HallState, actor: str) -> list[dict[str, object]]:
    """The open offers ``actor`` made or received, for its inventory reply."""
    return [
        dict(offer_words(offer), mine=offer.offerer == actor)
        for offer in state.offers
        if actor in (offer.offerer, offer.target)
    ]


def offer_words(offer: Offer) -> dict[str, object]:
    """An offer as the templates show it."""
    return dict(id=offer.id, offerer=offer.offerer, target=offer.target,
                gives=labels(offer.gives), wants=labels(offer.wants))


def _member_names(state: HallState, actor: str) -> list[str]:
    names = state.others(actor)
    return [f"members you can trade with: {', '.join(names)}"] if names else []


def _offer_context(state: HallState, offer: Offer) -> dict[str, object]:
    return {
        "offer": offer.id,
        "offerer": offer.offerer,
        "target": offer.target,
        "gives": labels(offer.gives),
        "wants": labels(offer.wants),
        "expires_at": state.phase_ends_at,
    }
