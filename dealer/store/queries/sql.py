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
    """A named tuple type with a field per column ``statement`` selects, for its hot rows.

    A field of it reads about ten times as fast as the attribute of SQLAlchemy's own row,
    which looks the name up on the row's class first (SQLAlchemy 2.1), raising and
    dropping an ``AttributeError`` on every read. A row read many times (a step's locked
    game, the posts a delivery sends) is made one with ``Type._make(row)``, the rest are
    read where they are as they come."""
    return namedtuple(name, statement.selected_columns.keys())


class json_rows(FunctionElement[Any]):
    """A JSON array holding one JSON array of its arguments per row aggregated (``NULL``
    or ``[]`` for none): ``json_agg(json_build_array(...))`` on Postgres,
    ``json_group_array(json_array(...))`` on SQLite."""

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
    """``column`` equal to one of ``values`` (expressions, not bound parameters): ``column =
    ANY (ARRAY[...])`` on Postgres, ``column IN (...)`` elsewhere.

    Postgres turns an ``IN`` list whose expressions read a column of the same query (a
    joined row's) into ``column = v1 OR column = v2``, which no index serves as a join's
    condition: with the holdings' statistics not yet gathered (a new store, before
    autovacuum's first analyze), every step's :data:`~dealer.store.queries.steps.LOCK_GAME` then read the whole
    holdings table for its members' balances, a scan per step that grew with the players
    (3 ms a step at 2,000 players). As ``= ANY`` the condition is an index lookup whatever
    the statistics say. SQLite looks an ``IN`` list up through the index either way
    (``tests/integration/test_claim_plans.py`` checks both plans)."""

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
    """A condition, true, that runs ``call`` on Postgres once, before the statement it is
    in reads any row: ``(SELECT <call>) IS NOT NULL``, an uncorrelated subquery, which the
    planner runs once as an init plan, and a condition on no row, which it makes a
    one-time filter above the scan (the executor evaluates it before it reads, or locks,
    the first row). What the call does then costs no round trip of its own. Elsewhere a
    plain true (SQLite: ``1``)."""

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
    """``column``, which SQLite's planner is not to look up through an index: ``+column``
    on SQLite (a unary plus changes no value, and a term it wraps constrains no index),
    the column itself elsewhere.

    For a claim of rows by id that also checks their status (``id IN (...) AND status =
    'pending'``). SQLite keeps no statistics unless told to (``ANALYZE``), and without
    them its planner took the index on ``(status, ...)`` over the ids' own lookups: every
    group of deadlines or messages read the index entries of every pending one to find its
    50, so a burst of 10,000 deadlines read about a million entries, each costing more the
    more there were (70-100 µs a deadline at 10,000 games against 4 µs by id;
    ``tests/integration/test_claim_plans.py``). Postgres keeps statistics and looks the
    ids up; it gets the plain column.
    """

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
    """Postgres: ``column = ANY`` of the array of a subquery's ``values`` (a column of it).
    Postgres looks each up through ``column``'s index, where ``column IN (SELECT ...)``
    may be joined with the whole table (the claim of a delivery's first page read every
    pending post so) and two such ``IN`` lists are an ``OR`` that reads it whole
    (``tests/integration/test_claim_plans.py``)."""
    return column == any_(cast(select(func.array_agg(values)).scalar_subquery(), ARRAY(column.type)))
