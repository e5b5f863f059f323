"""Reading a player's line: ``prepare ...``, ``bet ...``, ``reminders on|off``.

Only the shape of a line is checked here (known words, one amount per colour, whole
non-negative numbers). Whether the numbers obey SR-2 / SR-5 and whether the command fits
the current phase is decided by the rules, which know the state.
"""

from __future__ import annotations

import re

from dealer.games.base import Rejected
from dealer.games.roulette.model import BLACK, COLOURS, GOLD, SILVER, Bet, Prepare, Reminders

PREPARE_EXAMPLE = "prepare black gold 30 silver 10"
BET_EXAMPLE = "bet gold 30 silver 10"
MAX_DIGITS = 6  # anything longer is certainly not a valid amount; refuse before int()

_SEPARATORS = re.compile(r"[,;:=]")
_TOKEN = re.compile(r"[a-z]+|[-+]?\d+(?:\.\d*)?|\S")
_WHOLE = re.compile(r"\d+")


def parse_line(line: str) -> Prepare | Bet | Reminders:
    """Turn a cleaned line into a command, or raise :class:`Rejected` saying why."""
    tokens = _TOKEN.findall(_SEPARATORS.sub(" ", line.lower()))
    if not tokens:
        raise Rejected("the line is empty")
    verb, rest = tokens[0], tokens[1:]
    if verb in ("prepare", "prep"):
        return _prepare(rest)
    if verb == "bet":
        return _bet(rest)
    if verb in ("reminders", "reminder"):
        return _reminders(rest)
    raise Rejected(f"'{verb}' is not a Stationary Roulette command")


def _prepare(tokens: list[str]) -> Prepare:
    """SR-2: the winning colour first, then the layout as colour/amount pairs.

    Interpretation I-2 (docs/ROULETTE.md): black may be omitted or written ``black 0``;
    an omitted gold or silver is 0 (and then fails SR-2); a number right after the first
    colour means the winning colour was left out, which is refused, not guessed.
    """
    if not tokens or tokens[0] not in COLOURS:
        raise Rejected(
            "a preparation starts with its winning colour (gold, silver or black), "
            "then the layout",
            rule="SR-2",
            allowed=[PREPARE_EXAMPLE],
        )
    if len(tokens) > 1 and _WHOLE.fullmatch(tokens[1]):
        raise Rejected(
            f"'{tokens[0]} {tokens[1]}' reads as a layout, but the winning colour comes first: "
            "prepare WINNING-COLOUR gold N silver N",
            rule="SR-2",
            allowed=[PREPARE_EXAMPLE],
        )
    amounts = _amounts(tokens[1:], rule="SR-2", example=PREPARE_EXAMPLE)
    return Prepare(tokens[0], amounts.get(GOLD, 0), amounts.get(SILVER, 0), amounts.get(BLACK, 0))


def _bet(tokens: list[str]) -> Bet:
    """SR-5: colour/amount pairs."""
    amounts = _amounts(tokens, rule="SR-5", example=BET_EXAMPLE)
    if not amounts:
        raise Rejected("a bet names colours and points", rule="SR-5", allowed=[BET_EXAMPLE])
    return Bet(amounts.get(GOLD, 0), amounts.get(SILVER, 0), amounts.get(BLACK, 0))


def _reminders(tokens: list[str]) -> Reminders:
    if tokens in (["on"], ["off"]):
        return Reminders(on=tokens[0] == "on")
    raise Rejected(
        "say 'reminders off' or 'reminders on'", allowed=["reminders off", "reminders on"]
    )


def _amounts(tokens: list[str], rule: str, example: str) -> dict[str, int]:
    """Read ``colour amount`` pairs; each colour at most once."""
    amounts: dict[str, int] = {}
    for i in range(0, len(tokens), 2):
        colour = tokens[i]
        if colour not in COLOURS:
            raise Rejected(
                f"'{colour}' is not a colour; use gold, silver and black",
                rule=rule,
                allowed=[example],
            )
        if colour in amounts:
            raise Rejected(f"{colour} is named twice in one line", rule=rule, allowed=[example])
        if i + 1 >= len(tokens):
            raise Rejected(f"{colour} has no amount after it", rule=rule, allowed=[example])
        amounts[colour] = _amount(colour, tokens[i + 1], rule, example)
    return amounts


def _amount(colour: str, token: str, rule: str, example: str) -> int:
    """A whole number of points from 0 up; refuse signs, decimals and absurd lengths."""
    if token.startswith("-"):
        raise Rejected(f"{colour} {token}: points cannot be negative", rule=rule, allowed=[example])
    if not _WHOLE.fullmatch(token):
        raise Rejected(
            f"{colour} {token}: points are whole numbers such as 30", rule=rule, allowed=[example]
        )
    if len(token.lstrip("0")) > MAX_DIGITS:
        raise Rejected(f"{colour} {token}: far more than 40 points", rule=rule, allowed=[example])
    return int(token)
