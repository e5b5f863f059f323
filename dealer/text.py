"""Player text in and out: clean what arrives, escape what is published (every value a
template prints goes through :func:`escape_post`)."""

from __future__ import annotations

import re
import unicodedata

MAX_BODY_CHARS = 4000
MAX_LINES = 40
MAX_LINE_CHARS = 300

_SPACES = re.compile(r"\s+")
_RUNS = re.compile(r" {2,}")  # clean_line squeezes spaces only: a no-break space is kept
# Zero-width and bidirectional controls that make two names look alike or reorder text.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad]")


def clean_line(text: str) -> str:
    """Drop control and invisible characters and squeeze runs of spaces (tabs become spaces)."""
    if not (text.isascii() and text.isprintable()):
        # Printable ASCII (nearly every line) has no control character, invisible one or tab.
        text = _INVISIBLE.sub("", text.replace("\t", " "))
        text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")
    return _RUNS.sub(" ", text).strip()


def command_lines(body: str) -> list[str]:
    """The non-empty, cleaned lines of a message body, one command each."""
    return [line for line in (clean_line(raw) for raw in body.splitlines()) if line]


# Characters with meaning anywhere in Discord markdown, forum markdown or BBCode, and
# those that only mean something at the start of a line (headings, lists, quotes).
_MARKUP = re.compile(r"([\\`*_~|\[\]<>])")
_LINE_START = re.compile(r"^([#+\-=])", re.MULTILINE)
_NUMBERED = re.compile(r"^(\d+)\.", re.MULTILINE)
_MENTION = re.compile(r"@")
_SPECIAL_CHAR = re.compile(r"[\\`*_~|\[\]<>@]")
_SPECIAL_LINE_START = re.compile(r"^(?:[#+\-=]|\d+\.)", re.MULTILINE)


def _needs_escape(text: str) -> bool:
    """Whether :func:`escape_post` would change ``text``: two plain searches cost less than one
    with line-start alternatives (every value a post prints is tested)."""
    if _SPECIAL_CHAR.search(text):
        return True
    first = text[:1]
    if first and (first in "#+-=" or first.isdigit()) or "\n" in text:
        return _SPECIAL_LINE_START.search(text) is not None
    return False


def escape_post(value: object) -> str:
    """Make ``value`` inert in Discord markdown, forum markdown and BBCode; ``@`` mentions nobody."""
    text = str(value)
    if not _needs_escape(text):
        return text  # the common case: plain words and numbers need nothing
    text = _MARKUP.sub(r"\\\1", text)
    text = _LINE_START.sub(r"\\\1", text)
    text = _NUMBERED.sub(r"\1\\.", text)
    return _MENTION.sub("@\u2060", text)


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``1 chip``, ``0 chips``, ``2 chips``: only 1 and -1 take the singular."""
    word = singular if abs(count) == 1 else (plural_form or singular + "s")
    return f"{count} {word}"


def quote(line: str, limit: int = 120) -> str:
    """A player's line shortened for quoting back in a reply."""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- player names -------------------------------------------------------------------------
# Forum and Discord names carry spaces and letters of every script. A name is any printable
# text of at most 64 characters; dealer matches names ignoring case, width and the kind and
# number of spaces (NFKC, then case folding), and refuses a new name that looks like an
# existing one (see look_alike_key). Player names are data like any player text: every post
# escapes them (escape_post), so markup in a name is shown, never applied.

MAX_NAME_CHARS = 64

# Not in a name: '@' (a name must never read as a mention, even where a platform ignores
# escaping) and ',' (it separates the names of `dealer game new --players a,b`).
_REFUSED_IN_NAMES = {"@": "'@' (names never mention anyone)", ",": "',' (commas separate names in lists)"}


class BadName(ValueError):
    """A player name dealer refuses; the message says why, in the admin's terms."""


def player_name(text: str) -> str:
    """The name as dealer shows it, spaces squeezed; :class:`BadName` for an empty or too long
    name, or one with an invisible or control character, '@' or ','."""
    for ch in text:
        if unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp"):
            raise BadName(
                f"it contains the invisible or control character U+{ord(ch):04X}; "
                "a name is printable text"
            )
        if ch in _REFUSED_IN_NAMES:
            raise BadName(f"it contains {_REFUSED_IN_NAMES[ch]}")
    name = _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()
    if not name:
        raise BadName("a name cannot be empty")
    if len(name) > MAX_NAME_CHARS:
        raise BadName(f"it is {len(name)} characters long; a name has at most {MAX_NAME_CHARS}")
    if len(player_key(name)) > MAX_NAME_CHARS:
        raise BadName(f"written out in plain letters it is longer than {MAX_NAME_CHARS} characters")
    return name


def player_key(name: str) -> str:
    """The key a name is looked up by: NFKC, case folded, NFKC again, spaces squeezed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return _SPACES.sub(" ", folded).strip()


# Characters drawn like a Latin letter or digit in common fonts, mapped to it: capital I, 1
# and | look like l, 0 like o; letters of Cyrillic, Greek and Armenian written like Latin
# ones, capital and small apart (Greek capital Ν is N, small ν is v).
_LOOK_ALIKE_PAIRS = (
    "Il 1l |l ǀl 0o ıi ȷj ɡg ɑa ɩi "
    # Cyrillic
    "АA ВB ЕE КK МM НH ОO РP СC ТT ХX УY ҮY ЅS Іl ЈJ ԚQ ԜW Ӏl "
    "аa еe оo рp сc уy хx үy ѕs іi јj ԁd ԛq ԝw һh ӏl "
    # Greek
    "ΑA ΒB ΕE ΖZ ΗH Ιl ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX οo νv ιi ρp υu χx αa γy κk "
    # Armenian
    "օo սu հh ոn ցg զq"
)
_LOOK_ALIKE = {pair[0]: pair[1] for pair in _LOOK_ALIKE_PAIRS.split()}
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_QUOTES = "\u2018\u2019\u201b\u2032\u0060\u00b4"
_LOOK_ALIKE.update({ch: "-" for ch in _DASHES})
_LOOK_ALIKE.update({ch: "'" for ch in _QUOTES})
_LOOK_ALIKE.update({ch: '"' for ch in "\u201c\u201d\u201f\u2033"})
# Letter pairs that read as one letter: "rn" as "m", "vv" as "w".
_DIGRAPHS = (("rn", "m"), ("vv", "w"))


def look_alike_keys(name: str) -> frozenset[str]:
    """Two names a player could mistake for each other share one of these keys: letters drawn
    alike mapped to one, :func:`player_key`, accents dropped, "rn" read "m", "vv" "w".
    Stored per player (``player_look_alikes``): a change to this rule needs a migration."""
    return frozenset({_skeleton(unicodedata.normalize("NFKC", name)), _skeleton(player_key(name))})


def account_problem(account_id: str) -> str | None:
    """Why a platform account id cannot be what its owner types (an invisible character, a
    letter drawn like a Latin one), or None: accounts are matched character for character."""
    for ch in account_id:
        if unicodedata.category(ch)[0] in "CZ" and ch != " ":
            return f"it contains the invisible character U+{ord(ch):04X}"
        if ch.isascii():
            continue
        plain = unicodedata.normalize("NFKC", ch)
        like = _LOOK_ALIKE.get(ch) or (plain if plain != ch and plain.isascii() else None)
        if like:
            return f"it contains {ch!r} (U+{ord(ch):04X}), which looks like {like!r}"
    return None


def _skeleton(text: str) -> str:
    text = "".join(_LOOK_ALIKE.get(ch, ch) for ch in text)
    text = "".join(_LOOK_ALIKE.get(ch, ch) for ch in player_key(text))
    text = "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")
    for pair, letter in _DIGRAPHS:
        text = text.replace(pair, letter)
    return text
