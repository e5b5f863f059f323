"""Times in the game's zone beside UTC (issue 34, item 8): ``DEALER_TIMEZONE`` adds the
local time to every absolute time a post shows; Discord, which shows each reader their own
time, keeps its timestamp tags only."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from dealer.clock import format_utc_and_local
from dealer.formats import to_bbcode, to_discord, to_plain
from dealer.render import render, set_timezone

NOW = datetime(2026, 12, 1, 9, 2, tzinfo=timezone.utc)
LATER = datetime(2026, 12, 2, 9, 2, tzinfo=timezone.utc)


@pytest.fixture
def zone():  # type: ignore[no-untyped-def]
    """Set DEALER_TIMEZONE's value for the test, and clear it afterwards."""
    yield set_timezone
    set_timezone("")


@pytest.mark.parametrize(
    ("when", "zone_name", "text"),
    [
        (LATER, "", "2026-12-02 09:02 UTC"),
        (LATER, "UTC", "2026-12-02 09:02 UTC"),
        (LATER, "Europe/Paris", "2026-12-02 09:02 UTC / 10:02 CET"),
        (datetime(2026, 7, 2, 9, 2, tzinfo=timezone.utc), "Europe/Paris", "2026-07-02 09:02 UTC / 11:02 CEST"),
        (datetime(2026, 12, 2, 23, 30, tzinfo=timezone.utc), "Europe/Paris",
         "2026-12-02 23:30 UTC / 2026-12-03 00:30 CET"),
        (datetime(2026, 12, 2, 3, 0, tzinfo=timezone.utc), "America/New_York",
         "2026-12-02 03:00 UTC / 2026-12-01 22:00 EST"),
        # A zone whose abbreviation is only an offset is named.
        (LATER, "Asia/Dubai", "2026-12-02 09:02 UTC / 13:02 Asia/Dubai"),
        (datetime(2026, 12, 2, 9, 2, tzinfo=timezone.utc), "Asia/Kolkata", "2026-12-02 09:02 UTC / 14:32 IST"),
    ],
)
def test_worked_examples(when: datetime, zone_name: str, text: str) -> None:
    assert format_utc_and_local(when, zone_name) == text


def _reminder() -> str:
    return render("roulette/reminder.txt", NOW, game="r1", title="Round 2", deadline=LATER,
                  owed=[], opponent="bob", next_round=3, missed_points=0, missed_fee=0)


def test_every_post_shows_the_local_time_beside_utc(zone) -> None:  # type: ignore[no-untyped-def]
    assert "closes at 2026-12-02 09:02 UTC (in 1 day)." in _reminder()
    zone("Europe/Paris")
    body = _reminder()
    assert "closes at 2026-12-02 09:02 UTC / 10:02 CET (in 1 day)." in body
    assert to_plain(body) == body and to_bbcode(body) == body  # e-mail, forums
    unix = int(LATER.timestamp())
    # Discord shows each reader the time in their own zone: its tags only.
    assert f"closes at <t:{unix}:F> (<t:{unix}:R>)." in to_discord(body)


def test_an_unknown_zone_is_refused() -> None:
    with pytest.raises(ValueError) as raised:
        set_timezone("Mars/Olympus")
    assert "Mars/Olympus" in str(raised.value) and "Europe/Paris" in str(raised.value)
