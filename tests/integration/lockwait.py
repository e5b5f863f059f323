"""Work that must wait for a row lock another transaction holds (Postgres): the tests of
what a statement that waited for a lock reads afterwards."""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest
from sqlalchemy import text


def run_after_waiting(harness: Any, work: Callable[[Any], None], release: Callable[[], None]) -> None:
    """Run ``work(session)`` in a transaction of its own on another thread; once one of its
    statements waits for a lock (``pg_locks``), call ``release()`` (which ends the
    transaction holding it), then wait for ``work`` to finish and fail with what it raised."""
    pid: list[int] = []
    errors: list[BaseException] = []
    started = threading.Event()

    def in_transaction() -> None:
        try:
            with harness.dealer.sessions.begin() as session:
                pid.append(session.execute(text("SELECT pg_backend_pid()")).scalar())
                started.set()
                work(session)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            started.set()

    thread = threading.Thread(target=in_transaction)
    thread.start()
    assert started.wait(timeout=30)
    for _ in range(3000):
        if errors or _waiting(harness, pid[0]):
            break
        threading.Event().wait(0.01)  # polls the server's lock table, not a timing guess
    else:
        release()
        thread.join(timeout=30)
        pytest.fail("the work never waited for the lock")
    release()
    thread.join(timeout=30)
    assert not thread.is_alive()
    if errors:
        raise errors[0]


def _waiting(harness: Any, pid: int) -> bool:
    with harness.dealer.engine.connect() as connection:
        return bool(connection.execute(
            text("SELECT count(*) FROM pg_locks WHERE pid = :pid AND NOT granted"), {"pid": pid}
        ).scalar())
