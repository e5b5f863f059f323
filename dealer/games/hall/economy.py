"""Random cards, packs and the Croupier (RULES GH-2 to GH-5), in the cycle's accounts (GH-1)."""

from __future__ import annotations

from dealer.cards import CATALOGUE
from dealer.fairness import FairSource
from dealer.games.base import Context, Rejected
from dealer.games.hall import events
from dealer.games.hall.commands import Buy, OpenPack
from dealer.games.hall.croupier import croupier_lines
from dealer.games.hall.items import PACK_NAMES, card_label, label, pack_item
from dealer.games.hall.state import Happening, HallState
from dealer.ledger import CHIPS, VERTEBRAE

# GH-4: what a pack holds: (random cards at the usual holo chance, guaranteed holographic cards).
PACKS: dict[str, tuple[int, int]] = {"handy": (3, 0), "deck": (5, 0), "legendary": (5, 2)}

def draw_card(rng: FairSource, holo_percent: int | None, purpose: str) -> str:
    """A random card (GH-2, GH-3): its catalogue row, then its holo roll unless holographic by rule."""
    card = CATALOGUE[rng.below(len(CATALOGUE), f"{purpose}: card")]
    if holo_percent is None:
        return card.item(holo=True)
    return card.item(holo=rng.chance(holo_percent, 100, f"{purpose}: holo"))


def grant_cards(ctx: Context, name: str, count: int, holo_percent: int | None,
                memo: str) -> list[str]:
    """Draw ``count`` random cards and issue them from the mint to ``name``; return the items."""
    items = [draw_card(ctx.rng, holo_percent, memo) for _ in range(count)]
    for item in items:
        ctx.ledger.mint(ctx.scope.player(name), item, 1, memo)
    return items


def draw_span(ctx: Context, first: int) -> dict[str, int]:
    """GH-40: the counters a happening's draws used, for the phase summary."""
    return {"first_draw": first, "next_draw": ctx.rng.counter,
            "client_seeds": len(ctx.rng.client_seeds)}


def open_pack(ctx: Context, state: HallState, actor: str, command: OpenPack) -> None:
    """GH-4: discard the pack (to void) and grant what it holds."""
    item = pack_item(command.pack)
    name = PACK_NAMES[command.pack]
    account = ctx.scope.player(actor)
    if ctx.ledger.balance(account, item) < 1:
        raise Rejected(
            f"you hold no {name}", rule="GH-4",
            allowed=[f"buy {name.lower()} — {state.settings.prices()[name.lower()]} vertebrae (GH-5)",
                     "inventory"],
        )
    ctx.ledger.move(account, ctx.scope.void, item, 1, f"GH-4 open {name}")
    plain, holo = PACKS[command.pack]
    memo = f"GH-4 {name}"
    first = ctx.rng.counter
    cards = grant_cards(ctx, actor, plain, state.settings.holo_percent, memo)
    cards += grant_cards(ctx, actor, holo, None, memo)
    shown = [card_label(card) for card in cards]
    state.log.append(Happening(kind="opened", actor=actor, what=name, items=shown,
                               **draw_span(ctx, first)))
    ctx.record(events.PackOpened(player=actor, pack=command.pack, cards=cards))
    ctx.reply(
        actor, "confirmation", "hall/opened.txt", f"You opened a {name}",
        pack=name, cards=shown, plain=plain, holo=holo,
        holo_percent=state.settings.holo_percent,
    )


def buy(ctx: Context, state: HallState, actor: str, command: Buy) -> None:
    """GH-5: pay the Croupier (the house) in vertebrae; receive the wares from the mint."""
    prices = state.settings.prices()
    cost = prices[command.ware] * command.count
    account = ctx.scope.player(actor)
    held = ctx.ledger.balance(account, VERTEBRAE)
    what = _ware_label(command.ware, command.count)
    if held < cost:
        raise Rejected(
            f"{what} {'is' if command.count == 1 else 'are'} {cost} vertebrae and you have {held}",
            rule="GH-5",
            allowed=_instead(held, command, prices),
        )
    ctx.ledger.move(account, ctx.scope.house, VERTEBRAE, cost, f"GH-5 buy {what}")
    first = ctx.rng.counter
    cards = _deliver(ctx, state, actor, command)
    shown = [card_label(card) for card in cards]
    span = draw_span(ctx, first) if cards else {}
    state.log.append(Happening(kind="bought", actor=actor, what=what, cost=cost, items=shown,
                               **span))
    ctx.record(events.Bought(player=actor, ware=command.ware, count=command.count, cost=cost,
                             cards=cards))
    ctx.reply(
        actor, "confirmation", "hall/bought.txt", f"You bought {what}",
        what=what, cost=cost, cards=shown, vertebrae=ctx.ledger.balance(account, VERTEBRAE),
        chips=ctx.ledger.balance(account, CHIPS),
        holo_percent=state.settings.croupier_holo_percent,
    )


def _deliver(ctx: Context, state: HallState, actor: str, command: Buy) -> list[str]:
    """Issue the bought wares from the mint; return the cards drawn (if any)."""
    memo = f"GH-5 bought {command.ware}"
    if command.ware == "random card":
        # GH-5: the Croupier's random card is holographic with 10 % (setting), not GH-3's 5 %.
        return grant_cards(ctx, actor, command.count, state.settings.croupier_holo_percent, memo)
    if command.ware == "chip":
        # Choice: a bought chip is new currency from the mint, never the house's own chips,
        # so the Croupier can always sell (the seed: "at any time").
        ctx.ledger.mint(ctx.scope.player(actor), CHIPS, command.count, memo)
        return []
    ctx.ledger.mint(ctx.scope.player(actor), pack_item(command.ware.split()[0]), command.count, memo)
    return []


def _instead(held: int, refused: Buy, prices: dict[str, int]) -> list[str]:
    """What a refused buyer may buy instead: the most of that item it can pay for, then any."""
    price = prices[refused.ware]
    most = held // price
    lines = []
    if most >= 2:
        lines.append(f"buy {most} {refused.ware}s — {most * price} vertebrae, the most you "
                     "can pay for (GH-5)")
    lines += croupier_lines(held, prices)
    if not any(line.startswith("buy") for line in lines):
        lines.insert(0, "inventory — see what you hold (cards to trade, packs to open)")
    return lines


def give_starting_items(ctx: Context, state: HallState, name: str) -> list[str]:
    """GH-1: a member's starting items, issued by the mint when it joins; their labels."""
    bundle = {CHIPS: state.settings.starting_chips, VERTEBRAE: state.settings.starting_vertebrae}
    given = []
    for item, amount in bundle.items():
        if amount:
            ctx.ledger.mint(ctx.scope.player(name), item, amount, "GH-1 starting items")
            given.append(label(item, amount))
    return given


def grant(ctx: Context, state: HallState, name: str, item: str, amount: int) -> None:
    """``dealer grant NAME ITEM N --game ID``: the mint issues into a member's inventory (GH-1)."""
    member = state.member(name)
    if state.status == "finished":
        raise Rejected(f"cycle {ctx.game_id} is over ({state.winner} won it); its inventories "
                       "are closed", rule="GH-8")
    if member is None:
        raise Rejected(f"{name} has not joined cycle {ctx.game_id}: a player's inventory in a "
                       "cycle starts when it joins", rule="GH-1")
    ctx.ledger.mint(ctx.scope.player(member.name), item, amount, "GH-1 granted by the dealer")
    what = label(item, amount)
    state.log.append(Happening(kind="granted", actor=member.name, items=[what]))
    ctx.record(events.Granted(player=member.name, item=item, amount=amount))
    ctx.reply(member.name, "notice", "hall/granted.txt", f"The host granted you {what}",
              what=what, **_balances(ctx, member.name))


def _balances(ctx: Context, name: str) -> dict[str, int]:
    account = ctx.scope.player(name)
    return {"chips": ctx.ledger.balance(account, CHIPS),
            "vertebrae": ctx.ledger.balance(account, VERTEBRAE)}


def _ware_label(ware: str, count: int) -> str:
    if ware == "chip":
        return label(CHIPS, count)
    if ware == "random card":
        return "a random card" if count == 1 else f"{count} random cards"
    kind = ware.split()[0]
    return f"a {PACK_NAMES[kind]}" if count == 1 else label(pack_item(kind), count)
