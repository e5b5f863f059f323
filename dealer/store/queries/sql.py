"""dealer's own SQL constructs, each compiled per dialect (``@compiles``), and the small
helpers the store's statements are built with."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from sqlalchemy import String, any_, cast, func, literal_column, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import JSON, Boolean


def row_type(name: str, statement: Any) -> Any:
    """A named tuple type with a field per column ``statement`` selects, for rows read many
    times: its field reads ten times as fast as a SQLAlchemy 2.1 row's attribute."""
    return namedtuple(name, statement.selected_columns.keys())


class json_rows(FunctionElement[Any]):
    """A JSON array of one array of the arguments per row aggregated (``NULL`` or ``[]`` for none)."""

    type = JSON()
    name = "json_rows"
    inherit_cache = True


@compiles(json_rows, "postgresql")
def _json_rows_postgres(element: json_rows, compiler: Any, **kw: Any) -> str:
    return f"json_agg(json_build_array({compiler.process(element.clauses, **kw)}))"


@compiles(json_rows)
def _json_rows_sqlite(element: json_rows, compiler: Any, **kw: Any) -> str:
    return f"json_group_array(json_array({compiler.process(element.clauses, **kw)}))"


def sql_text(value: str) -> Any:
    """A constant string written into a statement's text (no parameter to bind or expand)."""
    return literal_column("'" + value.replace("'", "''") + "'", String)


class equals_any(FunctionElement[bool]):
    """``column = ANY (ARRAY[...])`` on Postgres, ``IN (...)`` elsewhere: Postgres makes an
    ``IN`` list over a joined row's columns an ``OR`` no index serves, and without statistics
    every ``LOCK_GAME`` read the whole holdings table (``test_claim_plans.py``)."""

    type = Boolean()
    inherit_cache = True
    _is_implicitly_boolean = True  # a condition as it is: never compared with 1 (SQLite)


@compiles(equals_any)
def _equals_any_other(element: equals_any, compiler: Any, **kw: Any) -> str:
    column, *values = element.clauses
    return compiler.process(column.in_(values), **kw)


@compiles(equals_any, "postgresql")
def _equals_any_postgres(element: equals_any, compiler: Any, **kw: Any) -> str:
    column, *values = element.clauses
    return (compiler.process(column, **kw) + " = ANY (ARRAY["
            + ", ".join(compiler.process(value, **kw) for value in values) + "])")


class postgres_first(FunctionElement[bool]):
    """A true condition that runs ``call`` on Postgres once before the statement reads or locks
    a row (an init plan and a one-time filter), at no round trip of its own; else ``1``."""

    type = Boolean()
    inherit_cache = True
    call = ""


@compiles(postgres_first, "postgresql")
def _postgres_first_postgres(element: postgres_first, compiler: Any, **kw: Any) -> str:
    return f"(SELECT {element.call}) IS NOT NULL"


@compiles(postgres_first)
def _postgres_first_other(element: postgres_first, compiler: Any, **kw: Any) -> str:
    return "1"  # a true boolean without native booleans: SQLite's WHERE reads "1 = 1"


class unindexed(FunctionElement[Any]):
    """``+column`` on SQLite, so its planner (no statistics) looks claimed ids up by key rather
    than walk every pending row's ``(status, ...)`` index entry: a 10,000-deadline burst read
    a million entries (``test_claim_plans.py``); the plain column elsewhere."""

    inherit_cache = True

    def __init__(self, column: Any) -> None:
        super().__init__(column)
        self.type = column.type


@compiles(unindexed)
def _unindexed_other(element: unindexed, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)


@compiles(unindexed, "sqlite")
def _unindexed_sqlite(element: unindexed, compiler: Any, **kw: Any) -> str:
    return "+" + compiler.process(element.clauses, **kw)


def in_array(column: Any, values: Any) -> Any:
    """Postgres: ``column = ANY`` of the array of a subquery's ``values``, looked up through
    ``column``'s index where ``IN (SELECT ...)`` may read the whole table (``test_claim_plans.py``)."""
    return column == any_(cast(select(func.array_agg(values)).scalar_subquery(), ARRAY(column.type)))
