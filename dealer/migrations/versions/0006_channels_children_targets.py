"""several channels per game, child games, inbound events routed by their target

- ``game_channels``: every channel a game owns (its main one, ``games.channel``, and those
  its ruleset declares); filled here with each game's main channel, and for Hall games the
  Hall's further channels.
- ``games.parent_id``: a child game (a match inside a game) names its parent.
- ``inbound.game_id``: the game a message was applied to, so that an edit, deletion or
  reaction that targets it goes to that game; ``inbound.removed``: a reaction taken back.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

HALL_CHANNELS = ("#proposals", "#request-for-justice", "#judge-elections")
"""The channels the Hall ruleset declares beside its main one (as of this revision)."""


def upgrade() -> None:
    op.create_table(
        "game_channels",
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("channel", sa.String(length=120), nullable=False),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], name=op.f("fk_game_channels_game_id_games")),
        sa.PrimaryKeyConstraint("game_id", "channel", name=op.f("pk_game_channels")),
    )
    op.create_index(op.f("ix_game_channels_channel"), "game_channels", ["channel"], unique=False)
    op.execute("INSERT INTO game_channels (game_id, channel) SELECT id, channel FROM games")
    for channel in HALL_CHANNELS:
        op.execute(
            sa.text(
                "INSERT INTO game_channels (game_id, channel) SELECT id, :channel FROM games "
                "WHERE kind = 'hall' AND channel <> :channel"
            ).bindparams(channel=channel)
        )
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_id", sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f("ix_games_parent_id"), ["parent_id"], unique=False)
        batch_op.create_foreign_key(batch_op.f("fk_games_parent_id_games"), "games", ["parent_id"], ["id"])
    with op.batch_alter_table("inbound", schema=None) as batch_op:
        batch_op.add_column(sa.Column("game_id", sa.String(length=64), nullable=True))
        batch_op.add_column(
            sa.Column("removed", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("inbound", schema=None) as batch_op:
        batch_op.drop_column("removed")
        batch_op.drop_column("game_id")
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_games_parent_id_games"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_games_parent_id"))
        batch_op.drop_column("parent_id")
    op.drop_index(op.f("ix_game_channels_channel"), table_name="game_channels")
    op.drop_table("game_channels")
