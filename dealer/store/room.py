"""Whether the SQLite store has room to write, for ``dealer health`` to tell from outside
while a full disk stops ingest (issue 36); Postgres reports it to the daemon instead."""

from __future__ import annotations

import os
import shutil

from sqlalchemy.engine import Engine

FREE_FLOOR = 4 << 20
"""Bytes the SQLite store's file system must keep free (a busy pass fits several times over)."""


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
