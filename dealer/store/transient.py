"""Which database errors are the database's passing trouble, not dealer's: such an error never
marks a message ``failed``, holds a game or rejects an inbox file; the work stays pending."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import exc as sa_exc

_SQLITE_FULL = "database or disk is full"
"""SQLITE_FULL: the file system (or the file's ``max_page_count``) has no room left."""
_SQLITE_TRANSIENT = ("database is locked", "database table is locked", "disk i/o error",
                     "unable to open database", "database is busy", _SQLITE_FULL)
"""SQLite's OperationalErrors that pass (busy, unreachable, full); a full disk too, so that
nothing is refused for it until space is freed."""
_POSTGRES_FULL = "53100"
"""disk_full (a class 53 error, so transient too)."""


class StoreUnavailable(RuntimeError):
    """The store could not be reached for long enough that a caller gave up waiting."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def is_transient(exc: BaseException) -> bool:
    """True if ``exc`` (or what it was raised from) is a passing database error."""
    return any(_transient(e) for e in _chain(exc))


def cannot_write(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause) says the store has no room to write: transient, for a human to clear."""
    origs = (getattr(e, "orig", None) or e for e in _chain(exc))
    return any(_SQLITE_FULL in str(o).lower() or getattr(o, "sqlstate", None) == _POSTGRES_FULL for o in origs)


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, (sa_exc.DisconnectionError, sa_exc.TimeoutError)):
        return True  # the pool could not hand out a live connection in time
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        if isinstance(exc, sa_exc.OperationalError):
            orig = exc.orig
            module = type(orig).__module__ if orig is not None else ""
            if module.startswith("sqlite3") or "sqlite" in module:
                text = str(orig).lower()
                return any(marker in text for marker in _SQLITE_TRANSIENT)
            # A server's error says what it is by its SQLSTATE; an error without one is the
            # client losing the connection.
            state = getattr(orig, "sqlstate", None)
            return state is None or state.startswith(_POSTGRES_TRANSIENT)
    return False


_POSTGRES_TRANSIENT = ("08", "40", "53", "55P03", "57", "58")
"""SQLSTATE classes and codes that pass (08, 40, 53, 55P03, 57, 58); others fail every time."""
