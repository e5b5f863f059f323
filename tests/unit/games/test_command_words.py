"""Each ruleset's command words (what tells a command from a greeting in a PM) cover every
command it documents, and every word leads to one of its commands."""

from __future__ import annotations

import pytest

from dealer.games import command_words, rules_for
from dealer.games.base import Rejected
from dealer.games.hall.commands import EXAMPLES as HALL_EXAMPLES
from dealer.games.races.commands import EXAMPLES as RACES_EXAMPLES
from dealer.games.roulette.parse import BET_EXAMPLE, PREPARE_EXAMPLE

DOCUMENTED = {
    "roulette": [PREPARE_EXAMPLE, BET_EXAMPLE, "reminders off", "prep gold gold 30 silver 10"],
    "races": RACES_EXAMPLES,
    "hall": [e.split(" — ")[0] for examples in HALL_EXAMPLES.values() for e in examples]
    + ["show my inventory", "my inventory", "inv"],
}


@pytest.mark.parametrize("kind", sorted(DOCUMENTED))
def test_every_documented_command_starts_with_a_command_word(kind: str) -> None:
    rules = rules_for(kind)
    for line in DOCUMENTED[kind]:
        rules.parse(line)  # a real command of the ruleset
        assert line.split()[0].lower() in rules.command_words, line


@pytest.mark.parametrize("kind", sorted(DOCUMENTED))
def test_every_command_word_starts_a_documented_command(kind: str) -> None:
    rules = rules_for(kind)
    firsts = {line.split()[0].lower() for line in DOCUMENTED[kind]}
    assert rules.command_words <= firsts | {"reminder"}


def test_greetings_are_no_command_word_of_any_game() -> None:
    words = command_words()
    assert words is not None
    for greeting in ("hi", "hello", "thanks", "thx", "cheers", "ok", "good", "gl"):
        assert greeting not in words
        for kind in DOCUMENTED:
            with pytest.raises(Rejected):
                rules_for(kind).parse(f"{greeting} dealer")
