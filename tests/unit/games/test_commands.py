"""Commands declared once (dealer.games.commands): every example of every command of every
game parses to its own declaration; the grammar, the converters, the errors, ``help`` and
the command words, on a small made-up game."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dealer.games import BUILT_IN, rules_for
from dealer.games.base import Rejected
from dealer.games.commands import CardName, Choice, Command, Commands, Example, Text, Whole, Word

DECLARED = [
    (kind, command, example)
    for kind in BUILT_IN
    for command in rules_for(kind).commands
    for example in command.examples
]


@pytest.mark.parametrize(
    "kind, command, example", DECLARED,
    ids=[f"{kind}: {example.line}" for kind, _, example in DECLARED],
)
def test_every_example_parses_to_its_command(kind, command, example):
    declared, built = rules_for(kind).commands.read(example.line)
    assert declared is command
    assert rules_for(kind).parse(example.line) == built


@pytest.mark.parametrize("kind", BUILT_IN)
def test_every_command_starts_with_a_command_word_and_says_what_it_does(kind):
    rules = rules_for(kind)
    for command in rules.commands:
        first = command.examples[0]
        assert rules.is_command_word(first.line.split()[0]), first.line
        assert " — " in command.help_line(first), f"{first.line}: help says nothing"


@pytest.mark.parametrize("kind", BUILT_IN)
def test_a_game_refuses_its_neighbours_chatter(kind):
    rules = rules_for(kind)
    for chatter in ["good luck everyone!", "gg", "lol that race", "@bob thanks"]:
        assert not rules.is_command_word(chatter.split()[0]), chatter
        with pytest.raises(Rejected) as refused:
            rules.parse(chatter)
        assert refused.value.rule is None and "is not a" in refused.value.what


# --- the mechanism, on a small made-up game ----------------------------------------------


@dataclass(frozen=True)
class Sit:
    pass


@dataclass(frozen=True)
class Wager:
    amount: int
    on: str


@dataclass(frozen=True)
class Look:
    pass


@dataclass(frozen=True)
class Call:
    colour: str
    card: object


@dataclass
class Table:
    seated: list[str]
    open: bool = True


TOY = Commands(
    "a toy command",
    [
        Command("sit [down [please]]", Sit, examples=["sit"], rule="T-1", help="take a seat",
                valid=lambda table, actor: actor not in table.seated),
        Command(
            "wager {amount} [chip|chips] on {on}", Wager,
            fields={"amount": Whole(1, 50, complaint="wager 1 to 50 chips, not {text}"),
                    "on": Text("NAME")},
            examples=[Example("wager 5 on Red Rum", "wager chips on a horse"),
                      "WAGER 50 chips on  the  field"],
            rule="T-2", valid=lambda table, actor: table.open and actor in table.seated,
            suggest=lambda table, actor: [Example(f"wager 3 on {actor}", "on yourself")],
        ),
        Command("[show] [my] cards|hand", Look, examples=["cards", "show my hand"], rule="T-3",
                help="look (not an action)"),
        Command("call {colour} with {card}", lambda colour, card: Call(colour, card[0].code),
                fields={"colour": Choice({"red": "red", "pitch black": "black"}, "COLOUR"),
                        "card": CardName()},
                examples=["call red with KS", "call Pitch  Black with 10 of hearts"], rule="T-4",
                help="call the colour", refusal="call a colour with a card"),
    ],
)


@pytest.mark.parametrize("line, command", [
    ("sit", Sit()),
    ("SIT  down", Sit()),
    ("sit down please", Sit()),
    ("wager 5 on Red Rum", Wager(5, "Red Rum")),
    ("wager 5 chip on on the nose", Wager(5, "on the nose")),
    ("Wager 50 CHIPS on the  field", Wager(50, "the field")),
    ("cards", Look()),
    ("show hand", Look()),
    ("my cards", Look()),
    ("call pitch black with red joker", Call("black", "RJ")),
    ("CALL Red with 10h", Call("red", "10H")),
])
def test_patterns_read_optional_parts_alternatives_and_fields(line, command):
    assert TOY.parse(line) == command


def test_a_field_error_cites_the_command_rule():
    # What may be sent instead is left to the shell: the commands valid now.
    with pytest.raises(Rejected) as refused:
        TOY.parse("wager 51 on Red Rum")
    assert refused.value.what == "wager 1 to 50 chips, not 51" and refused.value.rule == "T-2"
    assert refused.value.allowed == []
    with pytest.raises(Rejected) as refused:
        TOY.parse("call red with 11 of cups")
    assert refused.value.rule == "T-4" and "'11 of cups' is not a card" in refused.value.what


@pytest.mark.parametrize("amount", ["0", "²", "-3", "4.5", "9" * 12, "five"])
def test_whole_numbers_are_ascii_digits_within_bounds(amount):
    with pytest.raises(Rejected) as refused:
        TOY.parse(f"wager {amount} on X")
    assert refused.value.what == f"wager 1 to 50 chips, not {amount}"


def test_a_command_word_that_does_not_fit_names_the_form_and_an_example():
    with pytest.raises(Rejected) as refused:
        TOY.parse("wager on Red Rum")
    assert refused.value.what == (
        "the form is 'wager N on NAME', for example 'wager 5 on Red Rum'")
    assert refused.value.rule == "T-2"
    with pytest.raises(Rejected) as refused:
        TOY.parse("call blue with KS")  # a choice that is not offered: the form's refusal
    assert refused.value.what == (
        "call a colour with a card; write it as 'call COLOUR with CARD', "
        "for example 'call red with KS'")
    with pytest.raises(Rejected) as refused:
        TOY.parse("sit on the floor")
    assert refused.value.what == "'sit' takes nothing after it: send it alone on its line"
    assert refused.value.rule == "T-1" and refused.value.allowed == []


def test_a_line_without_a_command_word_is_not_a_command():
    for line in ["dance", "show me the money", "my turn?"]:
        with pytest.raises(Rejected) as refused:
            TOY.parse(line)
        assert refused.value.what == f"'{line}' is not a toy command"
        assert refused.value.rule is None and refused.value.allowed == []


def test_command_words_are_the_first_required_words():
    # Leading optional words parse but do not make a line a command ("show me the money" is
    # chatter); a choice that starts a pattern gives its first words.
    assert TOY.words == {"sit", "wager", "cards", "hand", "call"}
    assert TOY.is_command_word("WAGER") and not TOY.is_command_word("show")
    assert not TOY.is_command_word("")
    assert Commands("x", [Command("{c} wins", str, fields={"c": TOY.declared[3].fields["colour"]},
                                  examples=["red wins"], help="win")]).words == {"red", "pitch"}


def test_help_lists_only_what_is_valid_now_with_its_example_and_rule():
    table = Table(seated=["ann"])
    assert TOY.help(table, "bob") == [
        "sit — take a seat (T-1)",
        "cards — look (not an action) (T-3)",
        "call red with KS — call the colour (T-4)",
    ]
    assert TOY.help(table, "ann")[:1] == ["wager 3 on ann — on yourself (T-2)"]
    table.open = False
    assert [line.split()[0] for line in TOY.help(table, "ann")] == ["cards", "call"]
    assert [c.pattern for c in TOY.valid_now(table, "ann")] == [
        "[show] [my] cards|hand", "call {colour} with {card}"]


def test_a_game_may_clean_its_lines_first():
    spaced = Commands("a spaced command", [Command("add {n}", lambda n: n, fields={"n": Whole()},
                                                   examples=["add 2"], help="add")],
                      clean=lambda line: " ".join(line.replace("=", " ").split()))
    assert spaced.parse("add=7") == 7 and spaced.is_command_word("add=")


@pytest.mark.parametrize("pattern, fields, why", [
    ("{n} apples", {"n": Whole()}, "must start with a word"),
    ("[eat] {n}", {"n": Whole()}, "must start with a word"),
    ("eat {n}", {}, "placeholders"),
    ("eat", {"n": Whole()}, "placeholders"),
    ("eat {n} {n}", {"n": Whole()}, "named twice"),
    ("eat [more", {}, "unbalanced"),
    ("eat more]", {}, "unbalanced"),
    ("eat []", {}, "unbalanced or empty"),
])
def test_a_malformed_declaration_fails_when_declared(pattern, fields, why):
    with pytest.raises(ValueError) as error:
        Command(pattern, dict, fields=fields, examples=["eat"], help="eat")
    assert why in str(error.value)


def test_a_command_needs_an_example_and_says_what_it_does():
    with pytest.raises(ValueError, match="at least one example"):
        Command("eat", dict, examples=[], help="eat")
    with pytest.raises(ValueError, match="say what the command does"):
        Command("eat", dict, examples=["eat"])
    eat = Command("eat", dict, examples=[Example("eat", "eat it")])
    assert eat.help_line(eat.examples[0]) == "eat — eat it"


def test_word_fields_stop_at_spaces_and_commas():
    pick = Commands("a pick", [Command("pick {who} now", lambda who: who, fields={"who": Word("PLAYER")},
                                       examples=["pick bob now"], help="pick")])
    assert pick.parse("pick @Bob now") == "@Bob"
    with pytest.raises(Rejected):
        pick.parse("pick bob, carol now")
