"""player look-alikes: each player's look-alike keys, stored and indexed

Adding a player refuses a name that looks like an existing one (dealer.text.look_alike_keys);
it read every player's name to do so. The keys are now stored, one row per key, so the check
is one index probe. Existing players' keys are computed here.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

from dealer.text import look_alike_keys

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "player_look_alikes",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("player", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(["player"], ["players.key"],
                                name=op.f("fk_player_look_alikes_player_players")),
        sa.PrimaryKeyConstraint("key", "player", name=op.f("pk_player_look_alikes")),
    )
    players = op.get_bind().execute(sa.text("SELECT key, name FROM players")).all()
    rows = [{"key": alike, "player": key} for key, name in players for alike in sorted(look_alike_keys(name))]
    if rows:
        op.bulk_insert(table, rows)


def downgrade() -> None:
    op.drop_table("player_look_alikes")
