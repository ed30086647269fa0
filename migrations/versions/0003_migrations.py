"""store migrations and their steps

Revision ID: 0003
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('migrations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('from_version', sa.Integer(), nullable=False),
    sa.Column('to_version', sa.Integer(), nullable=False),
    sa.Column('from_store', sa.String(length=200), nullable=False),
    sa.Column('to_store', sa.String(length=200), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_by', sa.String(length=128), nullable=False),
    sa.Column('replayed_files', sa.Integer(), nullable=False),
    sa.Column('total_files', sa.Integer(), nullable=True),
    sa.Column('new_watermark', sa.BigInteger(), nullable=True),
    sa.Column('old_watermark', sa.BigInteger(), nullable=True),
    sa.Column('cutover_watermark', sa.BigInteger(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.CheckConstraint("state IN ('planned', 'replaying', 'caught_up', 'cut_over', 'done', 'failed', 'rolled_back')", name=op.f('ck_migrations_state')),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_migrations_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_migrations'))
    )
    op.create_index(op.f('ix_migrations_job_id_id'), 'migrations', ['job_id', 'id'], unique=False)
    op.create_table('migration_steps',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('migration_id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('actor', sa.String(length=128), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('data', sa.JSON(), nullable=False),
    sa.CheckConstraint("state IN ('planned', 'replaying', 'caught_up', 'cut_over', 'done', 'failed', 'rolled_back')", name=op.f('ck_migration_steps_state')),
    sa.ForeignKeyConstraint(['migration_id'], ['migrations.id'], name=op.f('fk_migration_steps_migration_id_migrations')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_migration_steps'))
    )
    op.create_index(op.f('ix_migration_steps_migration_id_id'), 'migration_steps', ['migration_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_migration_steps_migration_id_id'), table_name='migration_steps')
    op.drop_table('migration_steps')
    op.drop_index(op.f('ix_migrations_job_id_id'), table_name='migrations')
    op.drop_table('migrations')
