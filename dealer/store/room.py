"""Whether the store has room to write: what ``dealer health`` tells while a full disk
keeps the daemon from storing anything (issue 36).

A store that cannot write stops ingest (:func:`dealer.store.transient.cannot_write`: the
pass ends, the inbox keeps every message) instead of dropping messages; this module lets
a probe see it from outside the daemon, reading the store only. SQLite: the file system
holding the database file has less than :data:`FREE_FLOOR` left, or the file reached its
``max_page_count`` with no free page inside. Postgres reports a full disk on the server
(SQLSTATE 53100) to the daemon, which logs it; there is nothing to read from here.
"""

from __future__ import annotations

import os
import shutil

from sqlalchemy.engine import Engine

FREE_FLOOR = 4 << 20
"""Bytes the SQLite store's file system must keep free (a step's journal and the rows of a
busy pass fit several times over)."""


def no_room(engine: Engine) -> str | None:
    """Why the store behind ``engine`` cannot take more writes, or None when it can."""
    if engine.dialect.name != "sqlite":
        return None
    with engine.connect() as connection:
        pages, limit, free = (connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                              for name in ("page_count", "max_page_count", "freelist_count"))
    if limit and pages >= limit and not free:
        return f"the store is full: {pages} pages, its max_page_count"
    path = engine.url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    left = shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
    if left < FREE_FLOOR:
        return f"the store's disk has {left} bytes free (fewer than {FREE_FLOOR})"
    return None
