"""runtime bookkeeping: runs, progress, snapshots, late data, catalog-sink panes

Revision ID: 0002
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('store', sa.String(length=200), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=True),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('log_path', sa.Text(), nullable=True),
    sa.Column('spark_app_id', sa.String(length=128), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('exit_reason', sa.Text(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_heartbeat_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('restart_count', sa.Integer(), nullable=False),
    sa.CheckConstraint("status IN ('running', 'succeeded', 'stopped', 'failed', 'killed', 'lost')", name=op.f('ck_runs_status')),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_runs_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_runs'))
    )
    op.create_index(op.f('ix_runs_job_id_id'), 'runs', ['job_id', 'id'], unique=False)
    op.create_index(op.f('ix_runs_status'), 'runs', ['status'], unique=False)
    op.create_table('batch_progress',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('store', sa.String(length=200), nullable=False),
    sa.Column('batch_id', sa.BigInteger(), nullable=False),
    sa.Column('recorded_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('input_rows', sa.BigInteger(), nullable=False),
    sa.Column('rows_per_second', sa.Float(), nullable=False),
    sa.Column('duration_ms', sa.BigInteger(), nullable=False),
    sa.Column('watermark', sa.BigInteger(), nullable=True),
    sa.Column('state_rows', sa.BigInteger(), nullable=False),
    sa.Column('state_bytes', sa.BigInteger(), nullable=False),
    sa.Column('late_accepted', sa.BigInteger(), nullable=False),
    sa.Column('late_dropped', sa.BigInteger(), nullable=False),
    sa.Column('dead_letters', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_batch_progress_job_id_jobs')),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_batch_progress_run_id_runs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_batch_progress')),
    sa.UniqueConstraint('store', 'batch_id', name=op.f('uq_batch_progress_store_batch_id'))
    )
    op.create_index(op.f('ix_batch_progress_job_id_id'), 'batch_progress', ['job_id', 'id'], unique=False)
    op.create_table('snapshots',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('store', sa.String(length=200), nullable=False),
    sa.Column('batch_id', sa.BigInteger(), nullable=False),
    sa.Column('committed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('watermark', sa.BigInteger(), nullable=True),
    sa.Column('source_offsets', sa.JSON(), nullable=False),
    sa.Column('state_rows', sa.BigInteger(), nullable=False),
    sa.Column('state_bytes', sa.BigInteger(), nullable=False),
    sa.Column('checkpoint_location', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_snapshots_job_id_jobs')),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_snapshots_run_id_runs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_snapshots')),
    sa.UniqueConstraint('store', 'batch_id', name=op.f('uq_snapshots_store_batch_id'))
    )
    op.create_index(op.f('ix_snapshots_job_id_id'), 'snapshots', ['job_id', 'id'], unique=False)
    op.create_table('late_window_counts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('store', sa.String(length=200), nullable=False),
    sa.Column('slot', sa.String(length=1000), nullable=False),
    sa.Column('key_json', sa.Text(), nullable=False),
    sa.Column('window_start', sa.BigInteger(), nullable=True),
    sa.Column('window_end', sa.BigInteger(), nullable=True),
    sa.Column('accepted', sa.BigInteger(), nullable=False),
    sa.Column('dropped', sa.BigInteger(), nullable=False),
    sa.Column('last_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_late_window_counts_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_late_window_counts')),
    sa.UniqueConstraint('store', 'slot', name=op.f('uq_late_window_counts_store_slot'))
    )
    op.create_index(op.f('ix_late_window_counts_job_id_window_end'), 'late_window_counts', ['job_id', 'window_end'], unique=False)
    op.create_table('late_samples',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('store', sa.String(length=200), nullable=False),
    sa.Column('batch_id', sa.BigInteger(), nullable=False),
    sa.Column('recorded_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('key_json', sa.Text(), nullable=False),
    sa.Column('event_time', sa.BigInteger(), nullable=True),
    sa.Column('window_start', sa.BigInteger(), nullable=True),
    sa.Column('window_end', sa.BigInteger(), nullable=True),
    sa.Column('reason', sa.String(length=32), nullable=False),
    sa.Column('record', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_late_samples_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_late_samples'))
    )
    op.create_index(op.f('ix_late_samples_job_id_id'), 'late_samples', ['job_id', 'id'], unique=False)
    op.create_table('dead_letters',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('store', sa.String(length=200), nullable=False),
    sa.Column('batch_id', sa.BigInteger(), nullable=False),
    sa.Column('recorded_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('record', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_dead_letters_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dead_letters'))
    )
    op.create_index(op.f('ix_dead_letters_job_id_id'), 'dead_letters', ['job_id', 'id'], unique=False)
    op.create_table('pane_batches',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('store', sa.String(length=200), nullable=False),
    sa.Column('batch_id', sa.BigInteger(), nullable=False),
    sa.Column('pane_count', sa.Integer(), nullable=False),
    sa.Column('written_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_pane_batches_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pane_batches')),
    sa.UniqueConstraint('store', 'batch_id', name=op.f('uq_pane_batches_store_batch_id'))
    )
    op.create_table('panes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('store', sa.String(length=200), nullable=False),
    sa.Column('batch_id', sa.BigInteger(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('key_json', sa.Text(), nullable=False),
    sa.Column('window_start', sa.BigInteger(), nullable=True),
    sa.Column('window_end', sa.BigInteger(), nullable=True),
    sa.Column('timing', sa.String(length=8), nullable=False),
    sa.Column('pane_index', sa.Integer(), nullable=False),
    sa.Column('is_first', sa.Boolean(), nullable=False),
    sa.Column('is_last', sa.Boolean(), nullable=False),
    sa.Column('retraction', sa.Boolean(), nullable=False),
    sa.Column('values', sa.JSON(), nullable=False),
    sa.Column('emitted_at', sa.BigInteger(), nullable=False),
    sa.Column('watermark', sa.BigInteger(), nullable=True),
    sa.Column('first_event_time', sa.BigInteger(), nullable=True),
    sa.Column('last_event_time', sa.BigInteger(), nullable=True),
    sa.CheckConstraint("timing IN ('EARLY', 'ON_TIME', 'LATE')", name=op.f('ck_panes_timing')),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_panes_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_panes')),
    sa.UniqueConstraint('store', 'batch_id', 'seq', name=op.f('uq_panes_store_batch_id_seq'))
    )
    op.create_index(op.f('ix_panes_job_id_batch_id_seq'), 'panes', ['job_id', 'batch_id', 'seq'], unique=False)
    op.create_index(op.f('ix_panes_job_id_window_start'), 'panes', ['job_id', 'window_start'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_panes_job_id_batch_id_seq'), table_name='panes')
    op.drop_index(op.f('ix_panes_job_id_window_start'), table_name='panes')
    op.drop_table('panes')
    op.drop_table('pane_batches')
    op.drop_index(op.f('ix_dead_letters_job_id_id'), table_name='dead_letters')
    op.drop_table('dead_letters')
    op.drop_index(op.f('ix_late_samples_job_id_id'), table_name='late_samples')
    op.drop_table('late_samples')
    op.drop_index(op.f('ix_late_window_counts_job_id_window_end'), table_name='late_window_counts')
    op.drop_table('late_window_counts')
    op.drop_index(op.f('ix_snapshots_job_id_id'), table_name='snapshots')
    op.drop_table('snapshots')
    op.drop_index(op.f('ix_batch_progress_job_id_id'), table_name='batch_progress')
    op.drop_table('batch_progress')
    op.drop_index(op.f('ix_runs_job_id_id'), table_name='runs')
    op.drop_index(op.f('ix_runs_status'), table_name='runs')
    op.drop_table('runs')
