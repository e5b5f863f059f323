"""The one place the shell reads the clock, and helpers for UTC-aware times."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

UTC = timezone.utc


def utcnow() -> datetime:
    """The current time, UTC-aware (freezegun controls it in tests)."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime; a naive value is taken to be UTC."""
    zone = value.tzinfo
    if zone is UTC:
        return value  # the common case (every time the store reads or writes): no copy
    if zone is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_time(text: str) -> datetime:
    """Parse an ISO-8601 time (``2026-12-01T10:00:00Z``); naive means UTC."""
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    return as_utc(datetime.fromisoformat(cleaned))


def format_utc(value: datetime) -> str:
    """``2026-12-01 10:00 UTC``: how posts show an absolute time."""
    value = as_utc(value)
    if value.year < 1000:
        return value.strftime("%Y-%m-%d %H:%M UTC")  # the platform's %Y, as it always was
    # The same text without strftime, which costs several times as much (every
    # confirmation and round post shows two or more times).
    return f"{value.year}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d} UTC"


def local_zone(name: str) -> ZoneInfo | None:
    """The zone ``name`` (``Europe/Paris``); None for "" or UTC; ValueError when unknown."""
    if not name.strip() or name.strip().upper() == "UTC":
        return None
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        if not available_timezones():  # Windows, say: Python reads the zones from tzdata
            raise ValueError(f"{name!r}: this machine has no time zone database; "
                             "pip install tzdata") from None
        raise ValueError(f"{name!r} is not a known time zone: write an IANA name such as "
                         "Europe/Paris or America/New_York") from None


def format_utc_and_local(value: datetime, zone: ZoneInfo | str | None) -> str:
    """``2026-12-02 09:02 UTC / 10:02 CET``, the local date only when it differs."""
    if isinstance(zone, str):
        zone = local_zone(zone)
    text = format_utc(value)
    if zone is None:
        return text
    utc = as_utc(value)
    local = utc.astimezone(zone)
    abbreviation = local.tzname() or ""
    name = abbreviation if abbreviation.isalpha() else zone.key
    day = f"{local.year}-{local.month:02d}-{local.day:02d} " if local.date() != utc.date() else ""
    return f"{text} / {day}{local.hour:02d}:{local.minute:02d} {name}"


def iso(value: datetime) -> str:
    """ISO-8601 with a ``Z``: how JSON shows a time (a year always has four digits)."""
    return as_utc(value).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def iso_exact(value: datetime) -> str:
    """ISO-8601 with a ``Z``, to the microsecond when there is one: two messages keep their order."""
    value = as_utc(value).replace(tzinfo=None)
    return value.isoformat(timespec="microseconds" if value.microsecond else "seconds") + "Z"


# The units of a written duration, largest first: (singular, plural, symbol, seconds).
_SPELLED = (
    ("day", "days", None, 86400),
    ("hour", "hours", "h", 3600),
    ("minute", "minutes", "min", 60),
    ("second", "seconds", "s", 1),
)


@lru_cache(maxsize=1024)
def format_duration(value: timedelta, *, units: int | None = None, smallest: str = "second") -> str:
    """A duration as people write it: ``1 day``, ``2 hours``, ``1 day 3 h``, ``23 h 59 min``.

    No zero part; one part spelled out, several with symbols after the days; ``units`` and
    ``smallest`` truncate; nothing is ``0 seconds``. Cached: posts repeat a few durations."""
    if value < timedelta(0):
        raise ValueError(f"a duration cannot be negative: {value}")
    names = [unit[0] for unit in _SPELLED]
    if smallest not in names:
        raise ValueError(f"smallest must be one of {names}, not {smallest!r}")
    kept = _SPELLED[: names.index(smallest) + 1]
    rest = int(value.total_seconds())
    amounts = []
    for _, _, _, size in kept:
        amount, rest = divmod(rest, size)
        amounts.append(amount)
    first = next((i for i, amount in enumerate(amounts) if amount), None)
    if first is None:
        return f"0 {kept[-1][1]}"
    last = len(kept) if units is None else min(len(kept), first + units)
    shown = [(amounts[i], kept[i]) for i in range(first, last) if amounts[i]]
    if len(shown) == 1:
        amount, (singular, plural_form, _, _) = shown[0]
        return f"{amount} {singular if amount == 1 else plural_form}"
    return " ".join(
        f"{amount} {symbol or (singular if amount == 1 else plural_form)}"
        for amount, (singular, plural_form, symbol, _) in shown
    )


def format_relative(target: datetime, now: datetime) -> str:
    """``in 23 h 59 min``, ``1 minute ago``: to the minute, two units, rounded down, never later."""
    seconds = int((as_utc(target) - as_utc(now)).total_seconds())
    if seconds == 0:
        return "now"
    if abs(seconds) < 60:
        return "in less than a minute" if seconds > 0 else "less than a minute ago"
    # Whole minutes (what is shown): the same few durations hit format_duration's cache.
    text = format_duration(timedelta(minutes=abs(seconds) // 60), units=2, smallest="minute")
    return f"in {text}" if seconds > 0 else f"{text} ago"


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|[dhms])", re.IGNORECASE)
_BARE_SECONDS = re.compile(r"\d+(?:\.\d+)?")
_UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds", "ms": "milliseconds"}
DURATION_FORMS = "24h, 90m, 1h30m or 2d: d days, h hours, m minutes, s seconds"
"""How a duration is written, for error messages."""
FINE_DURATION_FORMS = "10s, 500ms, 1.5s, 90m or 6h: d days, h hours, m minutes, s seconds, ms milliseconds"
"""How a daemon setting's duration is written (fractions allowed), for error messages."""
MAX_DURATION = timedelta(days=365)
"""The longest duration dealer takes (``99999d`` is a typo, refused)."""


def parse_duration(text: str, longest: timedelta | None = MAX_DURATION, *,
                   fine: bool = False) -> timedelta:
    """Parse ``24h``, ``1h30m``, ``90s``; ``fine`` also ``1.5s``, ``250ms``; ``M`` may mean months."""
    forms = FINE_DURATION_FORMS if fine else DURATION_FORMS
    if "M" in text:
        raise ValueError(f"{text!r}: M could mean minutes or months; write "
                         f"{text.strip().replace('M', 'm')} for minutes (durations are written "
                         f"like {forms})")
    cleaned = text.strip().lower().replace(" ", "")
    if not fine and ("." in cleaned or "ms" in cleaned):
        raise ValueError(f"not a duration: {text!r} (write it in whole units, like {forms})")
    if _BARE_SECONDS.fullmatch(cleaned):
        total = timedelta(seconds=float(cleaned))
    else:
        pos = 0
        total = timedelta()
        for match in _DURATION.finditer(cleaned):
            if match.start() != pos:
                break
            try:
                total += timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
            except OverflowError:  # past what a timedelta holds
                if longest is None:
                    raise
                total = longest + timedelta(days=1)
            pos = match.end()
        if pos != len(cleaned) or not cleaned:
            raise ValueError(f"not a duration: {text!r} (write it like {forms})")
    if longest is not None and total > longest:
        raise ValueError(f"{text!r} is longer than a year: a duration is at most 365d "
                         f"(written like {forms})")
    return total
