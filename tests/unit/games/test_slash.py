"""The slash commands made from the declarations (dealer/games/slash.py): Discord's limits,
every player command covered, and an interaction's options written back as the line the
same declaration parses."""

from __future__ import annotations

import json
import re

import pytest

from dealer.games import BUILT_IN, rules_for
from dealer.games.slash import GAME_OPTION, invoked, payload, subcommands

NAME = re.compile(r"^[-_a-z0-9]{1,32}$")


def _walk(item, depth=0):
    yield item, depth
    for option in item.get("options") or []:
        yield from _walk(option, depth + 1)


def _characters(item) -> int:
    """The names, descriptions and values of a command with its options and choices, together."""
    return (len(item["name"]) + len(item.get("description", "")) + len(str(item.get("value", "")))
            + sum(_characters(o) for o in (item.get("options") or []) + (item.get("choices") or [])))


def test_the_payload_keeps_discords_documented_limits() -> None:
    commands = payload()
    assert 1 <= len(commands) <= 100
    assert len({c["name"] for c in commands}) == len(commands)
    for command in commands:
        # Discord allows 8,000 today; 4,000 was its first limit.
        assert _characters(command) <= 4000, command["name"]
        for item, _ in _walk(command):
            assert NAME.fullmatch(item["name"]), item["name"]
            assert 1 <= len(item["description"]) <= 100
            options = item.get("options") or []
            assert len(options) <= 25
            assert len({o["name"] for o in options}) == len(options), item["name"]
            required = [bool(o.get("required")) for o in options]
            assert required == sorted(required, reverse=True), item["name"]
            assert len(item.get("choices") or []) <= 25
            assert not (item.get("choices") and item.get("autocomplete"))
    json.dumps(commands)  # what `dealer discord commands --json` prints


@pytest.mark.parametrize("kind", BUILT_IN)
def test_every_declared_player_command_has_its_subcommand(kind: str) -> None:
    declared = list(rules_for(kind).commands)
    subs = subcommands(kind)
    covered = {id(s.command) for s in subs if s.command is not None}
    assert covered == {id(c) for c in declared}
    assert [s.name for s in subs][-1] == "help"
    top = next(c for c in payload() if c["name"] == kind)
    assert [o["name"] for o in top["options"]] == [s.name for s in subs]
    for sub, option in zip(subs, top["options"]):
        names = [o["name"] for o in option["options"]]
        assert names[-1] == GAME_OPTION
        if sub.command is not None:
            # Every placeholder is an option, or fixed by the subcommand's name, or a
            # second place for a field already asked (`buy chip 3`).
            fields = list(sub.command.fields)
            assert set(names[:-1]) | set(sub.fixed) <= set(fields)
            for name in set(fields) - set(names) - set(sub.fixed):
                assert any(sub.command.fields[name] is sub.command.fields[n] for n in names)


def _data(kind: str, sub: str, **values) -> dict:
    return {"name": kind, "type": 1, "options": [{"type": 1, "name": sub, "options": [
        {"name": k, "type": 4 if isinstance(v, int) else 3, "value": v} for k, v in values.items()]}]}


@pytest.mark.parametrize("kind", BUILT_IN)
def test_each_declared_example_goes_through_its_subcommand_to_the_same_command(kind: str) -> None:
    """An example line, its placeholders given as options, is written back as a line the
    declaration parses to the same command as the example."""
    commands = rules_for(kind).commands
    for sub in subcommands(kind):
        if sub.command is None:
            continue
        for example in sub.command.examples:
            text = commands.clean(example.line)
            match = sub.command.regex.fullmatch(text)
            assert match, example.line
            if any(match.group(k) != v for k, v in sub.fixed.items() if match.group(k)):
                continue  # an example of the other word (`decline offer` under `accept-offer`)
            types = {o["name"]: o["type"] for o in sub.options}
            values = {}
            for name, text in match.groupdict().items():
                if text is None or name in sub.fixed:
                    continue
                # A second place for a field already asked is given as that option.
                option = name if name in types else next(
                    n for n in types if sub.command.fields.get(n) is sub.command.fields[name])
                values[option] = int(text.strip("#:")) if types[option] == 4 else text
            asked = invoked(_data(kind, sub.name, **values))
            assert asked is not None
            line = asked.line()
            assert commands.parse(line) == commands.parse(example.line), (example.line, line)


def test_a_line_from_options() -> None:
    assert invoked(_data("roulette", "prepare", winning="black", layout="gold 30 silver 10")).line() \
        == "prepare black gold 30 silver 10"
    assert invoked(_data("roulette", "prepare", winning="gold")).line() == "prepare gold"
    assert invoked(_data("races", "bet", amount=5, horse="Thunder  Hooves")).line() == "bet 5 on Thunder Hooves"
    assert invoked(_data("hall", "accept-offer", offer=3)).line() == "accept offer 3"
    assert invoked(_data("hall", "buy", ware="chip", count=3)).line() == "buy 3 chip"
    assert invoked(_data("hall", "gift", receiver="bob")).line() == "gift bob"
    assert invoked(_data("races", "help", game="r1")).line() == "help"
    assert invoked(_data("races", "sit", game="r1")).game == "r1"
    assert invoked(_data("races", "sit", game="  ")).game is None
    assert invoked(_data("races", "sit", game="x" * 100)).game == "x" * 64


def test_an_option_cannot_add_a_line() -> None:
    """A value's line breaks are spaces: one slash command is one command line."""
    line = invoked(_data("roulette", "bet", points="gold 30\nprepare black gold 40")).line()
    assert line == "bet gold 30 prepare black gold 40"


def test_what_is_no_command_of_dealers_is_none() -> None:
    assert invoked({"name": "poll", "options": []}) is None
    assert invoked(_data("roulette", "shuffle")) is None


def test_options_are_typed_from_the_fields() -> None:
    by_name = {c["name"]: {o["name"]: o for o in c["options"]} for c in payload()}
    bet = {o["name"]: o for o in by_name["races"]["bet"]["options"]}
    assert bet["amount"]["type"] == 4 and bet["amount"]["min_value"] == 1
    assert bet["horse"]["autocomplete"] is True
    buy = {o["name"]: o for o in by_name["hall"]["buy"]["options"]}
    assert buy["count"]["max_value"] == 100
    assert [c["value"] for c in buy["ware"]["choices"]] == [
        "random card", "handy pack", "deck pack", "legendary pack", "chip"]
    winning = {o["name"]: o for o in by_name["roulette"]["prepare"]["options"]}["winning"]
    assert [c["value"] for c in winning["choices"]] == ["gold", "silver", "black"]
    gives = {o["name"]: o for o in by_name["hall"]["offer"]["options"]}["gives"]
    assert gives["autocomplete"] is True
    assert by_name["hall"]["decline-duel"]["description"].startswith("refuse")
    # The number of an open offer, duel, request or ruling is offered from the game.
    for sub, name in (("accept-offer", "offer"), ("withdraw", "offer"), ("accept-duel", "duel"),
                      ("confidence", "ruling"), ("ruling", "request")):
        option = {o["name"]: o for o in by_name["hall"][sub]["options"]}[name]
        assert option["type"] == 4 and option["autocomplete"] is True
    assert "autocomplete" not in {o["name"]: o for o in by_name["races"]["bet"]["options"]}["amount"]
