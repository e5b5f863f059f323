"""Counting the SQL statements a piece of work sends (the group tests of issue 13), and how
its transactions commit."""

from __future__ import annotations

from sqlalchemy import event


def statements(engine) -> list[tuple[str, bool]]:  # type: ignore[no-untyped-def]
    """Every statement sent on ``engine`` from now on: (its first words, executemany)."""
    sent: list[tuple[str, bool]] = []

    def seen(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        sent.append((" ".join(statement.split()[:3]), executemany))

    event.listen(engine, "before_cursor_execute", seen)
    return sent


def commit_settings(engine) -> list[str]:  # type: ignore[no-untyped-def]
    """``synchronous_commit`` as each transaction on ``engine`` that wrote commits, from
    now on (Postgres): "on" waits for the flush to disk, "off" does not (one that wrote
    nothing has nothing to flush). A ``COMMIT`` sent with a group's rows
    (``store.direct.committed_at_once``) is seen as it is sent; SQLAlchemy's commit after it
    finds the transaction over."""
    seen: list[str] = []

    def committing(connection):  # type: ignore[no-untyped-def]
        setting, wrote = connection.connection.driver_connection.execute(
            "SELECT current_setting('synchronous_commit'), txid_current_if_assigned() IS NOT NULL"
        ).fetchone()
        if wrote:
            seen.append(setting)

    def sending(connection, _cursor, statement, *_):  # type: ignore[no-untyped-def]
        if statement == "COMMIT":
            committing(connection)

    event.listen(engine, "commit", committing)
    event.listen(engine, "before_cursor_execute", sending)
    return seen
