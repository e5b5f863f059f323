"""Times as dealer writes and reads them: ISO times, durations and times relative to now."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

from dealer.clock import format_duration, format_relative, format_utc, iso_exact, parse_time

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
SECONDS = {"day": 86400, "days": 86400, "hour": 3600, "hours": 3600, "h": 3600,
           "minute": 60, "minutes": 60, "min": 60, "second": 1, "seconds": 1, "s": 1}
SINGULAR = {"day", "hour", "minute", "second"}
PLURAL = {"days", "hours", "minutes", "seconds"}


def seconds_of(text: str) -> int:
    """Read a written duration back (``1 day 3 h`` -> 97200), checking its grammar."""
    parts = re.findall(r"(\d+) (\w+)", text)
    assert " ".join(f"{n} {u}" for n, u in parts) == text, text
    for amount, unit in parts:
        assert unit in SECONDS, text
        assert unit not in SINGULAR or amount == "1", text  # never "2 day"
        assert unit not in PLURAL or amount != "1", text  # never "1 days"
        if len(parts) > 1:  # several parts: days spelled out, the rest as symbols
            assert unit in ("day", "days", "h", "min", "s"), text
        else:
            assert unit in SINGULAR | PLURAL, text
    units = [SECONDS[u] for _, u in parts]
    assert units == sorted(units, reverse=True) and len(set(units)) == len(units), text
    return sum(int(n) * SECONDS[u] for n, u in parts)


def relative_seconds(text: str) -> int:
    """A relative time read back, signed: positive in the future."""
    if text == "now":
        return 0
    if text.startswith("in "):
        body = text[3:]
        return 30 if body == "less than a minute" else seconds_of(body)
    assert text.endswith(" ago"), text
    body = text[:-4]
    return -30 if body == "less than a minute" else -seconds_of(body)


@pytest.mark.parametrize(("delta", "text"), [
    (timedelta(hours=24) - timedelta(seconds=1), "in 23 h 59 min"),
    (timedelta(days=2), "in 2 days"),
    (timedelta(days=2, minutes=59), "in 2 days"),
    (timedelta(days=1, hours=3, minutes=20), "in 1 day 3 h"),
    (timedelta(days=1), "in 1 day"),
    (timedelta(hours=1), "in 1 hour"),
    (timedelta(hours=6), "in 6 hours"),
    (timedelta(hours=1, minutes=1), "in 1 h 1 min"),
    (timedelta(minutes=1, seconds=59), "in 1 minute"),
    (timedelta(minutes=45), "in 45 minutes"),
    (timedelta(seconds=59), "in less than a minute"),
    (timedelta(0), "now"),
    (-timedelta(seconds=1), "less than a minute ago"),
    (-timedelta(seconds=90), "1 minute ago"),
    (-timedelta(days=3, hours=2), "3 days 2 h ago"),
])
def test_relative_examples(delta: timedelta, text: str) -> None:
    assert format_relative(NOW + delta, NOW) == text


@pytest.mark.parametrize(("delta", "text"), [
    (timedelta(hours=24), "1 day"),
    (timedelta(hours=48), "2 days"),
    (timedelta(hours=1), "1 hour"),
    (timedelta(minutes=90), "1 h 30 min"),
    (timedelta(minutes=30), "30 minutes"),
    (timedelta(seconds=1), "1 second"),
    (timedelta(seconds=2), "2 seconds"),
    (timedelta(seconds=90), "1 min 30 s"),
    (timedelta(days=1, minutes=5), "1 day 5 min"),
    (timedelta(days=2, hours=1, minutes=30), "2 days 1 h 30 min"),
    (timedelta(0), "0 seconds"),
])
def test_duration_examples(delta: timedelta, text: str) -> None:
    assert format_duration(delta) == text


def test_duration_precision_and_refusals() -> None:
    value = timedelta(days=1, hours=3, minutes=20)
    assert format_duration(value, units=2) == "1 day 3 h"
    assert format_duration(timedelta(days=1, minutes=20), units=2) == "1 day"
    assert format_duration(timedelta(seconds=59), smallest="minute") == "0 minutes"
    with pytest.raises(ValueError):
        format_duration(timedelta(seconds=-1))
    with pytest.raises(ValueError):
        format_duration(value, smallest="week")


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=400 * 86400))
def test_an_exact_duration_reads_back_to_itself(seconds: int) -> None:
    text = format_duration(timedelta(seconds=seconds))
    assert seconds_of(text) == seconds
    if seconds:
        assert not re.search(r"\b0 ", text)  # never a 0 part


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=-400 * 86400, max_value=400 * 86400),
       st.integers(min_value=0, max_value=3 * 86400))
def test_relative_times_are_truthful_and_monotone(seconds: int, more: int) -> None:
    text = format_relative(NOW + timedelta(seconds=seconds), NOW)
    later = format_relative(NOW + timedelta(seconds=seconds + more), NOW)
    assert not re.search(r"\b0 ", text)  # no 0 part, no "1 hours" (seconds_of checks)
    shown = relative_seconds(text)
    # Monotone: a later time never reads as earlier.
    assert relative_seconds(later) >= shown
    # Rounded down, at most two parts: the error is below the second part's unit.
    distance = abs(seconds)
    if distance >= 60:
        error = distance - abs(shown)
        limit = 3600 if distance >= 86400 else 60
        assert 0 <= error < limit, (seconds, text)
        assert (seconds > 0) == text.startswith("in ")


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2200, 1, 1),
                    timezones=st.just(timezone.utc)))
def test_iso_exact_round_trips_to_the_microsecond(value: datetime) -> None:
    assert parse_time(iso_exact(value)) == value


def test_iso_exact_writes_a_fraction_only_when_there_is_one() -> None:
    assert iso_exact(datetime(2026, 12, 1, 10, tzinfo=timezone.utc)) == "2026-12-01T10:00:00Z"
    assert iso_exact(datetime(2026, 12, 1, 10, 0, 0, 7, tzinfo=timezone.utc)) == "2026-12-01T10:00:00.000007Z"


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31),
                    timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=-5))])))
def test_format_utc_writes_what_strftime_writes(value: datetime) -> None:
    # format_utc builds the text itself (strftime is slow); it must not differ from it.
    try:
        utc = value.astimezone(timezone.utc)
    except OverflowError:
        return
    assert format_utc(value) == utc.strftime("%Y-%m-%d %H:%M UTC")
    assert format_utc(datetime(2026, 12, 1, 9, 5, tzinfo=timezone.utc)) == "2026-12-01 09:05 UTC"
