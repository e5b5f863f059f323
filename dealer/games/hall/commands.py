"""The Hall's player commands, each declared once (``COMMANDS``)."""

from __future__ import annotations

from dataclasses import dataclass

from dealer.clock import format_utc
from dealer.games.base import Rejected
from dealer.games.commands import (
    Choice, Command, Commands, Example, Field, Player, Whole, receipts_command,
)
from dealer.games.hall.croupier import croupier_examples, croupier_note
from dealer.games.hall.fights import FIGHT_COMMANDS
from dealer.games.hall.governance import GOVERNANCE_COMMANDS
from dealer.games.hall.items import labels, parse_bundle
from dealer.games.hall.state import HallState, Offer

MAX_BUY = 100
"""An operational limit, not a rule: a ``buy`` line buys at most 100, so replies stay readable."""


@dataclass(frozen=True)
class Join:
    """Join the current cycle (GH-6: active in the phase it joins)."""


@dataclass(frozen=True)
class ShowInventory:
    """Ask for one's own inventory (GH-7: not an action)."""


@dataclass(frozen=True)
class OpenPack:
    """Open a pack one holds (GH-4)."""

    pack: str  # handy | deck | legendary


@dataclass(frozen=True)
class Buy:
    """Buy from the Croupier (GH-5)."""

    ware: str  # a key of croupier.PRICES
    count: int = 1


@dataclass(frozen=True)
class MakeOffer:
    """Offer a trade to another player (GH-1)."""

    target: str
    gives: tuple[tuple[str, int], ...]
    wants: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class AnswerOffer:
    """Accept, decline or withdraw an open offer (GH-1)."""

    verb: str  # accept | decline | withdraw
    offer: int


@dataclass(frozen=True)
class Gift:
    """Gift a random card to another player (GH-7)."""

    receiver: str


def _buy(count: int | None, ware: str, count_after: int | None) -> Buy:
    if count is not None and count_after is not None:
        raise Rejected("give the count once ('buy 3 chips' or 'buy chip 3')")
    return Buy(ware, count or count_after or 1)


def _offer(gives: tuple[tuple[str, int], ...], target: str,
           wants: tuple[tuple[str, int], ...]) -> MakeOffer:
    return MakeOffer(target, gives, wants)


class Bundle(Field):
    """One side of an offer: items joined by ``and``/commas, or ``nothing`` (GH-1)."""

    label = "ITEMS"

    def __init__(self, lazy: bool = False) -> None:
        self.pattern = r".+?" if lazy else r".+"

    def convert(self, text: str) -> tuple[tuple[str, int], ...]:
        """The items and amounts, sorted (so that equal offers compare equal)."""
        return tuple(sorted(parse_bundle(text).items()))


# --- when each command is valid, and the help written for the cycle as it stands ----------


def _may_gift(state: HallState, actor: str) -> bool:
    """GH-7: once per phase, to another member."""
    member = state.member(actor)
    return (state.status == "running" and member is not None and member.gifted is None
            and bool(state.others(actor)))


def _gift_now(state: HallState, actor: str) -> list[Example]:
    # GH-1, GH-7: trades and gifts go to members only, so the examples name members.
    others = state.others(actor)
    return [Example(f"gift {others[0]}", "once per phase, a member receives a random card "
                                         f"(GH-7); members you can gift: {', '.join(others)}")]


def _may_offer(state: HallState, actor: str) -> bool:
    return state.running_member(actor) and bool(state.others(actor))


def _offer_now(state: HallState, actor: str) -> list[Example]:
    others = state.others(actor)
    return [Example(f"offer 2 chips and 7H to {others[0]} for AS",
                    f"propose a trade; {others[0]} must accept (GH-1); members: "
                    f"{', '.join(others)}")]


def _vertebrae(state: HallState, actor: str) -> int | None:
    """A member's vertebrae after the last step (None for anyone else, or when not running)."""
    member = state.member(actor) if state.status == "running" else None
    return None if member is None else state.vertebrae.get(member.name, 0)


def _may_buy(state: HallState, actor: str) -> bool:
    """GH-5: help never offers a purchase the Croupier would refuse."""
    held = _vertebrae(state, actor)
    return held is not None and held >= min(state.settings.prices().values())


def _opening_note(state: HallState, actor: str) -> str | None:
    if state.status == "pending":
        return f"the Hall opens at {format_utc(state.opens_at)}; then: join"
    return None


def _offer_summary(offer: Offer) -> str:
    return (f"{', '.join(labels(offer.gives)) or 'nothing'} for "
            f"{', '.join(labels(offer.wants)) or 'nothing'}")


def _answers_now(state: HallState, actor: str) -> list[Example]:
    """One accept and one decline line per open offer made to ``actor``."""
    lines = []
    for offer in state.offers:
        if offer.target == actor:
            lines.append(Example(f"accept offer {offer.id}",
                                 f"from {offer.offerer}: {_offer_summary(offer)}"))
            lines.append(Example(f"decline offer {offer.id}", "refuse it"))
    return lines


def _withdrawals_now(state: HallState, actor: str) -> list[Example]:
    return [Example(f"withdraw offer {offer.id}",
                    f"your offer to {offer.target}: {_offer_summary(offer)}")
            for offer in state.offers if offer.offerer == actor]


PACK = Choice({"handy": "handy", "deck": "deck", "legendary": "legendary"}, "PACK")
WARE = Choice(
    {
        "random card": "random card", "random cards": "random card",
        "card": "random card", "cards": "random card",
        "handy pack": "handy pack", "handy packs": "handy pack",
        "deck pack": "deck pack", "deck packs": "deck pack",
        "legendary pack": "legendary pack", "legendary packs": "legendary pack",
        "chip": "chip", "chips": "chip",
    },
    "ITEM",
)
COUNT = Whole(1, MAX_BUY, complaint="buy between {least} and {most} at a time", pattern=r"\d+")
OFFER_NUMBER = Whole(1, complaint="'{text}' is not an offer number", pattern=r"#?\d{1,9}",
                     strip="#")

COMMANDS = Commands(
    "a Hall command",
    [
        Command("join [[the] [gilded] hall]", Join, rule="GH-6",
                examples=[Example("join", "take part in this cycle of the Hall"),
                          "join the gilded hall"],
                valid=lambda s, actor: s.status == "running" and s.member(actor) is None,
                note=_opening_note),
        Command("[show] [my] inventory|inv", ShowInventory, rule="GH-7",
                examples=[Example("inventory", "see your chips, vertebrae, cards and packs; "
                                               "looking is not an action"),
                          "show my inventory", "my inventory", "inv"]),
        # The Hall's whole record of a player is its inventory (with its open offers).
        receipts_command("your inventory in this cycle and your open offers, in full", rule="GH-7"),
        Command(
            "open [a|an|my] {pack} [pack]", OpenPack, fields={"pack": PACK}, rule="GH-4",
            examples=[
                Example("open handy pack", "open a Handy Pack you hold: 3 random cards"),
                Example("open deck pack", "open a Deck Pack you hold: 5 random cards"),
                Example("open legendary pack",
                        "open a Legendary Pack: 5 random cards + 2 holographic"),
            ],
            valid=HallState.running_member, refusal="only packs can be opened", usage="open PACK",
        ),
        Command(
            "buy [{count} [x]] [a|an] {ware} [{count_after}]", _buy,
            fields={"count": COUNT, "ware": WARE, "count_after": COUNT}, rule="GH-5",
            examples=[
                Example("buy random card", "5 vertebrae, 10 % holographic"),
                Example("buy handy pack", "12 vertebrae"),
                Example("buy deck pack", "18 vertebrae"),
                Example("buy legendary pack", "50 vertebrae"),
                Example("buy chip 3", "25 vertebrae per chip; a count works with every item"),
            ],
            valid=_may_buy, usage="buy [N] ITEM",
            suggest=lambda s, actor: croupier_examples(_vertebrae(s, actor) or 0,
                                                       s.settings.prices()),
            note=lambda s, actor: (None if _vertebrae(s, actor) is None
                                   else croupier_note(_vertebrae(s, actor) or 0,
                                                      s.settings.prices())),
            refusal="the Croupier does not sell that; it sells random cards, handy, deck and "
                    "legendary packs, and chips",
        ),
        Command(
            "offer {gives} to {target} for {wants}", _offer, rule="GH-1",
            fields={"gives": Bundle(lazy=True), "target": Player(lazy=True), "wants": Bundle()},
            examples=[Example("offer 2 chips and 7H to bob for AS",
                              "propose a trade; bob must accept")],
            valid=_may_offer, suggest=_offer_now, refusal="an offer reads 'offer ITEMS to PLAYER for ITEMS'",
        ),
        ANSWER := Command(
            "{verb} offer {offer}", AnswerOffer, rule="GH-1",
            fields={"verb": Choice(("accept", "decline"), "accept|decline"),
                    "offer": OFFER_NUMBER},
            examples=[Example("accept offer 12",
                              "take offer 12 made to you: both sides swap at once"),
                      Example("decline offer 12", "refuse offer 12 made to you"),
                      "Decline offer #3"],
            valid=lambda s, actor: (s.running_member(actor)
                                    and any(o.target == actor for o in s.offers)),
            suggest=_answers_now,
        ),
        WITHDRAW := Command(
            "withdraw offer {offer}", lambda offer: AnswerOffer("withdraw", offer), rule="GH-1",
            fields={"offer": OFFER_NUMBER},
            examples=[Example("withdraw offer 12", "take back an offer you made")],
            valid=lambda s, actor: (s.running_member(actor)
                                    and any(o.offerer == actor for o in s.offers)),
            suggest=_withdrawals_now,
        ),
        Command(
            "gift [[a card] to] {receiver}", Gift, fields={"receiver": Player()},
            rule="GH-7",
            examples=[Example("gift bob", "once per phase, bob receives a random card"),
                      "gift a card to carol"],
            valid=_may_gift, suggest=_gift_now, refusal="a gift reads 'gift PLAYER'",
        ),
        *FIGHT_COMMANDS,
        *GOVERNANCE_COMMANDS,
    ],
)
"""The Hall's commands, in the order ``help`` lists them."""
