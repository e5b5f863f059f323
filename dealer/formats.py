"""Formats: a post written for its destination and split to its limit (docs/ROUTES.md).

Interpretation (tested): a player's text that reads exactly like one of dealer's times also
becomes a Discord timestamp of that instant; it can mention or format nothing."""

from __future__ import annotations

import re
from datetime import datetime, timezone

DISCORD_LIMIT = 2000
"""Characters in one Discord message."""

FORMATS = ("markdown", "discord", "bbcode", "plain")

# -- reading dealer's markup ------------------------------------------------------------------

_TOKEN = re.compile(r"\\(.)|```|\*\*|\*|`|\[", re.DOTALL)
"""An escaped character, a fence, bold, italic, inline code, or a square bracket."""

WORD_JOINER = "\u2060"


def _convert(body: str, bold: tuple[str, str], italic: tuple[str, str], code: tuple[str, str],
             fence: tuple[str, str], escape: "dict[str, str]", bracket: str) -> str:
    """Rewrite dealer's markup token by token; ``escape`` writes a player's literal character."""
    out: list[str] = []
    state = {"bold": False, "italic": False, "code": False, "fence": False}
    pos = 0
    while (match := _TOKEN.search(body, pos)) is not None:
        out.append(body[pos:match.start()])
        pos = match.end()
        token = match.group(0)
        if state["fence"] or state["code"]:
            # Shown as it is, up to the closing mark: a backslash escapes nothing there (it
            # is read again from the character after it), and a "[" opens no tag.
            if match.group(1) is not None:
                out.append("\\")
                pos = match.start() + 1
            elif token == ("```" if state["fence"] else "`"):
                state["fence" if state["fence"] else "code"] = False
                out.append(fence[1] if token == "```" else code[1])
            else:
                out.append(bracket if token == "[" else token)
            continue
        if match.group(1) is not None:
            char = match.group(1)
            out.append(escape.get(char, char))
        elif token == "```":
            state["fence"] = True
            out.append(fence[0])
        elif token == "**":
            state["bold"] = not state["bold"]
            out.append(bold[0] if state["bold"] else bold[1])
        elif token == "*":
            state["italic"] = not state["italic"]
            out.append(italic[0] if state["italic"] else italic[1])
        elif token == "`":
            state["code"] = True
            out.append(code[0])
        else:  # an unescaped "[" of a template's own text
            out.append(bracket)
    out.append(body[pos:])
    return "".join(out)


def to_plain(body: str) -> str:
    """Plain text: marks dropped, escapes undone; code keeps its backticks (a command to type)."""
    text = _convert(body, ("", ""), ("", ""), ("`", "`"), ("", ""), {}, "[")
    return re.sub(r"\n{3,}", "\n\n", text)


def to_bbcode(body: str) -> str:
    """BBCode; any other ``[`` is followed by a word joiner so it can open no tag."""
    inert = "[" + WORD_JOINER
    return _convert(body, ("[b]", "[/b]"), ("[i]", "[/i]"), ("[font=monospace]", "[/font]"),
                    ("[code]", "[/code]"), {"[": inert}, inert)


_UTC_TIME = re.compile(
    r"(?P<time>\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC"
    # The same instant in the game's zone (dealer.clock.format_utc_and_local): the tag
    # shows each reader their own, so it is dropped.
    r"(?: / (?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} [A-Za-z][A-Za-z0-9_/+\-]{0,40})?"
    r"(?P<rel> \((?:in [^()\n]{1,40}|[^()\n]{1,40} ago|now|in less than a minute)\))?"
)


def to_discord(body: str) -> str:
    """Discord Markdown: the stored markup, with ``YYYY-MM-DD HH:MM UTC`` as ``<t:UNIX:F>`` and
    a relative time after it as ``(<t:UNIX:R>)``, so each reader sees their own zone."""

    def tag(match: re.Match[str]) -> str:
        when = datetime.strptime(match.group("time"), "%Y-%m-%d %H:%M").replace(tzinfo=timezone.utc)
        unix = int(when.timestamp())
        return f"<t:{unix}:F>" + (f" (<t:{unix}:R>)" if match.group("rel") else "")

    return _UTC_TIME.sub(tag, body)


_WRITERS = {"markdown": str, "discord": to_discord, "bbcode": to_bbcode, "plain": to_plain}
"""How each format writes the stored body (itself Markdown)."""


def render_for(fmt: str, body: str) -> str:
    """``body`` in the format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in _WRITERS:
        raise ValueError(f"unknown format {fmt!r}")
    return _WRITERS[fmt](body)


# -- splitting ----------------------------------------------------------------------------------


def _row_mark(line: str) -> str | None:
    """The character a table row begins with (None for prose and blank lines)."""
    stripped = line.lstrip()
    if not stripped or stripped[0].isalnum() or stripped[0] in "*_`\\(\"'":
        return None
    return stripped[0]


def _cut_points(lines: list[str]) -> tuple[set[int], set[int]]:
    """Before which lines a cut is allowed, paragraph starts preferred: tables and fences stay whole."""
    allowed: set[int] = set()
    paragraph: set[int] = set()
    in_fence = False
    mark: str | None = None
    blanks = 0
    for i, line in enumerate(lines):
        if in_fence:
            if line.strip().startswith("```"):
                in_fence = False
            continue
        if not line.strip():
            blanks += 1
            continue
        row = _row_mark(line)
        same_table = mark is not None and row == mark and blanks <= 1
        if i > 0 and not same_table:
            allowed.add(i)
            if blanks:
                paragraph.add(i)
        blanks = 0
        mark = row
        if line.count("```") % 2 == 1:
            in_fence = True
            mark = None
    return allowed, paragraph


def _hard_pieces(line: str, limit: int) -> list[str]:
    """A single line longer than ``limit``, cut at spaces (else anywhere)."""
    pieces = []
    while len(line) > limit:
        cut = line.rfind(" ", 0, limit)
        cut = cut if cut > limit // 2 else limit
        pieces.append(line[:cut])
        line = line[cut:].lstrip(" ")
    return pieces + [line]


def split(text: str, limit: int) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut at the last allowed line that fits."""
    text = text.strip("\n")
    if len(text) <= limit:
        return [text]
    lines: list[str] = []
    for line in text.split("\n"):
        lines.extend(_hard_pieces(line, limit) if len(line) > limit else [line])
    allowed, paragraph = _cut_points(lines)
    parts: list[str] = []
    start = 0
    while start < len(lines):
        size, end = 0, start
        while end < len(lines) and size + len(lines[end]) + (1 if end > start else 0) <= limit:
            size += len(lines[end]) + (1 if end > start else 0)
            end += 1
        if end >= len(lines):
            parts.append("\n".join(lines[start:]).strip("\n"))
            break
        candidates = [i for i in range(start + 1, end + 1) if i in allowed]
        preferred = [i for i in candidates if i in paragraph]
        cut = (preferred or candidates or [None])[-1]
        if cut is None:  # one block longer than the limit: cut it at its lines
            cut = max(end, start + 1)
            fence = _open_fence(lines[start:cut])
            if fence is not None:
                # Close the fence in this part (a line moves on if needed), open it again.
                while cut - 1 > start and size + 4 > limit:
                    cut -= 1
                    size -= len(lines[cut]) + 1
                parts.append("\n".join(lines[start:cut]).strip("\n") + "\n```")
                lines.insert(cut, fence)
                start = cut
                continue
        parts.append("\n".join(lines[start:cut]).strip("\n"))
        start = cut
        while start < len(lines) and not lines[start].strip():
            start += 1
    return [p for p in parts if p]


def _open_fence(lines: list[str]) -> str | None:
    """The opening line of a fence still open at the end of ``lines``, else None."""
    opener = None
    for line in lines:
        if line.count("```") % 2 == 1:
            opener = None if opener is not None else line.strip()
    return opener
