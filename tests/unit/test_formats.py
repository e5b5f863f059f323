"""Formats (dealer/formats.py): each destination's rendering, escaping, and splitting."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from dealer.formats import DISCORD_LIMIT, WORD_JOINER, render_for, split, to_bbcode, to_discord, to_plain
from dealer.render import render
from dealer.text import escape_post

HORSE = "@everyone **x** <@123>"
NOW = datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)


def test_a_horse_name_is_shown_literally_in_every_format() -> None:
    body = f"**Winner**: {escape_post(HORSE)} `bet 5 on HORSE`"
    assert to_plain(body) == f"Winner: @{WORD_JOINER}everyone **x** <@{WORD_JOINER}123> `bet 5 on HORSE`"
    assert to_bbcode(body) == (
        f"[b]Winner[/b]: @{WORD_JOINER}everyone **x** <@{WORD_JOINER}123> [font=monospace]bet 5 on HORSE[/font]"
    )
    # Discord Markdown keeps the escapes: shown as typed, no bold, no mention.
    assert to_discord(body) == f"**Winner**: @{WORD_JOINER}everyone \\*\\*x\\*\\* \\<@{WORD_JOINER}123\\> `bet 5 on HORSE`"
    assert render_for("markdown", body) == body


def test_bbcode_tags_in_player_text_open_nothing() -> None:
    name = escape_post("[b]big[/b] [url=http://x]y[/url]")
    assert to_bbcode(name) == f"[{WORD_JOINER}b]big[{WORD_JOINER}/b] [{WORD_JOINER}url=http://x]y[{WORD_JOINER}/url]"
    # A template's own plain bracket is made inert too.
    assert to_bbcode("[OR-3] rule") == f"[{WORD_JOINER}OR-3] rule"


def test_plain_text_undoes_escapes_and_drops_emphasis() -> None:
    assert to_plain("*italic* and **bold** and \\*stars\\* and a \\\\ backslash") == \
        "italic and bold and *stars* and a \\ backslash"
    assert to_plain("```\nkept **as is**\n```") == "\nkept **as is**\n"


def test_times_become_discord_timestamps() -> None:
    unix = int(datetime(2026, 12, 1, 19, 0, tzinfo=timezone.utc).timestamp())
    assert unix == 1796151600
    assert to_discord("until 2026-12-01 19:00 UTC (in 1 h).") == f"until <t:{unix}:F> (<t:{unix}:R>)."
    assert to_discord("ended 2026-12-01 19:00 UTC (5 min ago)") == f"ended <t:{unix}:F> (<t:{unix}:R>)"
    assert to_discord("at 2026-12-01 19:00 UTC.") == f"at <t:{unix}:F>."
    # Interpretation (formats.py): a player's text that reads as a UTC time shows that same
    # instant as a timestamp; it can mention or format nothing.
    assert to_discord(escape_post("horse 2026-12-01 19:00 UTC")) == f"horse <t:{unix}:F>"
    # The other formats keep the text.
    assert to_plain("at 2026-12-01 19:00 UTC.") == "at 2026-12-01 19:00 UTC."


def test_a_rendered_template_keeps_player_text_inert_for_discord() -> None:
    body = render("races/betting_opened.txt", NOW, horses=[{"name": HORSE, "card": "K♠"}],
                  closes_at=NOW, betting_window="1 h", waiting=[], house_share_percent=10,
                  table="derby", channel="#the-raceway")
    text = to_discord(body)
    assert "@everyone" not in text and "<@123>" not in text
    assert f"@{WORD_JOINER}everyone \\*\\*x\\*\\* \\<@{WORD_JOINER}123\\>" in text


def test_a_short_post_is_one_part() -> None:
    assert split("hello\n\nworld\n", 2000) == ["hello\n\nworld"]


def test_a_long_post_is_cut_between_paragraphs_and_never_inside_a_table() -> None:
    table = "\n".join(f"- row {i} " + "x" * 40 for i in range(30))  # about 1,500 characters
    text = "intro " + "a" * 900 + "\n\n" + table + "\n\nthe end"
    parts = split(text, 2000)
    assert len(parts) == 2
    assert parts[0] == "intro " + "a" * 900
    assert parts[1] == table + "\n\nthe end"


def test_a_table_separated_by_single_blank_lines_stays_whole() -> None:
    rows = "\n\n".join(f"■■□ {i} — Horse {i} (K♠)" for i in range(40))
    text = "x" * 1500 + "\n\n" + rows
    parts = split(text, 2000)
    assert parts == ["x" * 1500, rows]


def test_a_fence_longer_than_the_limit_is_closed_and_reopened() -> None:
    text = "```\n" + "\n".join("line %03d" % i for i in range(300)) + "\n```"
    parts = split(text, 500)
    assert all(len(p) <= 500 for p in parts)
    assert all(p.startswith("```") and p.endswith("```") for p in parts)
    lines = [line for p in parts for line in p.split("\n") if line != "```"]
    assert lines == ["line %03d" % i for i in range(300)]


def test_a_line_longer_than_the_limit_is_cut_at_spaces() -> None:
    text = " ".join(["word"] * 1000)
    parts = split(text, DISCORD_LIMIT)
    assert all(len(p) <= DISCORD_LIMIT for p in parts)
    assert " ".join(parts).split() == ["word"] * 1000


_LINE = st.one_of(
    st.just(""),
    st.text(alphabet="abc xyz", min_size=1, max_size=120),
    st.builds(lambda s: "- " + s, st.text(alphabet="abc ", min_size=1, max_size=80)),
    st.builds(lambda s: "■ " + s, st.text(alphabet="abc ", min_size=1, max_size=80)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=120), st.integers(min_value=200, max_value=2000))
def test_splitting_keeps_every_line_in_order_within_the_limit(lines: list[str], limit: int) -> None:
    text = "\n".join(lines).strip("\n")
    parts = split(text, limit)
    assert all(0 < len(p) <= limit for p in parts) or not text.strip()
    # Nothing is lost or reordered: the non-blank lines, joined, are the text's own.
    kept = [line for p in parts for line in p.split("\n") if line.strip()]
    assert " ".join(kept).split() == " ".join(l for l in text.split("\n") if l.strip()).split()
