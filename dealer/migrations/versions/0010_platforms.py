"""platforms: players' linked accounts, the parts of split posts with their platform ids,
the history cursors of the catch-up, the players a post pings, and an index on a post's
platform id (a reaction to dealer's own post finds it)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

import dealer.store.models

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("account_id", sa.String(length=200), nullable=False),
        sa.Column("player", sa.String(length=64), nullable=False),
        sa.Column("linked_at", dealer.store.models.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["player"], ["players.key"], name=op.f("fk_accounts_player_players")),
        sa.PrimaryKeyConstraint("platform", "account_id", name=op.f("pk_accounts")),
    )
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_accounts_player"), ["player"], unique=False)
    op.create_table(
        "post_parts",
        sa.Column("post_id", sa.Integer(), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(length=200), nullable=False),
        sa.Column("delivered_at", dealer.store.models.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["post_id"], ["outbox.id"], name=op.f("fk_post_parts_post_id_outbox")),
        sa.PrimaryKeyConstraint("post_id", "part", name=op.f("pk_post_parts")),
    )
    with op.batch_alter_table("post_parts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_post_parts_external_id"), ["external_id"], unique=False)
    op.create_table(
        "cursors",
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("place", sa.String(length=200), nullable=False),
        sa.Column("position", sa.String(length=200), nullable=False),
        sa.Column("updated_at", dealer.store.models.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("source", "place", name=op.f("pk_cursors")),
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("mentions", sa.JSON(), nullable=True))
        batch_op.create_index("ix_outbox_external_id", ["external_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_external_id")
        batch_op.drop_column("mentions")
    op.drop_table("cursors")
    with op.batch_alter_table("post_parts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_post_parts_external_id"))
    op.drop_table("post_parts")
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_accounts_player"))
    op.drop_table("accounts")
