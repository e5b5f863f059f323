"""The players' commands at the raceway and how a line becomes one."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dealer.cards import UnknownCard, parse_card
from dealer.games.base import Rejected
from dealer.games.races.field import clean_name


@dataclass(frozen=True)
class Sit:
    """Take a seat (OR-1)."""


@dataclass(frozen=True)
class Stand:
    """Leave the table (OR-1)."""


@dataclass(frozen=True)
class EnterHorse:
    """Enter (or re-enter) one's horse (OR-2); ``card`` is a catalogue code."""

    name: str
    card: str


@dataclass(frozen=True)
class Ready:
    """Say one's horse is set and seating may close (OR-3)."""


@dataclass(frozen=True)
class Interested:
    """Ask betting to wait for one's bet or pass (OR-5)."""


@dataclass(frozen=True)
class PlaceBet:
    """Bet ``amount`` chips on a horse (OR-5)."""

    amount: int
    horse: str


@dataclass(frozen=True)
class Pass:
    """Say one will not bet (more) (OR-5)."""


@dataclass(frozen=True)
class RaceAction:
    """Draw a card and move the horses forward (OR-7)."""


@dataclass(frozen=True)
class LapAction:
    """Draw a card and move the horses back (OR-8)."""


Command = Sit | Stand | EnterHorse | Ready | Interested | PlaceBet | Pass | RaceAction | LapAction

EXAMPLES = [
    "sit",
    "stand",
    "horse Thunder Hooves card king of spades",
    "ready",
    "interested",
    "bet 10 on Thunder Hooves",
    "pass",
    "race",
    "lap",
]

_WORDS: dict[str, Command] = {
    "sit": Sit(),
    "stand": Stand(),
    "ready": Ready(),
    "interested": Interested(),
    "pass": Pass(),
    "race": RaceAction(),
    "lap": LapAction(),
}
_HORSE = re.compile(r"^horse\s+(.*)$", re.IGNORECASE | re.DOTALL)
# A lookahead, so that overlapping candidates are all found: in "X card card KS" the last
# " card " is the second one.
_CARD = re.compile(r"(?=(\s+card\s+))", re.IGNORECASE)
_BET = re.compile(r"^bet\s+(\S+)\s+(?:chips?\s+)?on\s+(.+)$", re.IGNORECASE | re.DOTALL)


def parse(line: str) -> Command:
    """Turn one cleaned line into a command (case-insensitive), or raise :class:`Rejected`."""
    text = line.strip()
    word = _WORDS.get(text.lower())
    if word is not None:
        return word
    horse = _HORSE.match(text)
    if horse:
        return _parse_horse(horse.group(1))
    bet = _BET.match(text)
    if bet:
        return _parse_bet(bet.group(1), bet.group(2))
    raise Rejected("this is not a command of Off to the Races", None, list(EXAMPLES))


def _parse_horse(rest: str) -> EnterHorse:
    # The name may itself contain the word "card": split on the LAST " card ".
    padded = " " + rest
    separators = list(_CARD.finditer(padded))
    if not separators:
        raise Rejected(
            "enter a horse as 'horse NAME card CARD'", "OR-2",
            ["horse Thunder Hooves card king of spades"],
        )
    last = separators[-1]
    name, card_text = padded[: last.start()], padded[last.end(1):]
    try:
        card, _holo = parse_card(card_text)
    except UnknownCard as exc:
        raise Rejected(str(exc), "OR-2", ["horse Thunder Hooves card king of spades"]) from None
    return EnterHorse(clean_name(name), card.code)


def _parse_bet(amount_text: str, horse: str) -> PlaceBet:
    if not re.fullmatch(r"[0-9]+", amount_text) or int(amount_text) < 1:
        raise Rejected(
            f"a bet is a whole number of chips, at least 1, not {amount_text!r}", "OR-5",
            ["bet 10 on Thunder Hooves"],
        )
    return PlaceBet(int(amount_text), " ".join(horse.split()))
