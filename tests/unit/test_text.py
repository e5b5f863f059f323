"""Player text: cleaning what arrives and escaping what is published."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from dealer.text import clean_line, command_lines, escape_post

MARKUP = set("\\`*_~|[]<>")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab @#-+=1.\\`*_~|[]<>\n ")) | st.characters(), max_size=40))
def test_escaped_text_mentions_nobody_and_carries_no_markup(text: str) -> None:
    out = escape_post(text)
    # every @ is followed by a word joiner, so @everyone / <@123> ping nobody
    assert not re.search("@(?!\u2060)", out)
    # every markup character is escaped (preceded by an odd run of backslashes)
    for match in re.finditer(r"(\\*)([`*_~|\[\]<>])", out):
        assert len(match.group(1)) % 2 == 1, (text, out)
    # no line starts a heading, list or quote
    for line in out.split("\n"):
        assert not re.match(r"[#+\-=]|\d+\.", line), (text, out)


def test_examples() -> None:
    assert escape_post("@everyone") == "@\u2060everyone"
    assert escape_post("**bold** [url=x]y[/url]") == "\\*\\*bold\\*\\* \\[url=x\\]y\\[/url\\]"
    assert escape_post("Thunder Hooves") == "Thunder Hooves"
    assert escape_post("- 1. T-1") == "\\- 1. T-1"


def test_cleaning_drops_invisible_and_control_characters() -> None:
    assert clean_line("  bet\u200b gold\t30\x07  ") == "bet gold 30"
    assert command_lines("bet gold 40\n\n \u200b \nprepare gold gold 30 silver 10\r\n") == [
        "bet gold 40", "prepare gold gold 30 silver 10"
    ]
