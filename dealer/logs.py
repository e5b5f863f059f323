"""The daemon's log lines, plain or JSON, each carrying the game, message, deadline or post in
scope (:func:`context`, :func:`bind`: a context variable, one per thread)."""

from __future__ import annotations

import functools
import json
import logging
import sys
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

FIELDS = ("game_id", "message_id", "deadline", "post_id", "post_key")
"""The fields a line about a game, a message, a deadline or a post carries."""
_FIELDS = frozenset(FIELDS)

_scope: ContextVar[dict[str, Any] | None] = ContextVar("dealer_log_scope", default=None)
"""The fields in scope; None outside any, where :func:`bind` does nothing."""


@contextmanager
def context(**fields: Any) -> Iterator[None]:
    """Lines logged inside the block carry ``fields``; :func:`bind` calls inside it end with it."""
    merged = {**(_scope.get() or {}), **_known(fields)}
    token = _scope.set({name: value for name, value in merged.items() if value is not None})
    try:
        yield
    finally:
        _scope.reset(token)


def bind(**fields: Any) -> None:
    """Add ``fields`` to the current scope (None leaves one); nothing outside any scope."""
    fields = _known(fields)
    current = _scope.get()
    if current is None:
        return
    merged = {**current, **fields}
    _scope.set({name: value for name, value in merged.items() if value is not None})


def scoped(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` (a message, a deadline) in a fresh, empty scope."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        token = _scope.set({})
        try:
            return fn(*args, **kwargs)
        finally:
            _scope.reset(token)

    return wrapper


def current() -> dict[str, Any]:
    """The fields in scope."""
    return dict(_scope.get() or {})


def _known(fields: dict[str, Any]) -> dict[str, Any]:
    unknown = fields.keys() - _FIELDS
    if unknown:
        raise TypeError(f"unknown log fields {sorted(unknown)}; use {', '.join(FIELDS)}")
    return fields


class _ScopeFilter(logging.Filter):
    """Copies the fields in scope onto each record (an explicit ``extra=`` wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in (_scope.get() or {}).items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


REPEATS_SHOWN = 5
"""Lines of one kind (the same logger, level and message template) shown per window."""
REPEAT_WINDOW = 60.0
"""Seconds of a window of :class:`RepeatFilter`."""


class RepeatFilter(logging.Filter):
    """At most :data:`REPEATS_SHOWN` lines of one kind per :data:`REPEAT_WINDOW`, then a count:
    an error in a tight loop must not fill the disk the store needs."""

    KINDS = 1000
    """Kinds remembered at most (the oldest window is forgotten first)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.clock = clock
        self.kinds: dict[tuple[str, int, str], list[float]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg)[:200])
        now = self.clock()
        with self._lock:
            seen = self.kinds.get(key)
            if seen is None or now - seen[0] >= REPEAT_WINDOW:
                left_out = int(seen[2]) if seen else 0
                if seen is None and len(self.kinds) >= self.KINDS:
                    del self.kinds[min(self.kinds, key=lambda k: self.kinds[k][0])]
                self.kinds[key] = [now, 1, 0]
                if left_out:
                    record.msg = f"{record.msg} [{left_out} more like this left out in {REPEAT_WINDOW:g} s]"
                return True
            seen[1] += 1
            if seen[1] <= REPEATS_SHOWN:
                return True
            seen[2] += 1
            return False


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: MESSAGE [game=... message=...]``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = [f"{name.removesuffix('_id')}={getattr(record, name)}" for name in FIELDS if hasattr(record, name)]
        if not fields:
            return line
        head, newline, rest = line.partition("\n")  # a traceback stays below the line
        return f"{head} [{' '.join(fields)}]{newline}{rest}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the scope's fields, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update((name, getattr(record, name)) for name in FIELDS if hasattr(record, name))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a line is logged (a test may swap it)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure(*, verbose: bool = False, fmt: str = "text") -> logging.Handler:
    """Log to stderr in ``fmt`` (``text`` or ``json``), replacing any earlier set-up."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "dealer", False):
            root.removeHandler(handler)
    handler = _Stderr()
    handler.dealer = True  # type: ignore[attr-defined]
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RepeatFilter())
    handler.addFilter(_ScopeFilter())
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for noisy in ("apscheduler", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return handler
