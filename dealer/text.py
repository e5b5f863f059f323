"""Player text in and out: clean what arrives, escape what is published.

Player-chosen text (horse names, proposals, quoted command lines) is data. Every value a
template interpolates passes through :func:`escape_post` (the Jinja environment applies
it automatically), so it can never format a post, mention everyone, ping a role or user,
or open a link or BBCode tag.
"""

from __future__ import annotations

import re
import unicodedata

MAX_BODY_CHARS = 4000
MAX_LINES = 40
MAX_LINE_CHARS = 300

# Zero-width and bidirectional controls that make two names look alike or reorder text.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad]")


def clean_line(text: str) -> str:
    """Drop control and invisible characters and squeeze runs of spaces.

    Keeps every printable character, in any script; tabs become spaces.
    """
    text = _INVISIBLE.sub("", text.replace("\t", " "))
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")
    return re.sub(r" {2,}", " ", text).strip()


def command_lines(body: str) -> list[str]:
    """The non-empty, cleaned lines of a message body, one command each."""
    return [line for line in (clean_line(raw) for raw in body.splitlines()) if line]


# Characters with meaning anywhere in Discord markdown, forum markdown or BBCode, and
# those that only mean something at the start of a line (headings, lists, quotes).
_MARKUP = re.compile(r"([\\`*_~|\[\]<>])")
_LINE_START = re.compile(r"^([#+\-=])", re.MULTILINE)
_NUMBERED = re.compile(r"^(\d+)\.", re.MULTILINE)
_MENTION = re.compile(r"@")
_ANY_SPECIAL = re.compile(r"[\\`*_~|\[\]<>@]|^[#+\-=]|^\d+\.", re.MULTILINE)


def escape_post(value: object) -> str:
    """Make ``value`` inert in Discord markdown, forum markdown and BBCode.

    Markup characters are backslash-escaped and every ``@`` gets a zero-width joiner after
    it, so ``@everyone``, ``@here`` and ``<@123>`` are shown but mention nobody.
    """
    text = str(value)
    if not _ANY_SPECIAL.search(text):
        return text  # the common case: plain words and numbers need nothing
    text = _MARKUP.sub(r"\\\1", text)
    text = _LINE_START.sub(r"\\\1", text)
    text = _NUMBERED.sub(r"\1\\.", text)
    return _MENTION.sub("@\u2060", text)


def quote(line: str, limit: int = 120) -> str:
    """A player's line shortened for quoting back in a reply."""
    return line if len(line) <= limit else line[: limit - 1] + "…"
