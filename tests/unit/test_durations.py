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
