"""Counting the SQL statements a piece of work sends (the group tests of issue 13)."""

from __future__ import annotations

from sqlalchemy import event


def statements(engine) -> list[tuple[str, bool]]:  # type: ignore[no-untyped-def]
    """Every statement sent on ``engine`` from now on: (its first words, executemany)."""
    sent: list[tuple[str, bool]] = []

    def seen(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        sent.append((" ".join(statement.split()[:3]), executemany))

    event.listen(engine, "before_cursor_execute", seen)
    return sent
