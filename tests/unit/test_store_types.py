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


@settings(deadline=None)  # under a loaded machine an example's time says nothing
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=ZONES))
def test_sqlite_datetimes_are_written_in_utc_and_read_back_aware(value: datetime) -> None:
    column = UtcDateTime().dialect_impl(SQLITE)
    bind, read = column.bind_processor(SQLITE), column.result_processor(SQLITE, None)
    text = bind(value)
    utc = value.astimezone(timezone.utc)
    assert text == "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (
        utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second, utc.microsecond)
    back = read(text)
    assert back == value and back.tzinfo is timezone.utc
    assert bind(None) is None and read(None) is None


def test_sqlite_reads_what_other_writers_left() -> None:
    column = UtcDateTime().dialect_impl(SQLITE)
    read = column.result_processor(SQLITE, None)
    assert read("2026-12-01 10:00:00") == datetime(2026, 12, 1, 10, tzinfo=timezone.utc)
    assert read("2026-12-01 10:00:00.5") == datetime(2026, 12, 1, 10, 0, 0, 500000, tzinfo=timezone.utc)
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
