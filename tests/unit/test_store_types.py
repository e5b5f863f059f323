"""The store's column types: what they write and read is what SQLAlchemy's own would."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st
from sqlalchemy import DateTime
from sqlalchemy.dialects import postgresql, sqlite

from dealer.store.db import json_dumps
from dealer.store.models import JsonText, UtcDateTime

SQLITE = sqlite.dialect()
ZONES = st.sampled_from([timezone.utc, timezone(timedelta(hours=-5)), timezone(timedelta(hours=9, minutes=30))])


def _generic(dialect, kind: str):  # type: ignore[no-untyped-def]
    """The processor TypeDecorator builds from process_bind_param/process_result_value
    and the dialect's DateTime (what UtcDateTime did before its SQLite shortcut)."""
    impl = DateTime(timezone=True).dialect_impl(dialect)
    decorator = UtcDateTime()
    if kind == "bind":
        inner = impl.bind_processor(dialect)
        return lambda v: inner(decorator.process_bind_param(v, dialect))
    inner = impl.result_processor(dialect, None)
    return lambda v: decorator.process_result_value(inner(v), dialect)


@settings(deadline=None)  # under a loaded machine an example's time says nothing
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=ZONES))
def test_sqlite_datetimes_are_written_and_read_as_sqlalchemy_does(value: datetime) -> None:
    column = UtcDateTime().dialect_impl(SQLITE)
    bind, read = column.bind_processor(SQLITE), column.result_processor(SQLITE, None)
    text = bind(value)
    assert text == _generic(SQLITE, "bind")(value)
    back = read(text)
    assert back == value and back.tzinfo is timezone.utc
    assert back == _generic(SQLITE, "result")(text)
    assert bind(None) is None and read(None) is None


def test_sqlite_reads_what_other_writers_left() -> None:
    column = UtcDateTime().dialect_impl(SQLITE)
    read = column.result_processor(SQLITE, None)
    for text in ("2026-12-01 10:00:00", "2026-12-01 10:00:00.5", "2026-12-01T10:00:00+02:00"):
        assert read(text) == _generic(SQLITE, "result")(text)
    assert read("2026-12-01T10:00:00+02:00") == datetime(2026, 12, 1, 8, tzinfo=timezone.utc)


def test_other_stores_keep_sqlalchemy_s_processors() -> None:
    dialect = postgresql.dialect()
    column = UtcDateTime().dialect_impl(dialect)
    value = datetime(2026, 12, 1, 5, tzinfo=timezone(timedelta(hours=-5)))
    bind = column.bind_processor(dialect)
    assert (bind(value) if bind else value) == datetime(2026, 12, 1, 10, tzinfo=timezone.utc)


def test_json_text_is_stored_as_it_is_and_anything_else_as_json_dumps_writes_it() -> None:
    assert json_dumps(JsonText('{"a":1}')) == '{"a":1}'
    assert json_dumps({"a": [1, "é"]}) == json.dumps({"a": [1, "é"]})
    with pytest.raises(TypeError):  # an engine without dealer's serializer refuses it
        json.dumps(JsonText("{}"))
