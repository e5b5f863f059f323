"""passphrases: each player's pass phrase, hashed

A mail whose sender cannot be authenticated counts for a player when its first line is
`passphrase WORDS` with that player's pass phrase (docs/EMAIL.md). Only the phrase's scrypt
hash is kept. Quarantined mails are rows of `inbound` with the status `quarantined` (no
change of schema).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04
"""
import sqlalchemy as sa
from alembic import op

import dealer.store.models

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "passphrases",
        sa.Column("player", sa.String(length=64), nullable=False),
        sa.Column("hash", sa.Text(), nullable=False),
        sa.Column("set_at", dealer.store.models.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["player"], ["players.key"], name=op.f("fk_passphrases_player_players")),
        sa.PrimaryKeyConstraint("player", name=op.f("pk_passphrases")),
    )


def downgrade() -> None:
    op.drop_table("passphrases")
