"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-30
"""
from alembic import op
import sqlalchemy as sa
import dealer.store.models


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('games',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('channel', sa.String(length=120), nullable=False),
    sa.Column('settings', sa.JSON(), nullable=False),
    sa.Column('state', sa.JSON(), nullable=False),
    sa.Column('created_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('next_event_seq', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_games'))
    )
    with op.batch_alter_table('games', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_games_status'), ['status'], unique=False)

    op.create_table('holdings',
    sa.Column('account', sa.String(length=120), nullable=False),
    sa.Column('item', sa.String(length=64), nullable=False),
    sa.Column('amount', sa.BigInteger(), nullable=False),
    sa.CheckConstraint("amount >= 0 OR account = 'mint'", name=op.f('ck_holdings_not_negative')),
    sa.PrimaryKeyConstraint('account', 'item', name=op.f('pk_holdings'))
    )
    op.create_table('inbound',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('source', sa.String(length=64), nullable=False),
    sa.Column('external_id', sa.String(length=200), nullable=False),
    sa.Column('raw', sa.Text(), nullable=False),
    sa.Column('sender', sa.String(length=200), nullable=False),
    sa.Column('channel', sa.String(length=120), nullable=False),
    sa.Column('game_hint', sa.String(length=64), nullable=True),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=True),
    sa.Column('emoji', sa.String(length=64), nullable=True),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('sent_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('received_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('outcome', sa.JSON(), nullable=True),
    sa.Column('processed_at', dealer.store.models.UtcDateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_inbound')),
    sa.UniqueConstraint('source', 'external_id', name=op.f('uq_inbound_source'))
    )
    with op.batch_alter_table('inbound', schema=None) as batch_op:
        batch_op.create_index('ix_inbound_pending', ['status', 'sent_at'], unique=False)

    op.create_table('ledger_entries',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('game_id', sa.String(length=64), nullable=True),
    sa.Column('source', sa.String(length=120), nullable=False),
    sa.Column('target', sa.String(length=120), nullable=False),
    sa.Column('item', sa.String(length=64), nullable=False),
    sa.Column('amount', sa.BigInteger(), nullable=False),
    sa.Column('memo', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ledger_entries'))
    )
    with op.batch_alter_table('ledger_entries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ledger_entries_game_id'), ['game_id'], unique=False)

    op.create_table('outbox',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('game_id', sa.String(length=64), nullable=True),
    sa.Column('channel', sa.String(length=120), nullable=False),
    sa.Column('recipient', sa.String(length=200), nullable=True),
    sa.Column('kind', sa.String(length=64), nullable=False),
    sa.Column('subject', sa.Text(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('created_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('external_id', sa.String(length=200), nullable=True),
    sa.Column('delivered_at', dealer.store.models.UtcDateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_outbox')),
    sa.UniqueConstraint('key', name=op.f('uq_outbox_key'))
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_game_id'), ['game_id'], unique=False)
        batch_op.create_index('ix_outbox_pending', ['status', 'id'], unique=False)

    op.create_table('overrides',
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('value', sa.String(length=64), nullable=False),
    sa.Column('game_id', sa.String(length=64), nullable=False),
    sa.Column('deadline_name', sa.String(length=120), nullable=True),
    sa.Column('seen_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_overrides'))
    )
    op.create_table('players',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('created_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_players'))
    )
    op.create_table('deadlines',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('game_id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('due_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('set_due_at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('paused', sa.Boolean(), nullable=False),
    sa.Column('fired_at', dealer.store.models.UtcDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['games.id'], name=op.f('fk_deadlines_game_id_games')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_deadlines'))
    )
    with op.batch_alter_table('deadlines', schema=None) as batch_op:
        batch_op.create_index('ix_deadlines_due', ['status', 'paused', 'due_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_deadlines_game_id'), ['game_id'], unique=False)

    op.create_table('draws',
    sa.Column('game_id', sa.String(length=64), nullable=False),
    sa.Column('epoch', sa.Integer(), nullable=False),
    sa.Column('counter', sa.Integer(), nullable=False),
    sa.Column('n', sa.Integer(), nullable=False),
    sa.Column('result', sa.Integer(), nullable=False),
    sa.Column('client', sa.String(length=64), nullable=False),
    sa.Column('purpose', sa.String(length=120), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['games.id'], name=op.f('fk_draws_game_id_games')),
    sa.PrimaryKeyConstraint('game_id', 'epoch', 'counter', name=op.f('pk_draws'))
    )
    op.create_table('events',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('game_id', sa.String(length=64), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('at', dealer.store.models.UtcDateTime(timezone=True), nullable=False),
    sa.Column('type', sa.String(length=64), nullable=False),
    sa.Column('data', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['games.id'], name=op.f('fk_events_game_id_games')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_events')),
    sa.UniqueConstraint('game_id', 'seq', name=op.f('uq_events_game_id'))
    )
    op.create_table('game_players',
    sa.Column('game_id', sa.String(length=64), nullable=False),
    sa.Column('player', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['games.id'], name=op.f('fk_game_players_game_id_games')),
    sa.PrimaryKeyConstraint('game_id', 'player', name=op.f('pk_game_players'))
    )
    with op.batch_alter_table('game_players', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_game_players_player'), ['player'], unique=False)

    op.create_table('seeds',
    sa.Column('game_id', sa.String(length=64), nullable=False),
    sa.Column('epoch', sa.Integer(), nullable=False),
    sa.Column('server_seed', sa.String(length=128), nullable=False),
    sa.Column('commitment', sa.String(length=64), nullable=False),
    sa.Column('client_seeds', sa.JSON(), nullable=False),
    sa.Column('counter', sa.Integer(), nullable=False),
    sa.Column('revealed_at', dealer.store.models.UtcDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['games.id'], name=op.f('fk_seeds_game_id_games')),
    sa.PrimaryKeyConstraint('game_id', 'epoch', name=op.f('pk_seeds'))
    )


def downgrade() -> None:
    op.drop_table('seeds')
    with op.batch_alter_table('game_players', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_game_players_player'))

    op.drop_table('game_players')
    op.drop_table('events')
    op.drop_table('draws')
    with op.batch_alter_table('deadlines', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_deadlines_game_id'))
        batch_op.drop_index('ix_deadlines_due')

    op.drop_table('deadlines')
    op.drop_table('players')
    op.drop_table('overrides')
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index('ix_outbox_pending')
        batch_op.drop_index(batch_op.f('ix_outbox_game_id'))

    op.drop_table('outbox')
    with op.batch_alter_table('ledger_entries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ledger_entries_game_id'))

    op.drop_table('ledger_entries')
    with op.batch_alter_table('inbound', schema=None) as batch_op:
        batch_op.drop_index('ix_inbound_pending')

    op.drop_table('inbound')
    op.drop_table('holdings')
    with op.batch_alter_table('games', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_games_status'))

    op.drop_table('games')
