"""outbox failing since: when a post's current run of failed attempts began

A post is parked only after failing for DEALER_PUBLISH_PARK_AFTER (hours), not after a
count of attempts that a short outage spends in seconds; a parked post is retried
automatically with backoff.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04
"""
import sqlalchemy as sa
from alembic import op

import dealer.store.models

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch:
        batch.add_column(sa.Column("failing_since", dealer.store.models.UtcDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch:
        batch.drop_column("failing_since")
