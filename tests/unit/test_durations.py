"""Durations as hosts write them (dealer.clock.parse_duration): a unit always, one reading
only, and nothing beyond a year (issue 34, item 6)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dealer.clock import MAX_DURATION, parse_duration
from dealer.games.base import setting_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [("24h", timedelta(hours=24)), ("90m", timedelta(minutes=90)), ("1h30m", timedelta(minutes=90)),
     ("2d", timedelta(days=2)), ("45s", timedelta(seconds=45)), ("2H", timedelta(hours=2)),
     ("365d", timedelta(days=365)), ("364d23h59m60s", timedelta(days=365))],
)
def test_durations_with_units_are_read(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


def test_a_capital_m_is_refused_as_ambiguous() -> None:
    with pytest.raises(ValueError) as raised:
        parse_duration("2M")
    assert str(raised.value) == (
        "'2M': M could mean minutes or months; write 2m for minutes (durations are written "
        "like 24h, 90m, 1h30m or 2d: d days, h hours, m minutes, s seconds)"
    )


@pytest.mark.parametrize("text", ["99999d", "366d", "365d1s", "9000h"])
def test_a_duration_longer_than_a_year_is_refused(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_duration(text)
    assert str(raised.value) == (
        f"{text!r} is longer than a year: a duration is at most 365d (written like 24h, 90m, "
        "1h30m or 2d: d days, h hours, m minutes, s seconds)"
    )
    assert MAX_DURATION == timedelta(days=365)


@pytest.mark.parametrize("text", ["2", "2 months", "2w", "h", "", "1.5h"])
def test_other_forms_are_refused_with_the_allowed_ones(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        setting_duration(text)
    assert "24h, 90m, 1h30m or 2d" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.5s", timedelta(seconds=1.5)), ("250ms", timedelta(milliseconds=250)),
     ("0.2", timedelta(seconds=0.2)), ("1m30.5s", timedelta(seconds=90.5)), ("1.5h", timedelta(minutes=90))],
)
def test_fine_durations_take_fractions_and_milliseconds(text: str, expected: timedelta) -> None:
    assert parse_duration(text, fine=True) == expected


@pytest.mark.parametrize("text", ["1.5h", "250ms", "0.5s"])
def test_a_game_duration_is_in_whole_units(text: str) -> None:
    # A game's durations are stored to the second and shown in whole units ("1h30m").
    with pytest.raises(ValueError) as raised:
        parse_duration(text)
    assert "whole units, like 24h, 90m, 1h30m or 2d" in str(raised.value)
