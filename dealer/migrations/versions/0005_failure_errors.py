"""why a message or a deadline could not be handled: inbound.error, deadlines.error

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("inbound", schema=None) as batch_op:
        batch_op.add_column(sa.Column("error", sa.Text(), nullable=True))
    with op.batch_alter_table("deadlines", schema=None) as batch_op:
        batch_op.add_column(sa.Column("error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deadlines", schema=None) as batch_op:
        batch_op.drop_column("error")
    with op.batch_alter_table("inbound", schema=None) as batch_op:
        batch_op.drop_column("error")
