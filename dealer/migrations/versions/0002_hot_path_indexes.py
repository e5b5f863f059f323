"""indexes for the hot path: a game's pending deadlines, and games by channel

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deadlines", schema=None) as batch_op:
        batch_op.drop_index("ix_deadlines_game_id")
        batch_op.create_index("ix_deadlines_game_pending", ["game_id", "status"], unique=False)
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.create_index("ix_games_channel", ["channel"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.drop_index("ix_games_channel")
    with op.batch_alter_table("deadlines", schema=None) as batch_op:
        batch_op.drop_index("ix_deadlines_game_pending")
        batch_op.create_index("ix_deadlines_game_id", ["game_id"], unique=False)
