"""Times as dealer writes and reads them."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, strategies as st

from dealer.clock import iso_exact, parse_time


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2200, 1, 1),
                    timezones=st.just(timezone.utc)))
def test_iso_exact_round_trips_to_the_microsecond(value: datetime) -> None:
    assert parse_time(iso_exact(value)) == value


def test_iso_exact_writes_a_fraction_only_when_there_is_one() -> None:
    assert iso_exact(datetime(2026, 12, 1, 10, tzinfo=timezone.utc)) == "2026-12-01T10:00:00Z"
    assert iso_exact(datetime(2026, 12, 1, 10, 0, 0, 7, tzinfo=timezone.utc)) == "2026-12-01T10:00:00.000007Z"
