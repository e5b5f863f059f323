"""Statements of the hot path run straight on the driver's cursor: SQLAlchemy's
``Connection.execute`` costs about 100 µs of CPU a statement more (docs/HOT_PATH.md).

A :class:`Direct` statement is compiled by SQLAlchemy once per dialect, with its type
processors; it runs in the SQLAlchemy connection's transaction, its cursor events fire
(what tests and ``bench/`` count), its errors are raised as SQLAlchemy raises them, and its
rows come back as tuples. Only for statements whose SQL does not change with their
parameters (no expanding ``IN``): refused when compiled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import exc, text
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.dml import ValuesBase


def translated(connection: Connection, error: Exception, statement: str | None = None,
               parameters: Any = None, cursor: Any = None) -> exc.DBAPIError:
    """The DBAPI ``error`` as SQLAlchemy raises it; a lost connection is invalidated, as
    SQLAlchemy does, so the pool never hands it out again."""
    dialect = connection.dialect
    raw = connection.connection.dbapi_connection
    lost = dialect.is_disconnect(error, raw, cursor)
    result = exc.DBAPIError.instance(statement, parameters, error, dialect.loaded_dbapi.Error,
                                     connection_invalidated=lost, dialect=dialect)
    if lost:
        connection.invalidate(error)
    return result  # type: ignore[return-value]


@dataclass(frozen=True)
class _Compiled:
    """A statement as compiled for one dialect."""

    sql: str
    defaults: dict[str, Any]
    """The values of the statement's literals, by their parameters' names."""
    binders: tuple[tuple[str, Callable[[Any], Any]], ...]
    """The parameters whose type processes a value before the driver gets it."""
    order: tuple[str, ...] | None
    """Positional parameters' names in the SQL's order (SQLite's ``?``); None for named ones."""
    readers: tuple[tuple[int, Callable[[Any], Any]], ...]
    """The result's columns whose type processes the value the driver reads."""
    required: frozenset[str]
    """The parameters with no value of their own: each execution gives them."""

    def parameters(self, given: Mapping[str, Any]) -> Any:
        """What the driver is given for one execution with the values ``given``."""
        if not self.required <= given.keys():
            missing = ", ".join(sorted(self.required - given.keys()))
            raise exc.ArgumentError(f"a value is required for parameter(s) {missing}")
        values = {**self.defaults, **given} if self.defaults or self.binders else given
        for name, process in self.binders:
            values[name] = process(values[name])
        return values if self.order is None else tuple([values[name] for name in self.order])

    def row(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """A result's row as SQLAlchemy reads it."""
        if not self.readers:
            return tuple(row)
        values = list(row)
        for index, process in self.readers:
            values[index] = process(values[index])
        return tuple(values)


class Direct:
    """A prebuilt statement run on the driver's cursor. An ``INSERT`` or ``UPDATE`` is compiled
    for the columns its parameters name; a column left out takes its scalar default (a
    callable one is refused)."""

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._dml = isinstance(statement, ValuesBase)
        self._compiled: dict[tuple[type[Dialect], tuple[str, ...] | None], _Compiled] = {}

    def __repr__(self) -> str:
        return f"Direct({' '.join(str(self.statement).split()[:4])} ...)"

    def compiled(self, dialect: Dialect, given: Mapping[str, Any] | None = None) -> _Compiled:
        """The statement compiled for ``dialect`` (and the columns ``given``), once for each."""
        key = (type(dialect), tuple(sorted(given or ())) if self._dml else None)
        found = self._compiled.get(key)
        if found is None:
            found = self._compiled[key] = _compile(self.statement, dialect, key[1])
        return found

    def rows(self, connection: Connection, parameters: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Execute with ``parameters``; every row of the result."""
        compiled, cursor = self._send(connection, parameters or {})
        try:
            return [compiled.row(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def first(self, connection: Connection, parameters: Mapping[str, Any] | None = None) -> tuple[Any, ...] | None:
        """Execute with ``parameters``; the result's first row, or None."""
        compiled, cursor = self._send(connection, parameters or {})
        try:
            row = cursor.fetchone()
            return None if row is None else compiled.row(row)
        finally:
            cursor.close()

    def execute(self, connection: Connection, parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> int:
        """Execute a statement returning no rows, once or for each mapping of a list (none for an
        empty one); return the rows changed where the driver knows."""
        rows = [parameters] if isinstance(parameters, Mapping) else parameters
        if not rows:
            return 0  # no row to write
        if len(rows) == 1:
            _, cursor = self._send(connection, rows[0])
        else:
            compiled = self.compiled(connection.dialect, rows[0])
            cursor = _run(connection, compiled, [compiled.parameters(each) for each in rows], many=True)
        try:
            return cursor.rowcount
        finally:
            cursor.close()

    def _send(self, connection: Connection, parameters: Mapping[str, Any]) -> tuple[_Compiled, Any]:
        """Execute once with ``parameters``: the compiled form and the cursor."""
        compiled = self.compiled(connection.dialect, parameters)
        return compiled, _run(connection, compiled, compiled.parameters(parameters), many=False)


def _run(connection: Connection, compiled: _Compiled, parameters: Any, *, many: bool) -> Any:
    """Send ``compiled`` on a new cursor as SQLAlchemy would (transaction begun, events told)."""
    if not connection.in_transaction():
        connection.begin()  # as SQLAlchemy's own execute begins one (SQLite: BEGIN IMMEDIATE)
    cursor = connection.connection.cursor()
    statement = compiled.sql
    for listener in connection.dispatch.before_cursor_execute:
        statement, parameters = listener(connection, cursor, statement, parameters, None, many)
    try:
        if many:
            cursor.executemany(statement, parameters)
        else:
            cursor.execute(statement, parameters)
    except connection.dialect.loaded_dbapi.Error as error:
        cursor.close()
        raise translated(connection, error, statement, parameters, cursor) from error
    connection.dispatch.after_cursor_execute(connection, cursor, statement, parameters, None, many)
    return cursor


def _compile(statement: ClauseElement, dialect: Dialect, columns: tuple[str, ...] | None) -> _Compiled:
    """What :class:`_Compiled` keeps of ``statement`` compiled for ``dialect``."""
    compiled: Any = statement.compile(dialect=dialect, column_keys=columns)
    binds = {name: bind for bind, name in compiled.bind_names.items()}
    for name, bind in binds.items():
        if bind.expanding or bind.literal_execute:
            raise ValueError(f"{name!r} is rendered at each execution: not a direct statement")
    defaults = {name: bind.effective_value for name, bind in binds.items() if not bind.required}
    prefetched = [(column, column.default) for column in compiled.insert_prefetch]
    prefetched += [(column, column.onupdate) for column in compiled.update_prefetch]
    for column, default in prefetched:
        if default is None or not default.is_scalar:
            raise ValueError(f"the default of {column} is computed at each execution: give it")
        defaults[column.key] = default.arg
    binders = []
    for name, bind in binds.items():
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            binders.append((name, process))
    readers = []
    for index, column in enumerate(getattr(statement, "selected_columns", None)
                                   or getattr(statement, "exported_columns", ())):
        process = column.type.dialect_impl(dialect).result_processor(dialect, None)
        if process is not None:
            readers.append((index, process))
    order = tuple(compiled.positiontup) if compiled.positional else None
    required = frozenset(name for name, bind in binds.items() if bind.required and name not in defaults)
    return _Compiled(compiled.string, defaults, tuple(binders), order, tuple(readers), required)


@contextmanager
def committed_at_once(connection: Connection, wait_for_disk: bool = True) -> Iterator[None]:
    """On Postgres, send the block's statements and the ``COMMIT`` ending their transaction in
    one round trip (psycopg's pipeline mode; a row count is -1 in it): a refusal is raised at
    the block's end, as SQLAlchemy raises it, and nothing is committed; SQLAlchemy's commit
    then sends nothing. Elsewhere the block runs as it is and the caller commits. Without
    ``wait_for_disk`` the commit does not wait for the flush (only where losing it loses nothing)."""
    if connection.dialect.name != "postgresql":
        yield
        return
    raw = connection.connection.dbapi_connection
    try:
        with raw.pipeline():
            yield
            if not wait_for_disk:
                _NO_FLUSH_WAIT.execute(connection, {})
            _COMMIT.execute(connection, {})
    except connection.dialect.loaded_dbapi.Error as error:  # psycopg's, met at the block's end
        failed = translated(connection, error)
        if not connection.invalidated and raw.pgconn.pipeline_status:
            # Left in pipeline mode (a cut met while results were pending: "cannot exit pipeline
            # mode while busy"), it can run no rollback: the pool must not reset it, only drop it.
            connection.invalidate(error)
        raise failed from error


@lru_cache(maxsize=None)
def direct(statement: ClauseElement) -> Direct:
    """The :class:`Direct` statement of the prebuilt ``statement``, made once for it."""
    return Direct(statement)


_COMMIT = Direct(text("COMMIT"))  # committed_at_once's, sent as one of the block's statements
_NO_FLUSH_WAIT = Direct(text("SET LOCAL synchronous_commit TO off"))
