"""webhook deliveries: the signed webhook inbox refuses a delivery id seen before

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

import dealer.store.models

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("delivery_id", sa.String(length=200), nullable=False),
        sa.Column("received_at", dealer.store.models.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("source", "delivery_id"),
    )
    op.create_index(
        "ix_webhook_deliveries_received_at", "webhook_deliveries", ["received_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_received_at", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
