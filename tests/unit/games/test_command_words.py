"""Each ruleset's command words (what tells a command from a greeting in a PM) cover every
command it documents, and every word leads to one of its commands."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dealer.games import BUILT_IN, COMMAND_WORDS, PARENT_KINDS, command_words, rules_for
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


@pytest.mark.parametrize("kind", BUILT_IN)
def test_the_declared_command_words_and_parent_are_the_rulesets_own(kind: str) -> None:
    rules = rules_for(kind)
    assert COMMAND_WORDS[kind] == rules.commands.leading_words
    assert PARENT_KINDS.get(kind) == rules.parent_kind


def test_a_start_imports_only_the_rulesets_of_the_games_it_steps() -> None:
    # A new interpreter (this one imported every ruleset): routing a PM needs every
    # ruleset's command words, stepping a roulette game its own ruleset, and neither
    # imports another's (a crash-looping daemon pays for no game it does not run).
    probe = (
        "import sys\n"
        "from dealer.games import BUILT_IN, command_words, hosts_matches, rules_for\n"
        "assert 'bet' in command_words() and 'duel' in command_words()\n"
        "assert hosts_matches('hall') and not hosts_matches('roulette')\n"
        "rules_for('roulette')\n"
        "print(sorted(kind for kind in BUILT_IN if f'dealer.games.{kind}' in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['roulette']"
