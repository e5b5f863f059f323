"""A Postgres connection of the store: its session's settings (store/db.make_engine)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import make_url, text

from dealer.store.db import make_engine
from dealer.store.queries import pending_of_locked

POSTGRES_URL = os.environ.get("DEALER_TEST_DATABASE_URL", "").strip()

pytestmark = pytest.mark.skipif(not POSTGRES_URL, reason="set DEALER_TEST_DATABASE_URL to a Postgres database")


def test_the_session_keeps_the_url_s_own_options() -> None:
    url = make_url(POSTGRES_URL).update_query_dict({"options": "-c search_path=pg_catalog,public"})
    engine = make_engine(url.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SHOW search_path")).scalar() == "pg_catalog,public"
    finally:
        engine.dispose()


def test_times_read_are_the_same_instants_in_utc_whatever_the_session_s_zone() -> None:
    url = make_url(POSTGRES_URL).update_query_dict({"options": "-c TimeZone=Asia/Kolkata"})
    engine = make_engine(url.render_as_string(hide_password=False))
    written = datetime(2026, 12, 1, 5, 30, 0, 250000, tzinfo=timezone(timedelta(hours=-5)))
    try:
        with engine.connect() as connection:
            read, as_json = connection.execute(
                text("SELECT CAST(:at AS timestamptz), json_build_array(CAST(:at AS timestamptz))"),
                {"at": written},
            ).one()
    finally:
        engine.dispose()
    assert read == written
    # a time written as JSON text by the server reads back as the same instant, in UTC
    ((_, _, due, _, _),) = pending_of_locked(_Locked([[1, "round", as_json[0], False, None]]))
    assert due == written and due.tzinfo is timezone.utc


class _Locked:
    """A locked game's row as far as :func:`pending_of_locked` reads it."""

    def __init__(self, pending: list[list[object]]) -> None:
        self.pending = pending
