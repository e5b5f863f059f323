"""Player text: cleaning what arrives and escaping what is published."""

from __future__ import annotations

import re

from hypothesis import example, given, settings, strategies as st

from dealer.text import _needs_escape, clean_line, command_lines, escape_post, plural

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


_ANY_SPECIAL = re.compile(r"[\\`*_~|\[\]<>@]|^[#+\-=]|^\d+\.", re.MULTILINE)
"""What escape_post tested in one search before it split the test in two."""


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab @#-+=1٣².\\`*_~|[]<>\n\r ")) | st.characters(), max_size=40))
def test_text_with_nothing_to_escape_is_told_apart_as_by_one_search(text: str) -> None:
    assert _needs_escape(text) == (_ANY_SPECIAL.search(text) is not None), text
    assert (escape_post(text) != text) <= _needs_escape(text)


def test_examples() -> None:
    assert escape_post("@everyone") == "@\u2060everyone"
    assert escape_post("**bold** [url=x]y[/url]") == "\\*\\*bold\\*\\* \\[url=x\\]y\\[/url\\]"
    assert escape_post("Thunder Hooves") == "Thunder Hooves"
    assert escape_post("- 1. T-1") == "\\- 1. T-1"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab \t\x07\x7f\u200b\u00e9\n")) | st.characters(), max_size=40))
@example("0\t\t\u00a00")  # two spaces then a no-break space: squeezed to one space, the no-break one kept
def test_a_line_is_cleaned_as_by_the_character_by_character_filter(text: str) -> None:
    import unicodedata
    slow = re.sub(r" {2,}", " ", "".join(
        ch for ch in re.sub("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad]", "",
                            text.replace("\t", " "))
        if unicodedata.category(ch)[0] != "C")).strip()
    assert clean_line(text) == slow


def test_cleaning_drops_invisible_and_control_characters() -> None:
    assert clean_line("  bet\u200b gold\t30\x07  ") == "bet gold 30"
    assert command_lines("bet gold 40\n\n \u200b \nprepare gold gold 30 silver 10\r\n") == [
        "bet gold 40", "prepare gold gold 30 silver 10"
    ]


# -- player names ---------------------------------------------------------------------------

import pytest  # noqa: E402

from dealer.text import BadName, look_alike_keys, player_key, player_name  # noqa: E402


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("alice", "alice"),
        ("  Thunder   Bob ", "Thunder Bob"),
        ("Thunder\u00a0Bob", "Thunder Bob"),  # a no-break space is a space
        ("Zoe\u0308", "Zo\u00eb"),  # e + combining diaeresis is kept composed (NFC)
        ("*Star* <b>[x]", "*Star* <b>[x]"),  # markup is escaped where posted, not refused
        ("Дмитрий", "Дмитрий"),
        ("😀 smile", "😀 smile"),
        ("x" * 64, "x" * 64),
    ],
)
def test_any_printable_name_of_up_to_64_characters_is_a_name(given: str, shown: str) -> None:
    assert player_name(given) == shown


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("", "cannot be empty"),
        ("   ", "cannot be empty"),
        ("x" * 65, "65 characters long"),
        ("bad\tname", "U+0009"),
        ("two\nlines", "U+000A"),
        ("ali\u200bce", "U+200B"),  # zero-width space
        ("\u202eecila", "U+202E"),  # right-to-left override
        ("a\x00", "U+0000"),
        ("@everyone", "'@'"),
        ("<@123>", "'@'"),
        ("Smith, John", "','"),
        ("\ufdfa" * 4, "longer than 64"),  # 4 characters that NFKC writes out as 72
    ],
)
def test_names_dealer_refuses(given: str, why: str) -> None:
    with pytest.raises(BadName, match=re.escape(why)):
        player_name(given)


def test_a_name_is_matched_ignoring_case_width_and_spacing() -> None:
    keys = {player_key(n) for n in ("Alice", "ALICE", "alice", " alice ", "ａｌｉｃｅ", "Ａlice")}
    assert keys == {"alice"}
    assert player_key("Thunder  Bob") == player_key("thunder\u2003bob") == "thunder bob"
    assert player_key("Straße") == player_key("STRASSE") == "strasse"
    assert player_key("ali\u200bce") != "alice"  # an invisible character matches nobody


@pytest.mark.parametrize(
    "twin",
    ["аlice",  # Cyrillic а
     "Аlice",  # Cyrillic А
     "AIice",  # capital i for l
     "Alicé", "ALICE", "ａｌｉｃｅ", "alice\u0301"],
)
def test_look_alikes_of_alice(twin: str) -> None:
    assert look_alike_keys("alice") & look_alike_keys(twin)


@pytest.mark.parametrize(
    ("one", "other"),
    [("bob", "b0b"), ("bob", "ΒΟΒ"), ("Nick", "Νick"), ("Ann-Marie", "Ann–Marie"),
     ("O'Neil", "O’Neil"), ("Arnold", "Amold"), ("will", "wiII"), ("Thunder Bob", "Thunder\u00a0Bob")],
)
def test_more_look_alikes(one: str, other: str) -> None:
    assert look_alike_keys(one) & look_alike_keys(other)


@pytest.mark.parametrize(("one", "other"), [("alice", "alicia"), ("Alice B", "AliceB"), ("bob", "rob"), ("Kim", "Tim")])
def test_names_that_do_not_look_alike(one: str, other: str) -> None:
    assert not look_alike_keys(one) & look_alike_keys(other)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=20), st.sampled_from([str.upper, str.lower, str.swapcase, str.title]))
def test_names_with_one_key_always_look_alike(name: str, change) -> None:  # type: ignore[no-untyped-def]
    other = change(name)
    if player_key(name) == player_key(other):
        assert look_alike_keys(name) & look_alike_keys(other)


def test_plural_examples() -> None:
    assert plural(1, "chip") == "1 chip"
    assert plural(0, "chip") == "0 chips"
    assert plural(2, "round") == "2 rounds"
    assert plural(-1, "point") == "-1 point"
    assert plural(1, "vertebra", "vertebrae") == "1 vertebra"
    assert plural(12, "vertebra", "vertebrae") == "12 vertebrae"
    assert plural(3, "deck pack") == "3 deck packs"


@given(st.integers(min_value=-10**6, max_value=10**6), st.sampled_from(["chip", "round", "card"]))
def test_plural_agrees_with_its_count(count: int, word: str) -> None:
    out = plural(count, word)
    assert out.startswith(f"{count} ")
    assert out.endswith(word + "s") == (abs(count) != 1)
