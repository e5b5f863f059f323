"""delivery: a post's next attempt time (backoff) and the time it is stale after
(a reminder of a deadline already passed); an index on a post's destination

Revision ID: 0008
Revises: 0006
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

import dealer.store.models

revision = "0008"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("next_attempt_at", dealer.store.models.UtcDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("stale_after", dealer.store.models.UtcDateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_outbox_destination", ["channel", "recipient", "status", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_destination")
        batch_op.drop_column("stale_after")
        batch_op.drop_column("next_attempt_at")
