"""Each ruleset's command words (what tells a command from a greeting in a PM) cover every
command it documents, and every word leads to one of its commands."""

from __future__ import annotations

import pytest

from dealer.games import BUILT_IN, command_words, rules_for
from dealer.games.base import Rejected

# The examples each ruleset declares with its commands (the declarations' own test parses
# each one to its command) and the lines the docs show.
DOCUMENTED = {
    kind: [example.line for command in rules_for(kind).commands for example in command.examples]
    for kind in BUILT_IN
}
DOCUMENTED["roulette"] += ["prepare black gold 30 silver 10", "bet gold 30 silver 10",
                           "bet black 40", "reminders off", "prep gold gold 30 silver 10"]
DOCUMENTED["races"] += ["sit", "stand", "horse Thunder Hooves card king of spades", "ready",
                        "interested", "bet 10 on Thunder Hooves", "pass", "race", "lap"]
DOCUMENTED["hall"] += ["open handy pack", "buy deck pack", "gift bob",
                       "offer 2 chips and 7H to bob for AS", "accept offer 12",
                       "show my inventory", "my inventory", "inv"]


@pytest.mark.parametrize("kind", sorted(DOCUMENTED))
def test_every_documented_command_starts_with_a_command_word(kind: str) -> None:
    rules = rules_for(kind)
    for line in DOCUMENTED[kind]:
        rules.parse(line)  # a real command of the ruleset
        assert line.split()[0].lower() in rules.commands.leading_words, line


@pytest.mark.parametrize("kind", sorted(DOCUMENTED))
def test_every_command_word_starts_a_documented_command(kind: str) -> None:
    rules = rules_for(kind)
    firsts = {line.split()[0].lower() for line in DOCUMENTED[kind]}
    assert rules.commands.leading_words <= firsts


def test_greetings_are_no_command_word_of_any_game() -> None:
    words = command_words()
    assert words is not None
    for greeting in ("hi", "hello", "thanks", "thx", "cheers", "ok", "good", "gl"):
        assert greeting not in words
        for kind in DOCUMENTED:
            with pytest.raises(Rejected):
                rules_for(kind).parse(f"{greeting} dealer")
