"""Player commands, each declared once (DESIGN.md): the parser, ``help``, chatter detection
and a test of every example all come from one :class:`Command` per command.

A pattern is matched against the whole line, in any case: ``bet {amount} [chip|chips] on
{horse}``: ``word`` a literal, ``a|b`` one of several, ``[...]`` optional (nested parts
allowed), ``{name}`` a field read by ``fields[name]``. The command words (a line starting
with one is a command, else chatter) are those of the first element that is not optional."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from dealer.cards import UnknownCard, parse_card
from dealer.games.rejection import Rejected
from dealer.text import quote

Valid = Callable[[Any, str], bool]
"""``valid(state, actor)``: whether the command may be sent by ``actor`` now."""


# --- fields: how one placeholder is matched and read --------------------------------------


class Field:
    """A placeholder's regular expression, its label and its converter (raising :class:`Rejected`)."""

    pattern: str = r"\S+"
    label: str = "WORD"

    def convert(self, text: str) -> Any:
        """The value of the field's text (as the player wrote it, spaces squeezed)."""
        return text


class Word(Field):
    """One word, kept as written (a player's name, a horse's name part ...)."""

    def __init__(self, label: str = "WORD", pattern: str = r"[^\s,]+") -> None:
        self.label = label
        self.pattern = pattern


class Text(Field):
    """Free text up to the next literal (``lazy``) or the end of the line, read by ``read``."""

    def __init__(self, label: str = "TEXT", *, lazy: bool = False,
                 read: Callable[[str], Any] | None = None) -> None:
        self.label = label
        self.pattern = r".+?" if lazy else r".+"
        self._read = read

    def convert(self, text: str) -> Any:
        """``read(text)``, or the text itself."""
        return self._read(text) if self._read else text


class Player(Field):
    """A player's name, spaces and all, up to the next literal (``lazy``) or the end."""

    def __init__(self, label: str = "PLAYER", *, lazy: bool = False) -> None:
        self.label = label
        self.pattern = r".+?" if lazy else r".+"

    def convert(self, text: str) -> str:
        """The name as written, each run of spaces made one space."""
        return " ".join(text.split())


class Players(Field):
    """One or more names as written words: only the game knows where each ends (``read_names``)."""

    pattern = r".+"

    def __init__(self, label: str = "PLAYERS") -> None:
        self.label = label

    def convert(self, text: str) -> tuple[str, ...]:
        """The words, commas apart."""
        return tuple(text.replace(",", " , ").split())


class Whole(Field):
    """A whole number from ``least`` to ``most``, ASCII digits only (``²`` is a digit to Python)."""

    MAX_DIGITS = 9  # refuse before int(): no count in any game comes near it

    def __init__(self, least: int = 0, most: int | None = None, *,
                 complaint: str = "'{text}' is not a whole number from {least}", label: str = "N",
                 pattern: str = r"\S+", strip: str = "") -> None:
        self.least, self.most = least, most
        self.complaint = complaint
        self.label = label
        self.pattern = pattern
        self.strip = strip

    def convert(self, text: str) -> int:
        """The number, or :class:`Rejected` with ``complaint``."""
        digits = text.lstrip(self.strip) if self.strip else text
        if not re.fullmatch(r"[0-9]+", digits) or len(digits.lstrip("0")) > self.MAX_DIGITS:
            raise Rejected(self._complain(text))
        number = int(digits)
        if number < self.least or (self.most is not None and number > self.most):
            raise Rejected(self._complain(text))
        return number

    def _complain(self, text: str) -> str:
        return self.complaint.format(text=text, least=self.least, most=self.most)


class Choice(Field):
    """One of a fixed set of words or phrases, each mapped to its value."""

    def __init__(self, options: Mapping[str, Any] | Iterable[str], label: str) -> None:
        self.options = dict(options) if isinstance(options, Mapping) else {o: o for o in options}
        self.label = label
        longest_first = sorted(self.options, key=len, reverse=True)
        self.pattern = "|".join(r"\s+".join(map(re.escape, o.split())) for o in longest_first)

    def convert(self, text: str) -> Any:
        """The value of the option written (any case, any spacing)."""
        return self.options[" ".join(text.lower().split())]


class CardName(Field):
    """A card as players write it (``king of spades``, ``K♠``, ``holo 7H``): ``(Card, holographic)``."""

    pattern = r".+"
    label = "CARD"

    def convert(self, text: str) -> Any:
        """:func:`dealer.cards.parse_card`, its error in the player's terms."""
        try:
            return parse_card(text)
        except UnknownCard as exc:
            raise Rejected(str(exc)) from None


# --- the command every game declares ------------------------------------------------


@dataclass(frozen=True)
class Receipts:
    """``receipts``: everything on file for the player in the current phase, in full (dealer/detail.py)."""


RECEIPTS_SAYS = "everything on file for you now, in full"


def receipts_command(says: str = RECEIPTS_SAYS, valid: "Valid | None" = None,
                     rule: str | None = None) -> "Command":
    """The ``receipts`` command, declared once; each game lists it with what its answer holds."""
    return Command(
        "receipts|receipt", Receipts, examples=[Example("receipts", says), "receipt"], rule=rule,
        valid=valid,
    )


# --- one command's declaration --------------------------------------------------------


def help_line(line: str, says: str = "", rule: str | None = None) -> str:
    """``EXAMPLE — what it does (RULE)``; the rule is not cited twice."""
    text = f"{line} — {says}" if says else line
    return f"{text} ({rule})" if rule and f"({rule})" not in says else text


@dataclass(frozen=True)
class Example:
    """An example line, what it does (for ``help``) and its rule when it differs from its command's."""

    line: str
    says: str = ""
    rule: str | None = None


@dataclass(frozen=True)
class _Literal:
    words: tuple[str, ...]


@dataclass(frozen=True)
class _Slot:
    name: str


@dataclass(frozen=True)
class _Optional:
    parts: tuple[Any, ...]


_TOKENS = re.compile(r"\[|\]|\{[^}\s]+\}|[^\s\[\]{}]+")


class Command:
    """One player command, declared once: its ``pattern``, ``fields`` and ``build``; its
    ``examples`` (each must parse to it; help shows those that ``say`` something);
    ``rule`` and ``help``; ``valid(state, actor)``; ``suggest`` (examples written for the
    game as it stands) and ``note`` (a line help adds: why not now); ``refusal`` and
    ``usage`` for a line that does not fit; ``strict``: in public, such a line is chatter
    (``judge``, ``ruling``: words of ordinary talk)."""

    def __init__(self, pattern: str, build: Callable[..., Any], *,
                 examples: Sequence[Example | str], rule: str | None = None, help: str = "",
                 fields: Mapping[str, Field] | None = None, valid: Valid | None = None,
                 suggest: Callable[[Any, str], list[Example]] | None = None,
                 note: Callable[[Any, str], str | None] | None = None, refusal: str = "",
                 usage: str = "", strict: bool = False) -> None:
        self.pattern = pattern
        self.strict = strict
        self.build = build
        self.examples = tuple(e if isinstance(e, Example) else Example(e) for e in examples)
        self.rule = rule
        self.help = help
        self.fields = dict(fields or {})
        self.valid = valid
        self.suggest = suggest
        self.note = note
        self.refusal = refusal
        if not self.examples:
            raise ValueError(f"{pattern!r}: a command needs at least one example")
        if not help and not self.examples[0].says:
            raise ValueError(f"{pattern!r}: say what the command does (help, or the examples' says)")
        self._parts = _parse_pattern(pattern)
        slots = _slots(self._parts)
        if len(set(slots)) != len(slots):
            raise ValueError(f"{pattern!r}: a placeholder is named twice")
        if sorted(slots) != sorted(self.fields):
            raise ValueError(f"{pattern!r}: placeholders {sorted(slots)} but fields {sorted(self.fields)}")
        self.words = _command_words(self._parts, self.fields)
        if not self.words:
            raise ValueError(f"{pattern!r}: a command must start with a word, not a field")
        self.first_words = _first_words(self._parts, self.fields)
        self.regex = re.compile(_regex(self._parts, self.fields), re.IGNORECASE | re.DOTALL)
        self.usage = usage or _usage(self._parts, self.fields)

    def __repr__(self) -> str:
        return f"Command({self.pattern!r})"

    def is_valid(self, state: Any, actor: str) -> bool:
        """Whether ``actor`` may send this command now."""
        return self.valid is None or self.valid(state, actor)

    @property
    def shown(self) -> list[Example]:
        """The declared examples ``help`` shows: those that say what they do, else the first."""
        return [e for e in self.examples if e.says] or [self.examples[0]]

    def examples_now(self, state: Any, actor: str) -> list[Example]:
        """The examples ``help`` shows now (``suggest``'s, else the declared ones)."""
        return list(self.suggest(state, actor)) if self.suggest else self.shown

    def help_line(self, example: Example) -> str:
        """``EXAMPLE — what it does (RULE)``, as ``help`` and error replies list it."""
        return help_line(example.line, example.says or self.help, example.rule or self.rule)

    def help_now(self, state: Any, actor: str) -> list[str]:
        """This command's help lines for ``actor`` now (none when invalid), then its note in brackets."""
        lines = []
        if self.is_valid(state, actor):
            lines = [self.help_line(e) for e in self.examples_now(state, actor)]
        note = self.note(state, actor) if self.note else None
        return lines + [f"({note})"] if note else lines

    def read(self, match: re.Match[str]) -> Any:
        """Build the command from a matching line, or :class:`Rejected` citing its rule."""
        try:
            values = {
                name: None if match.group(name) is None else fld.convert(match.group(name))
                for name, fld in self.fields.items()
            }
            return self.build(**values)
        except Rejected as exc:
            raise self._cite(exc) from None

    def misread(self) -> Rejected:
        """The refusal of a line that starts with this command's word but does not fit."""
        if self.refusal:
            why = self.refusal
        elif not self.fields:
            why = f"'{self.usage}' takes nothing after it: send it alone on its line"
        else:
            why = f"the form is '{self.usage}'"
        if self.fields and self.usage not in why:
            why += f"; write it as '{self.usage}'"
        example = self.examples[0].line
        if example != self.usage:
            why += f", for example '{example}'"
        # No ``allowed``: the shell lists what is valid now (this command may not be).
        return Rejected(why, self.rule)

    def _cite(self, exc: Rejected) -> Rejected:
        if exc.rule is None:
            exc.rule = self.rule
        return exc


# --- a game's commands ----------------------------------------------------------------


@dataclass
class Commands:
    """A game's declared commands, in ``help``'s order; ``noun`` names one in errors."""

    noun: str
    declared: Sequence[Command]
    clean: Callable[[str], str] = field(default=lambda line: " ".join(line.split()))

    def __post_init__(self) -> None:
        self.declared = tuple(self.declared)
        self._by_first: dict[str, list[Command]] = {}
        self._by_word: dict[str, list[Command]] = {}
        for command in self.declared:
            for word in command.first_words:
                self._by_first.setdefault(word, []).append(command)
            for word in command.words:
                self._by_word.setdefault(word, []).append(command)
        self.words = frozenset(self._by_word)
        """The game's command words: a public line starting with one is meant as a command."""
        self.leading_words = frozenset(self._by_first)
        """Every word a line that parses may start with (``show`` in ``show my inventory``)."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.declared)

    def read(self, line: str) -> tuple[Command, Any]:
        """The declaration a line matches and the command it builds, or :class:`Rejected`."""
        text = self.clean(line)
        if not text:
            raise Rejected("the line is empty")
        word = text.split()[0].lower()
        for command in self._by_first.get(word, ()):
            match = command.regex.fullmatch(text)
            if match:
                return command, command.read(match)
        for command in self._by_word.get(word, ()):
            raise command.misread()
        raise Rejected(f"'{quote(text, 60)}' is not {self.noun}")

    def parse(self, line: str) -> Any:
        """Turn one cleaned line into a command object, or raise :class:`Rejected`."""
        return self.read(line)[1]

    def fits(self, line: str) -> Command | None:
        """The declaration whose form ``line`` has, its fields unread (help may leave ``CARD``)."""
        text = self.clean(line)
        word = text.split()[0].lower() if text else ""
        return next((c for c in self._by_first.get(word, ()) if c.regex.fullmatch(text)), None)

    def is_command_word(self, word: str) -> bool:
        """Whether a line starting with ``word`` is meant as one of the game's commands."""
        cleaned = self.clean(word).split()
        return bool(cleaned) and cleaned[0].lower() in self.words

    def is_command_line(self, line: str) -> bool:
        """Whether a public line is meant as a command (for ``strict`` commands: only in their form)."""
        text = self.clean(line)
        word = text.split()[0].lower() if text else ""
        commands = self._by_word.get(word, ())
        if not commands:
            return False
        if not all(c.strict for c in commands):
            return True
        return any(c.regex.fullmatch(text) for c in self._by_first.get(word, ()))

    def valid_now(self, state: Any, actor: str) -> list[Command]:
        """The declarations ``actor`` may send now, in declared order."""
        return [c for c in self.declared if c.is_valid(state, actor)]

    def help(self, state: Any, actor: str) -> list[str]:
        """The commands valid now for ``actor``, each an example, what it does and its rule."""
        return [line for command in self.declared for line in command.help_now(state, actor)]


# --- the pattern language ---------------------------------------------------------------


def _parse_pattern(pattern: str) -> tuple[Any, ...]:
    tokens = _TOKENS.findall(pattern)
    if "".join(tokens) != "".join(pattern.split()):
        raise ValueError(f"{pattern!r}: unreadable pattern")
    parts, rest = _sequence(tokens, pattern)
    if rest:
        raise ValueError(f"{pattern!r}: unbalanced ']'")
    return parts


def _sequence(tokens: list[str], pattern: str) -> tuple[tuple[Any, ...], list[str]]:
    parts: list[Any] = []
    while tokens:
        token = tokens[0]
        if token == "]":
            return tuple(parts), tokens
        tokens = tokens[1:]
        if token == "[":
            inner, tokens = _sequence(tokens, pattern)
            if not tokens or tokens[0] != "]" or not inner:
                raise ValueError(f"{pattern!r}: unbalanced or empty '['")
            tokens = tokens[1:]
            parts.append(_Optional(inner))
        elif token.startswith("{"):
            parts.append(_Slot(token[1:-1]))
        else:
            parts.append(_Literal(tuple(w.lower() for w in token.split("|"))))
    return tuple(parts), tokens


def _slots(parts: Sequence[Any]) -> list[str]:
    names: list[str] = []
    for part in parts:
        if isinstance(part, _Slot):
            names.append(part.name)
        elif isinstance(part, _Optional):
            names += _slots(part.parts)
    return names


def _regex(parts: Sequence[Any], fields: Mapping[str, Field], first: bool = True) -> str:
    """Each element after the first is preceded by spaces; an optional one with them."""
    out = ""
    for part in parts:
        if isinstance(part, _Optional):
            inner = _regex(part.parts, fields, first)
            # An optional first element carries the spaces that follow it instead.
            out += f"(?:{inner}\\s+)?" if first else f"(?:{inner})?"
            continue
        gap = "" if first else r"\s+"
        if isinstance(part, _Literal):
            out += gap + "(?:" + "|".join(re.escape(w) for w in part.words) + ")"
        else:
            out += gap + f"(?P<{part.name}>{fields[part.name].pattern})"
        first = False
    return out


def _words_of(part: Any, fields: Mapping[str, Field]) -> set[str]:
    if isinstance(part, _Literal):
        return set(part.words)
    fld = fields[part.name]
    if isinstance(fld, Choice):
        return {option.split()[0].lower() for option in fld.options}
    return set()


def _command_words(parts: Sequence[Any], fields: Mapping[str, Field]) -> frozenset[str]:
    """The words of the first element that is not optional."""
    for part in parts:
        if not isinstance(part, _Optional):
            return frozenset(_words_of(part, fields))
    return frozenset()


def _first_words(parts: Sequence[Any], fields: Mapping[str, Field]) -> frozenset[str]:
    """Every word a matching line can start with (optional leading parts included)."""
    words: set[str] = set()
    for part in parts:
        if isinstance(part, _Optional):
            words |= _first_words(part.parts, fields)
            continue
        return frozenset(words | _words_of(part, fields))
    return frozenset(words)


def _usage(parts: Sequence[Any], fields: Mapping[str, Field]) -> str:
    """The required parts: a literal by its first word, a field by its label."""
    shown = []
    for part in parts:
        if isinstance(part, _Literal):
            shown.append(part.words[0])
        elif isinstance(part, _Slot):
            shown.append(fields[part.name].label)
    return " ".join(shown)
