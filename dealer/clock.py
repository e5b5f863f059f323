"""The one place the shell reads the clock, and helpers for UTC-aware times.

The pure rules never call these: they receive ``now`` from the shell.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

UTC = timezone.utc


def utcnow() -> datetime:
    """The current time, UTC-aware (freezegun controls it in tests)."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime; a naive value is taken to be UTC."""
    if value.tzinfo is None:
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
    return as_utc(value).strftime("%Y-%m-%d %H:%M UTC")


def iso(value: datetime) -> str:
    """ISO-8601 with a ``Z``: how JSON shows a time."""
    return as_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_exact(value: datetime) -> str:
    """ISO-8601 with a ``Z``, to the microsecond when there is a fraction of a second.

    How a message's ``sent_at`` is written (``dealer submit``, the fakes): two messages sent
    within one second keep their order.
    """
    value = as_utc(value)
    if value.microsecond:
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_relative(target: datetime, now: datetime) -> str:
    """``in 3 h 20 min`` or ``5 min ago``: how posts show a time relative to now."""
    seconds = int((as_utc(target) - as_utc(now)).total_seconds())
    future = seconds >= 0
    minutes = abs(seconds) // 60
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    parts = []
    if days:
        parts.append(f"{days} d")
    if hours:
        parts.append(f"{hours} h")
    if mins or not parts:
        parts.append(f"{mins} min")
    text = " ".join(parts)
    return f"in {text}" if future else f"{text} ago"


_DURATION = re.compile(r"(\d+)\s*([dhms])", re.IGNORECASE)
_UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


def parse_duration(text: str) -> timedelta:
    """Parse ``24h``, ``1h30m``, ``2d``, ``90s`` (or a bare number of seconds)."""
    cleaned = text.strip().lower().replace(" ", "")
    if cleaned.isdigit():
        return timedelta(seconds=int(cleaned))
    pos = 0
    total = timedelta()
    for match in _DURATION.finditer(cleaned):
        if match.start() != pos:
            break
        total += timedelta(**{_UNITS[match.group(2).lower()]: int(match.group(1))})
        pos = match.end()
    if pos != len(cleaned) or not cleaned:
        raise ValueError(f"not a duration: {text!r} (write it like 24h, 90m, 1h30m or 2d)")
    return total
