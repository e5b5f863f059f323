"""hall scopes: room for scoped ledger accounts (hall1/player:NAME) in holdings and entries

A Hall cycle's inventories are its own (GH-1): its accounts are named after the cycle,
``GAME/player:NAME``, and a child game's pool ``GAME/pool:CHILD``. With game ids of up to 64
characters and player names of up to 64, such a name can pass 120 characters.

Revision ID: 0004
Revises: 0002
Create Date: 2026-12-02
"""
from alembic import op
import sqlalchemy as sa

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = {"holdings": ["account"], "ledger_entries": ["source", "target"]}


def _resize(length_before: int, length_after: int) -> None:
    for table, columns in COLUMNS.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in columns:
                batch_op.alter_column(
                    column,
                    existing_type=sa.String(length=length_before),
                    type_=sa.String(length=length_after),
                    existing_nullable=False,
                )


def upgrade() -> None:
    _resize(120, 200)


def downgrade() -> None:
    _resize(200, 120)
