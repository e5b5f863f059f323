"""The migrations are the schema: migrating an empty database yields exactly the models."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from dealer.store.db import SchemaOutOfDate, check_schema, make_engine, migrate
from dealer.store.models import Base


def test_migrated_schema_matches_the_models(database_url: str) -> None:
    engine = make_engine(database_url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diff = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert diff == []


def test_an_empty_store_is_refused_with_a_hint_to_migrate(empty_database_url: str) -> None:
    engine = make_engine(empty_database_url)
    with pytest.raises(SchemaOutOfDate, match="dealer migrate"):
        check_schema(engine)
    migrate(engine)
    check_schema(engine)
    engine.dispose()


def test_migrating_twice_changes_nothing(database_url: str) -> None:
    engine = make_engine(database_url)
    assert migrate(engine) == migrate(engine)
    engine.dispose()
