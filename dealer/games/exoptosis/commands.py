"""An Exoptosis match's player commands; ``help`` offers what the match allows now."""

from __future__ import annotations

from dataclasses import dataclass

from dealer.cards import Card, UnknownCard, parse_card
from dealer.games.base import Rejected
from dealer.games.commands import (
    CardName, Command, Commands, Example, Field, Player, Whole, receipts_command,
)
from dealer.games.exoptosis.cards import label, playable
from dealer.games.exoptosis.state import ExoptosisState
from dealer.games.hall.items import card_label

CardChoice = tuple[Card, bool | None]
"""A card as a player names it and whether it is holographic (None: any copy will do)."""


@dataclass(frozen=True)
class ChooseHand:
    """GH-10: the cards chosen as one's hand."""

    cards: tuple[CardChoice, ...]


@dataclass(frozen=True)
class Raise:
    """GH-11: raise the highest bet by ``amount`` chips."""

    amount: int


@dataclass(frozen=True)
class MatchBet:
    """GH-11: meet the highest bet (and declare one will not raise)."""


@dataclass(frozen=True)
class Fold:
    """GH-11: will not meet the bet: out of the match, stake returned."""


@dataclass(frozen=True)
class Play:
    """GH-13, GH-15: play a card of one's hand, naming its effect's targets."""

    card: CardChoice
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Add:
    """GH-14: add a card of one's inventory to one's hand when nothing can be played."""

    card: CardChoice


@dataclass(frozen=True)
class Ask:
    """GH-14: ask another participant for a card when nothing can be played or added."""

    giver: str


@dataclass(frozen=True)
class Give:
    """GH-14: give the asker a card of one's hand."""

    card: CardChoice


@dataclass(frozen=True)
class Forfeit:
    """GH-16: leave the match; one's stake stays in the pool."""


@dataclass(frozen=True)
class Terminate:
    """GH-16: consent to end the match with the stakes returned."""


def read_cards(text: str) -> tuple[CardChoice, ...]:
    """GH-10: the cards of ``hand 7H 8H 9S 10C``: at each place the longest run of words naming a card."""
    words = text.replace(",", " ").split()
    cards: list[CardChoice] = []
    at = 0
    while at < len(words):
        for size in (4, 3, 2, 1):
            if at + size > len(words):
                continue
            try:
                card, holo = parse_card(" ".join(words[at:at + size]))
            except UnknownCard:
                continue
            cards.append((card, True if holo else None))
            at += size
            break
        else:
            raise Rejected(f"'{words[at]}' is not a card; write cards like 7H 8H 9S 10C, "
                           "'king of spades', 'red joker', 'holo 7H'")
    return tuple(cards)


class CardList(Field):
    """GH-10: several cards."""

    pattern = r".+"
    label = "CARDS"

    def convert(self, text: str) -> tuple[CardChoice, ...]:
        """The cards named, in order."""
        return read_cards(text)


class OneCard(CardName):
    """One card, read up to the next literal word (``play KH on bob``)."""

    pattern = r".+?"

    def convert(self, text: str) -> CardChoice:
        """The card; holographic only when ``holo`` was said (else any copy will do)."""
        card, holo = super().convert(text)
        return card, (True if holo else None)


class Targets(Field):
    """The words after ``on``: participants, and for a Queen a card of the target's hand."""

    pattern = r".+"
    label = "TARGETS"

    def convert(self, text: str) -> tuple[str, ...]:
        """The words, as written."""
        return tuple(text.replace(",", " ").split())


# --- when each command is valid, and the help written for the match as it stands --------


def _in(state: ExoptosisState, actor: str) -> bool:
    seat = state.seat(actor)
    return state.phase != "finished" and seat is not None and seat.out is None


def _choosing(state: ExoptosisState, actor: str) -> bool:
    return state.phase == "setup" and _in(state, actor)


def _betting(state: ExoptosisState, actor: str) -> bool:
    return state.phase == "betting" and _in(state, actor)


def _my_turn(state: ExoptosisState, actor: str) -> bool:
    return (state.phase == "play" and _in(state, actor) and state.current == actor
            and state.asked is None)


def _may_play(state: ExoptosisState, actor: str) -> bool:
    return _my_turn(state, actor) and bool(playable(state, actor))


def _may_add(state: ExoptosisState, actor: str) -> bool:
    seat = state.seat(actor)
    return _my_turn(state, actor) and not playable(state, actor) and bool(seat and seat.spare)


def _may_ask(state: ExoptosisState, actor: str) -> bool:
    seat = state.seat(actor)
    return _my_turn(state, actor) and not playable(state, actor) and not (seat and seat.spare)


def _adds_now(state: ExoptosisState, actor: str) -> list[Example]:
    """One ``add`` line per kind of card the actor holds outside a match (at most 8)."""
    seat = state.seat(actor)
    kinds = sorted(set(seat.spare if seat else []))
    return [Example(f"add {'holo ' if item.endswith(':holo') else ''}{item.split(':')[1]}",
                    f"add {card_label(item)} to your hand; your turn ends") for item in kinds[:8]]


def _plays_now(state: ExoptosisState, actor: str) -> list[Example]:
    """One line per playable card, with the targets its effect needs (GH-13, GH-15)."""
    others = [s.name for s in state.remaining if s.name != actor]
    lines = []
    for held in playable(state, actor):
        card = held.card
        code = card.code if not held.item.endswith(":holo") else f"holo {card.code}"
        if card.rank == "A":
            lines.append(Example(f"play {code} on {others[0]}",
                                 f"{label(held)}: another participant draws 2", "GH-15"))
        elif card.rank == "K":
            lines.append(Example(f"play {code} on {actor} {others[0]}",
                                 f"{label(held)}: two participants each draw 1", "GH-15"))
        elif card.rank == "Q":
            target = state.seat(others[0])
            shown = target.hand[0].card.code if target and target.hand else "CARD"
            lines.append(Example(f"play {code} on {others[0]} {shown}",
                                 f"{label(held)}: that card goes back to its owner's inventory "
                                 "and the participant draws a different one", "GH-15"))
        elif card.rank == "J":
            lines.append(Example(f"play {code}", f"{label(held)}: the next participant draws 1",
                                 "GH-15"))
        else:
            lines.append(Example(f"play {code}", label(held)))
    return lines


def _asks_now(state: ExoptosisState, actor: str) -> list[Example]:
    others = [s.name for s in state.remaining if s.name != actor]
    return [Example(f"ask {others[0]}", "only when you can neither play nor add: that "
                    f"participant gives you a card of their hand; participants: {', '.join(others)}")]


def _gives_now(state: ExoptosisState, actor: str) -> list[Example]:
    """One ``give`` line per card of the asked participant's hand."""
    seat = state.seat(actor)
    asker = state.asked.asker if state.asked else "the asker"
    return [Example(f"give {held.card.code}", f"give {label(held)} to {asker}")
            for held in (seat.hand if seat and seat.hand else [])]


def _turn_note(state: ExoptosisState, actor: str) -> str | None:
    if state.phase == "play" and _in(state, actor) and state.current != actor:
        return f"it is {state.current}'s turn; you can play on yours (GH-12)"
    if state.phase == "play" and state.asked and state.asked.asker == actor:
        return f"you asked {state.asked.giver} for a card; it gives one (GH-14)"
    return None


CARD = OneCard()
AMOUNT = Whole(1, complaint="'{text}' is not a number of chips (1 or more)", label="N")

COMMANDS = Commands(
    "an Exoptosis command",
    [
        Command("hand {cards}", ChooseHand, fields={"cards": CardList()}, rule="GH-10",
                examples=[Example("hand 7H 8H 9S 10C",
                                  "choose at least 4 cards of your inventory as your hand; "
                                  "you may change it until everyone has chosen"),
                          "hand king of spades, holo 7H, 2C, red joker"],
                valid=_choosing),
        Command("raise {amount} [chip|chips]", Raise, fields={"amount": AMOUNT}, rule="GH-11",
                examples=[Example("raise 2", "raise the highest bet by 2 chips (you pay what "
                                             "takes your stake to it)"), "raise 3 chips"],
                valid=_betting),
        Command("match", MatchBet, rule="GH-11",
                examples=[Example("match", "meet the highest bet and say you will not raise")],
                valid=_betting),
        Command("fold", Fold, rule="GH-11",
                examples=[Example("fold", "leave before play: your stake and cards come back")],
                valid=_betting),
        Command("play {card} [on {targets}]", Play,
                fields={"card": CARD, "targets": Targets()}, rule="GH-13",
                examples=[Example("play 8H", "play a card of your hand"),
                          "play AS on bob", "play KH on bob carol", "play QS on bob 7H",
                          "play holo 7H"],
                valid=_may_play, suggest=_plays_now, note=_turn_note,
                usage="play CARD [on TARGETS]"),
        Command("add {card}", Add, fields={"card": CARD}, rule="GH-14",
                examples=[Example("add 5C", "only when no card of your hand can be played: add "
                                            "a card of your inventory; your turn ends")],
                valid=_may_add, suggest=_adds_now),
        Command("ask {giver}", Ask, fields={"giver": Player()}, rule="GH-14",
                examples=[Example("ask bob", "only when you can neither play nor add: bob gives "
                                             "you a card of their hand")],
                valid=_may_ask, suggest=_asks_now),
        Command("give {card}", Give, fields={"card": CARD}, rule="GH-14",
                examples=[Example("give 7H", "give the participant that asked you a card of "
                                             "your hand")],
                valid=lambda s, actor: (s.phase == "play" and s.asked is not None
                                        and s.asked.giver == actor),
                suggest=_gives_now),
        Command("forfeit", Forfeit, rule="GH-16",
                examples=[Example("forfeit", "leave the match; your stake stays in the pool")],
                valid=_in),
        Command("terminate", Terminate, rule="GH-16",
                examples=[Example("terminate", "consent to end the match, stakes returned; "
                                               "every participant must consent within one turn")],
                valid=_in),
        receipts_command("your hand, stake and the match's fair-source commitment, in full",
                         valid=_in, rule="GH-10"),
    ],
)
"""The match's commands, in the order ``help`` lists them."""
