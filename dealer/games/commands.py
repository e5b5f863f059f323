"""Player commands, each declared once (DESIGN.md: "A command is declared once").

A game lists its commands as :class:`Command` declarations in one :class:`Commands`. Each
declaration holds the command's grammar (a compact pattern whose fields are read by
converters), its examples, its rule id, its help text and when it is valid. From that one
list come:

- the parser (:meth:`Commands.parse`): a line becomes the command object, or
  :class:`~dealer.games.rejection.Rejected` naming the expected form and an example;
- ``help`` (:meth:`Commands.help`): the commands valid now for a player, each with an
  example and its rule id;
- chatter detection (:meth:`Commands.is_command_word`): in a public channel, a line whose
  first word is no command word of the game is chatter; one that starts with a command word
  but does not parse is a refused command;
- a test that every example of every command of every game parses to its own declaration
  (``tests/unit/games/test_commands.py``).

The grammar of a pattern, matched against the whole line, in any case::

    bet {amount} [chip|chips] on {horse}

- ``word``: a literal word; ``a|b``: one of several words;
- ``[ ... ]``: an optional part (parts may nest);
- ``{name}``: a field, matched by ``fields[name].pattern`` (a regular expression) and
  turned into a value by ``fields[name].convert`` (``None`` when an optional field is absent).

Elements are separated by spaces (one or more in the line). The built command is
``build(**values)``: usually the command's dataclass itself. The command words of a
declaration (those that make a line a command rather than chatter) are the words of its
first element that is not optional: ``[show] [my] inventory|inv`` has ``inventory`` and
``inv``, so "show me the cards" is chatter, while "show my inventory" still parses.
"""

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
    """A placeholder's regular expression (``pattern``), its name in a command's form
    (``label``) and its converter (:meth:`convert`).

    ``convert`` raises :class:`Rejected` with a message in the player's terms; the parser
    adds the declaration's rule id when the refusal has none.
    """

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
    """Free text up to the next literal of the pattern (``lazy``) or to the end of the line;
    ``read`` turns it into the value (default: the text itself)."""

    def __init__(
        self, label: str = "TEXT", *, lazy: bool = False, read: Callable[[str], Any] | None = None
    ) -> None:
        self.label = label
        self.pattern = r".+?" if lazy else r".+"
        self._read = read

    def convert(self, text: str) -> Any:
        """``read(text)``, or the text itself."""
        return self._read(text) if self._read else text


class Player(Field):
    """A player's name as written in a command. Names hold spaces (``Mary Ann``: forum and
    Discord names), so the field takes every word up to the next literal of the pattern
    (``lazy``) or to the end of the line, spaces squeezed; the game compares it with its
    players' names (:func:`dealer.text.player_key`: case and width aside, a leading ``@`` allowed)."""

    def __init__(self, label: str = "PLAYER", *, lazy: bool = False) -> None:
        self.label = label
        self.pattern = r".+?" if lazy else r".+"

    def convert(self, text: str) -> str:
        """The name as written, each run of spaces made one space."""
        return " ".join(text.split())


class Players(Field):
    """One or more players' names, separated by spaces, commas or ``and``. A name may hold
    spaces itself, so only the game, which knows the names, can tell where each ends: the
    value is the words as written (a comma is a word of its own), read by
    :func:`dealer.games.names.read_names`."""

    pattern = r".+"

    def __init__(self, label: str = "PLAYERS") -> None:
        self.label = label

    def convert(self, text: str) -> tuple[str, ...]:
        """The words, commas apart."""
        return tuple(text.replace(",", " , ").split())


class Whole(Field):
    """A whole number from ``least`` to ``most`` (inclusive; ``most`` None: no upper bound).

    ``complaint`` is the message for anything else; it may use ``{text}``, ``{least}`` and
    ``{most}``. Only ASCII digits count (``²`` is a digit to Python, not to a player).
    """

    MAX_DIGITS = 9  # refuse before int(): no count in any game comes near it

    def __init__(
        self,
        least: int = 0,
        most: int | None = None,
        *,
        complaint: str = "'{text}' is not a whole number from {least}",
        label: str = "N",
        pattern: str = r"\S+",
        strip: str = "",
    ) -> None:
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
    """One of a fixed set of words or phrases, each mapped to its value.

    The pattern lists the options themselves, so a line naming something else does not
    match the command's form at all (and is refused with the form and an example).
    """

    def __init__(self, options: Mapping[str, Any] | Iterable[str], label: str) -> None:
        self.options = dict(options) if isinstance(options, Mapping) else {o: o for o in options}
        self.label = label
        longest_first = sorted(self.options, key=len, reverse=True)
        self.pattern = "|".join(r"\s+".join(map(re.escape, o.split())) for o in longest_first)

    def convert(self, text: str) -> Any:
        """The value of the option written (any case, any spacing)."""
        return self.options[" ".join(text.lower().split())]


class CardName(Field):
    """A card of the catalogue as players write it (``king of spades``, ``KS``, ``K♠``,
    ``10h``, ``red joker``, ``holo 7H``): its ``(Card, holographic)``."""

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
    """``receipts``: everything on file for the player in the game's current phase, in full
    (the detail a brief reply leaves out: dealer/detail.py)."""


RECEIPTS_SAYS = "everything on file for you now, in full"


def receipts_command(says: str = RECEIPTS_SAYS, valid: "Valid | None" = None,
                     rule: str | None = None) -> "Command":
    """The ``receipts`` command, declared here once; each game lists it among its commands
    with what its answer holds (``says``) and answers it in its rules."""
    return Command(
        "receipts|receipt", Receipts, examples=[Example("receipts", says), "receipt"], rule=rule,
        valid=valid,
    )


# --- one command's declaration --------------------------------------------------------


def help_line(line: str, says: str = "", rule: str | None = None) -> str:
    """``EXAMPLE — what it does (RULE)``, as ``help`` and refusals list a command; the rule
    is cited once (not again when ``says`` already cites it)."""
    text = f"{line} — {says}" if says else line
    return f"{text} ({rule})" if rule and f"({rule})" not in says else text


@dataclass(frozen=True)
class Example:
    """An example line, what it does (for ``help``) and, if it differs from its
    command's, the rule it applies."""

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
    """One player command, declared once.

    - ``pattern``: the grammar (see the module's docstring); ``fields`` reads its
      placeholders; ``build(**values)`` makes the command object;
    - ``examples``: lines that must parse to this command (a test checks each); ``help``
      lists those that say what they do, else the first (or ``suggest``'s lines) while the
      command is valid; the others are further spellings the parser accepts;
    - ``rule``: the rule id it applies (cited by help and by its parse errors);
    - ``help``: what it does, for an example without its own ``says`` (one of the two is
      required);
    - ``valid(state, actor)``: whether the command may be sent now (default: always);
    - ``suggest(state, actor)``: the examples help shows now, written for the game as it
      stands (the offer numbers a player may accept, a colour still left ...); default the
      static ``examples``;
    - ``note(state, actor)``: a line help adds after the command's examples, whether or not
      it is valid (what it cannot do now and why: "the Hall opens at ...");
    - ``refusal``: what a line that starts with a command word but does not fit the form
      lacks, in the player's terms (the parser adds the form and an example);
    - ``usage``: the form shown in that error (default: the pattern's required parts,
      fields by their labels);
    - ``strict``: in a public channel, a line that starts with this command's word but does
      not fit its form is chatter, not a refused command (``judge``, ``ruling``, ``remove``:
      words people use in ordinary talk, "judge was right", "ruling aside ...").
    """

    def __init__(
        self,
        pattern: str,
        build: Callable[..., Any],
        *,
        examples: Sequence[Example | str],
        rule: str | None = None,
        help: str = "",
        fields: Mapping[str, Field] | None = None,
        valid: Valid | None = None,
        suggest: Callable[[Any, str], list[Example]] | None = None,
        note: Callable[[Any, str], str | None] | None = None,
        refusal: str = "",
        usage: str = "",
        strict: bool = False,
    ) -> None:
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
        """The declared examples ``help`` shows: those that say what they do, else the first
        (the others are further spellings, parsed by the example test only)."""
        return [e for e in self.examples if e.says] or [self.examples[0]]

    def examples_now(self, state: Any, actor: str) -> list[Example]:
        """The examples ``help`` shows now (``suggest``'s, else the declared ones)."""
        return list(self.suggest(state, actor)) if self.suggest else self.shown

    def help_line(self, example: Example) -> str:
        """``EXAMPLE — what it does (RULE)``, as ``help`` and error replies list it."""
        return help_line(example.line, example.says or self.help, example.rule or self.rule)

    def help_now(self, state: Any, actor: str) -> list[str]:
        """This command's help lines for ``actor`` now (none when it is not valid), then
        its note, if it has one now, in brackets."""
        lines = []
        if self.is_valid(state, actor):
            lines = [self.help_line(e) for e in self.examples_now(state, actor)]
        note = self.note(state, actor) if self.note else None
        return lines + [f"({note})"] if note else lines

    def read(self, match: re.Match[str]) -> Any:
        """Convert a matching line's fields and build the command, or raise :class:`Rejected`
        citing this command's rule (what may be sent instead is the shell's to add: the
        commands valid now)."""
        try:
            values = {
                name: None if match.group(name) is None else fld.convert(match.group(name))
                for name, fld in self.fields.items()
            }
            return self.build(**values)
        except Rejected as exc:
            raise self._cite(exc) from None

    def misread(self) -> Rejected:
        """The refusal of a line that starts with this command's word but does not fit:
        what it lacks (``refusal``), the form and an example."""
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
    """A game's declared commands, in the order ``help`` lists them.

    ``noun`` names a command of the game in errors ("a Hall command"); ``clean`` prepares a
    line before it is matched (default: surrounding spaces dropped, runs squeezed).
    """

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
        """The game's command words (lower case): a public line starting with one is meant
        as a command; any other is chatter."""
        self.leading_words = frozenset(self._by_first)
        """Every word a line that parses may start with: the command words and the optional
        words before some of them (``show`` in ``show my inventory``)."""

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
        """The declaration whose form ``line`` has, its fields not read: a help line may
        leave a field for the player to fill, written as the field's label
        (``horse Silver Blaze card CARD``: help cannot see the player's cards)."""
        text = self.clean(line)
        word = text.split()[0].lower() if text else ""
        return next((c for c in self._by_first.get(word, ()) if c.regex.fullmatch(text)), None)

    def is_command_word(self, word: str) -> bool:
        """Whether a line starting with ``word`` is meant as one of the game's commands."""
        cleaned = self.clean(word).split()
        return bool(cleaned) and cleaned[0].lower() in self.words

    def is_command_line(self, line: str) -> bool:
        """Whether a public line is meant as one of the game's commands: it starts with a
        command word, and, when every command of that word is ``strict``, it also has the
        form of one of them (else it is chatter)."""
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
