"""Discord's application commands, made from the declared commands (games/commands.py): one
command per game kind (``/roulette``), one subcommand per declared command (``bet``), one
option per placeholder. An interaction's options are written back as the text line, so a
slash command meets the same parser, rules and refusals as a typed one (docs/DISCORD.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from dealer.games import BUILT_IN, rules_for
from dealer.games.commands import (
    CardName, Choice, Command, Player, Players, Whole, _Literal, _Optional, _Slot,
)

SUB_COMMAND, STRING, INTEGER = 1, 3, 4
GAME_OPTION = "game"
"""Every subcommand's last option: the game, when the channel's (or the player's one) is not it."""

COMPLETE = {("races", "horse"): "horse", ("hall", "gives"): "card"}
"""Placeholders whose values come from the game beyond their field's type: the horses in
the race, the cards one holds. Card fields complete with one's cards, players' with players."""


@dataclass(frozen=True)
class Sub:
    """One subcommand: its name, its declaration (None: ``help``), the placeholders its name
    fixes (``accept-offer`` fixes ``verb``) and its options."""

    name: str
    command: Command | None
    fixed: dict[str, str] = field(default_factory=dict)
    options: tuple[dict[str, Any], ...] = ()


def _cut(text: str, most: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[:most - 1] + "…"


def _required(parts: tuple[Any, ...], optional: bool = False) -> list[tuple[str, bool]]:
    """Each placeholder and whether it must be given, in pattern order."""
    found: list[tuple[str, bool]] = []
    for part in parts:
        if isinstance(part, _Slot):
            found.append((part.name, not optional))
        elif isinstance(part, _Optional):
            found += _required(part.parts, True)
    return found


def _example_value(command: Command, name: str) -> str | None:
    for example in command.examples:
        match = command.regex.fullmatch(" ".join(example.line.split()))
        if match and match.group(name):
            return match.group(name)
    return None


def _words(choice: Choice) -> list[str]:
    """A choice's words, one per value (``chips`` is ``chip`` again)."""
    first: dict[Any, str] = {}
    for word, value in choice.options.items():
        first.setdefault(value, word)
    return list(first.values())


def _option(kind: str, command: Command, name: str, required: bool) -> dict[str, Any]:
    """The option of placeholder ``name``: typed by its field."""
    fld = command.fields[name]
    example = _example_value(command, name)
    option: dict[str, Any] = {"type": STRING, "name": name, "required": required,
                              "description": _cut(f"{fld.label}, e.g. {example}" if example else fld.label)}
    if isinstance(fld, Whole):
        option["type"] = INTEGER
        option["min_value"] = fld.least
        if fld.most is not None:
            option["max_value"] = fld.most
    elif isinstance(fld, Choice):
        option["choices"] = [{"name": w, "value": w} for w in _words(fld)]
    if completion(kind, name, fld):
        option["autocomplete"] = True
    return option


def completion(kind: str, name: str, fld: Any) -> str | None:
    """What autocompletes a placeholder: ``card``, ``player``, ``horse``, ``open`` (the number
    of an open offer, duel, request or ruling: from the command's suggestions now), or None."""
    if (kind, name) in COMPLETE:
        return COMPLETE[(kind, name)]
    if isinstance(fld, Whole) and fld.pattern.startswith("#?"):
        return "open"
    if isinstance(fld, CardName):
        return "card"
    if isinstance(fld, (Player, Players)):
        return "player"
    return None


def _says(command: Command, start: str = "") -> str:
    """What the command does, from its help or examples (the one starting ``start``)."""
    for example in command.examples:
        if example.says and example.line.lower().startswith(start):
            return command.help_line(example).split(" — ", 1)[1]
    return command.help_line(command.examples[0]).split(" — ", 1)[-1]


@lru_cache(maxsize=None)
def subcommands(kind: str) -> tuple[Sub, ...]:
    """The subcommands of game kind ``kind``, in ``help``'s order, then ``help``."""
    game = {"type": STRING, "name": GAME_OPTION, "required": False, "autocomplete": True,
            "description": "the game's id, when you play in several"}
    subs: list[Sub] = []
    for command in rules_for(kind).commands:
        parts = command._parts
        lead = next(p for p in parts if not isinstance(p, _Optional))
        seen: list[Any] = []
        options = []
        for name, required in _required(parts):
            fld = command.fields[name]
            if any(fld is other for other in seen):
                continue  # a second place to write the same field (``buy chip 3``)
            seen.append(fld)
            if not (isinstance(lead, _Slot) and lead.name == name):
                options.append(_option(kind, command, name, required))
        options.sort(key=lambda o: not o["required"])
        options.append(game)
        if isinstance(lead, _Slot):
            # A command led by a choice (``accept|decline offer N``): one subcommand per word.
            after = next(p for p in parts[parts.index(lead) + 1:] if isinstance(p, _Literal))
            for word in _words(command.fields[lead.name]):
                subs.append(Sub(f"{word}-{after.words[0]}", command, {lead.name: word}, tuple(options)))
        else:
            subs.append(Sub(lead.words[0], command, {}, tuple(options)))
    subs.append(Sub("help", None, {}, (game,)))
    return tuple(subs)


def _sub_payload(sub: Sub) -> dict[str, Any]:
    if sub.command is None:
        says = "the commands you can send now, with examples"
    else:
        says = _says(sub.command, next(iter(sub.fixed.values()), ""))
    return {"type": SUB_COMMAND, "name": sub.name, "description": _cut(says),
            "options": [dict(o) for o in sub.options]}


def payload(kinds: tuple[str, ...] = BUILT_IN) -> list[dict[str, Any]]:
    """The bulk-overwrite payload: Discord's application commands, one per game kind (within
    Discord's limits: tests/unit/games/test_slash.py)."""
    commands = []
    for kind in kinds:
        rules = rules_for(kind)
        commands.append({
            "name": kind, "type": 1, "description": _cut(f"{rules.title}: play by command"),
            "options": [_sub_payload(sub) for sub in subcommands(kind)],
        })
    return commands


@dataclass(frozen=True)
class Invoked:
    """What an interaction asked: the game kind, the subcommand, the options given (by
    name, as Discord sent them) and, for autocomplete, the option being typed."""

    kind: str
    sub: Sub
    values: dict[str, Any]
    focused: str | None = None

    @property
    def game(self) -> str | None:
        """The ``game`` option, if given (a game id is at most 64 characters)."""
        return str(self.values.get(GAME_OPTION) or "").strip()[:64] or None

    def line(self) -> str:
        """The text command line the options stand for (the same line a player types)."""
        if self.sub.command is None:
            return "help"
        values = {**{k: v for k, v in self.values.items() if k != GAME_OPTION}, **self.sub.fixed}
        return " ".join(_written(self.sub.command._parts, values))

    def completes(self) -> str | None:
        """What the focused option completes with (``game`` for the game option)."""
        if self.focused == GAME_OPTION:
            return GAME_OPTION
        fld = self.sub.command.fields.get(self.focused or "") if self.sub.command else None
        return None if fld is None else completion(self.kind, self.focused or "", fld)


def _written(parts: tuple[Any, ...], values: dict[str, Any]) -> list[str]:
    words: list[str] = []
    for part in parts:
        if isinstance(part, _Literal):
            words.append(part.words[0])
        elif isinstance(part, _Slot):
            if values.get(part.name) is not None:
                words.append(" ".join(str(values[part.name]).split()))
        elif any(values.get(name) is not None for name, _ in _required(part.parts)):
            words += _written(part.parts, values)
    return words


def invoked(data: dict[str, Any]) -> Invoked | None:
    """Read an interaction's ``data`` (an application command's, or an autocomplete's);
    None when it is no command of dealer's."""
    kind = data.get("name")
    if kind not in BUILT_IN:
        return None
    top = (data.get("options") or [{}])[0]
    sub = next((s for s in subcommands(kind) if s.name == top.get("name")), None)
    if sub is None:
        return None
    given = top.get("options") or []
    values = {o["name"]: o.get("value") for o in given if "name" in o}
    focused = next((o["name"] for o in given if o.get("focused")), None)
    return Invoked(kind, sub, values, focused)
