"""governance: a post's name for the rules (a poll a reaction targets); an index on a
game's inbound messages by time (the election tie-break reads a candidate's first message)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ref", sa.String(length=64), nullable=True))
    with op.batch_alter_table("inbound", schema=None) as batch_op:
        batch_op.create_index("ix_inbound_game", ["game_id", "sent_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("inbound", schema=None) as batch_op:
        batch_op.drop_index("ix_inbound_game")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("ref")
