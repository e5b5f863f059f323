"""overrides by game: an index on overrides.game_id

Every step asks whether its game is paused by an override (queries.LOCK_GAME), and the
overrides table keeps one row for every override ever configured: without an index each
step read them all.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(op.f("ix_overrides_game_id"), "overrides", ["game_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_overrides_game_id"), table_name="overrides")
