"""Stationary Roulette's player commands (only a line's shape: the rules check the rest)."""

from __future__ import annotations

import re

from dealer.games.base import Rejected
from dealer.games.commands import Choice, Command, Commands, Example, Field, receipts_command
from dealer.games.roulette.checks import colours_left, describe_left
from dealer.games.roulette.model import (
    BLACK,
    COLOURS,
    GOLD,
    SILVER,
    Bet,
    Prepare,
    Reminders,
    RouletteState,
)

PREPARE_EXAMPLE = "prepare black gold 30 silver 10"
BET_EXAMPLE = "bet gold 30 silver 10"
MAX_DIGITS = 6  # anything longer is certainly not a valid amount; refuse before int()

_SEPARATORS = re.compile(r"[,;:=]")
_TOKEN = re.compile(r"[a-z]+|[-+]?\d+(?:\.\d*)?|\S")
_WHOLE = re.compile(r"\d+")


def clean(line: str) -> str:
    """Lower case, ``,;:=`` as spaces, words and numbers apart: ``black: gold=30`` is ``black gold 30``."""
    return " ".join(_TOKEN.findall(_SEPARATORS.sub(" ", line.lower())))


class Points(Field):
    """Colour/amount pairs, each colour at most once: ``gold 30 silver 10``."""

    pattern = r".+"
    label = "COLOUR N"

    def __init__(self, layout: bool) -> None:
        self.layout = layout

    def convert(self, text: str) -> dict[str, int]:
        """The points per colour named; the rule's message for anything malformed."""
        tokens = text.split()
        if self.layout and _WHOLE.fullmatch(tokens[0]):
            # I-2 (docs/ROULETTE.md): "prepare gold 30 silver 10" lacks the winning colour;
            # it is refused, not read as winning colour gold.
            raise Rejected(
                f"the layout starts with a number ({tokens[0]}), so the winning colour is "
                "missing: the winning colour comes first, then the layout "
                "(prepare WINNING-COLOUR gold N silver N)"
            )
        amounts: dict[str, int] = {}
        for i in range(0, len(tokens), 2):
            colour = tokens[i]
            if colour not in COLOURS:
                raise Rejected(f"'{colour}' is not a colour; use gold, silver and black")
            if colour in amounts:
                raise Rejected(f"{colour} is named twice in one line")
            if i + 1 >= len(tokens):
                raise Rejected(f"{colour} has no amount after it")
            amounts[colour] = _amount(colour, tokens[i + 1])
        return amounts


def _amount(colour: str, token: str) -> int:
    """A whole number of points from 0 up; refuse signs, decimals and absurd lengths."""
    if token.startswith("-"):
        raise Rejected(f"{colour} {token}: points cannot be negative")
    if not _WHOLE.fullmatch(token):
        raise Rejected(f"{colour} {token}: points are whole numbers such as 30")
    if len(token.lstrip("0")) > MAX_DIGITS:
        raise Rejected(f"{colour} {token}: far more than 40 points")
    return int(token)


def _prepare(winning: str, layout: dict[str, int] | None) -> Prepare:
    # I-2: black may be omitted or written "black 0"; an omitted gold or silver is 0 (and
    # then fails SR-2 in the rules, which say which colour is short).
    layout = layout or {}
    return Prepare(winning, layout.get(GOLD, 0), layout.get(SILVER, 0), layout.get(BLACK, 0))


def _bet(points: dict[str, int]) -> Bet:
    return Bet(points.get(GOLD, 0), points.get(SILVER, 0), points.get(BLACK, 0))


# --- when each command is valid, and the help written for the game as it stands ----------


def _playing(state: RouletteState, actor: str) -> bool:
    return actor in state.players and state.status != "finished"


def _may_bet(state: RouletteState, actor: str) -> bool:
    """SR-3: a bet from round 1 on, on the opponent's active roulette (none after SR-10)."""
    return (_playing(state, actor) and state.status == "running" and state.phase >= 1
            and state.active.get(state.opponent(actor)) is not None)


def _colours_left(state: RouletteState, actor: str) -> dict[str, int]:
    return colours_left(state.colours_used[actor], state.settings.colour_limit)


def _may_prepare(state: RouletteState, actor: str) -> bool:
    """SR-3: before the last round; SR-4: with a winning colour left."""
    return (_playing(state, actor) and state.status == "running"
            and state.phase < state.last_round and any(_colours_left(state, actor).values()))


def _bet_now(state: RouletteState, actor: str) -> list[Example]:
    return [Example(
        BET_EXAMPLE,
        f"bet 40 points on {state.opponent(actor)}'s roulette active in round {state.phase} "
        "(at most two colours, whole numbers)",
    )]


def _prepare_now(state: RouletteState, actor: str) -> list[Example]:
    left = _colours_left(state, actor)
    colour = next(c for c in (BLACK, SILVER, GOLD) if left[c] > 0)
    return [Example(
        f"prepare {colour} gold 30 silver 10",
        f"prepare the roulette {state.opponent(actor)} bets on in round {state.phase + 1}: "
        "winning colour first, then the layout (gold at least 25, silver at least 5, black 0, "
        f"total 40); winning colours left: {describe_left(left)}",
        rule="SR-2, SR-4",
    )]


def _reminders_now(state: RouletteState, actor: str) -> list[Example]:
    if actor in state.reminders_off:
        return [Example("reminders on", "get a PM before each deadline while you owe a submission")]
    return [Example("reminders off", "stop the PMs sent before each deadline")]


COLOUR = Choice(COLOURS, "WINNING-COLOUR")

COMMANDS = Commands(
    "a Stationary Roulette command",
    [
        Command(
            "bet {points}", _bet, fields={"points": Points(layout=False)},
            examples=[BET_EXAMPLE, "bet black 40", "bet gold 40 silver 0"], rule="SR-5",
            help="bet 40 points on the opponent's active roulette",
            valid=_may_bet, suggest=_bet_now,
            refusal="a bet names colours and points", usage="bet COLOUR N [COLOUR N]",
        ),
        Command(
            "prepare|prep {winning} [{layout}]", _prepare,
            fields={"winning": COLOUR, "layout": Points(layout=True)},
            examples=[PREPARE_EXAMPLE, "prepare gold gold 25 silver 15 black 0",
                      "prepare black: gold=30, silver=10", "prep silver gold 35 silver 5"],
            rule="SR-2",
            help="prepare the roulette your opponent bets on next round: the winning colour, "
                 "then the layout",
            valid=_may_prepare, suggest=_prepare_now,
            refusal="a preparation starts with its winning colour (gold, silver or black), "
                    "then the layout",
            usage="prepare WINNING-COLOUR gold N silver N",
        ),
        Command(
            "reminders|reminder {switch}", lambda switch: Reminders(on=switch),
            fields={"switch": Choice({"on": True, "off": False}, "on|off")},
            examples=[Example("reminders off", "stop the PMs sent before each deadline"),
                      Example("reminders on", "get a PM before each deadline while you owe "
                                              "a submission"),
                      "reminder off"],
            valid=_playing, suggest=_reminders_now,
            refusal="say 'reminders off' or 'reminders on'",
        ),
        receipts_command("your submissions on file in this phase with their receipts and "
                         "sealed texts in full, and what is still due", valid=_playing, rule="SR-6"),
    ],
    clean=clean,
)
"""Stationary Roulette's commands, in the order ``help`` lists them."""

