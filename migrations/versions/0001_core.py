"""core catalog: jobs, definition versions, audit events, outbox, users

Audit events and definition versions are protected by triggers that refuse UPDATE and DELETE
(and TRUNCATE on PostgreSQL), so even SQL typed by hand cannot rewrite history.

Revision ID: 0001
Revises: (none)
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


IMMUTABLE = {
    "audit_events": "audit events are append-only",
    "definition_versions": "definition versions are immutable",
}


def _create_guards() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION tidemark_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation'; END $$"
        )
        for table, message in IMMUTABLE.items():
            op.execute(
                f"CREATE TRIGGER trg_{table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION tidemark_refuse_change('{message}')"
            )
            op.execute(
                f"CREATE TRIGGER trg_{table}_no_truncate BEFORE TRUNCATE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION tidemark_refuse_change('{message}')"
            )
    else:
        for table, message in IMMUTABLE.items():
            for verb in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER trg_{table}_no_{verb.lower()} BEFORE {verb} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
                )


def _drop_guards() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in IMMUTABLE:
            op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_immutable ON {table}")
            op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_no_truncate ON {table}")
        op.execute("DROP FUNCTION IF EXISTS tidemark_refuse_change()")
    else:
        for table in IMMUTABLE:
            for verb in ("update", "delete"):
                op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_no_{verb}")


def upgrade() -> None:
    op.create_table('jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('desired_state', sa.String(length=16), nullable=False),
    sa.Column('active_version', sa.Integer(), nullable=True),
    sa.Column('latest_version', sa.Integer(), nullable=False),
    sa.Column('failed_reason', sa.Text(), nullable=True),
    sa.Column('failed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('restart_count', sa.Integer(), nullable=False),
    sa.Column('last_restart_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_by', sa.String(length=128), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("desired_state IN ('running', 'stopped')", name=op.f('ck_jobs_desired_state')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs')),
    sa.UniqueConstraint('name', name=op.f('uq_jobs_name'))
    )
    op.create_table('definition_versions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('spec_json', sa.Text(), nullable=False),
    sa.Column('spec_hash', sa.String(length=64), nullable=False),
    sa.Column('store_name', sa.String(length=200), nullable=False),
    sa.Column('author', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('compatibility', sa.String(length=16), nullable=False),
    sa.CheckConstraint("compatibility IN ('initial', 'same_store', 'new_store')", name=op.f('ck_definition_versions_compatibility')),
    sa.CheckConstraint('number >= 1', name=op.f('ck_definition_versions_number_positive')),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_definition_versions_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_definition_versions')),
    sa.UniqueConstraint('job_id', 'number', name=op.f('uq_definition_versions_job_id_number'))
    )
    op.create_index(op.f('ix_definition_versions_store_name'), 'definition_versions', ['store_name'], unique=False)
    op.create_table('audit_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=128), nullable=False),
    sa.Column('action', sa.String(length=32), nullable=False),
    sa.Column('job', sa.String(length=63), nullable=True),
    sa.Column('version', sa.Integer(), nullable=True),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('diff', sa.JSON(), nullable=True),
    sa.Column('data', sa.JSON(), nullable=False),
    sa.CheckConstraint("outcome IN ('ok', 'refused', 'failed')", name=op.f('ck_audit_events_outcome')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_events'))
    )
    op.create_index(op.f('ix_audit_events_action_id'), 'audit_events', ['action', 'id'], unique=False)
    op.create_index(op.f('ix_audit_events_actor_id'), 'audit_events', ['actor', 'id'], unique=False)
    op.create_index(op.f('ix_audit_events_at'), 'audit_events', ['at'], unique=False)
    op.create_index(op.f('ix_audit_events_job_id'), 'audit_events', ['job', 'id'], unique=False)
    op.create_table('outbox',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('job', sa.String(length=63), nullable=True),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('claimed_by', sa.String(length=128), nullable=True),
    sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('consumed_by', sa.String(length=128), nullable=True),
    sa.Column('consumed_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_outbox'))
    )
    op.create_index(op.f('ix_outbox_consumed_at_id'), 'outbox', ['consumed_at', 'id'], unique=False)
    op.create_table('users',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('disabled', sa.Boolean(), nullable=False),
    sa.CheckConstraint("role IN ('viewer', 'editor', 'operator', 'admin')", name=op.f('ck_users_role')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('name', name=op.f('uq_users_name'))
    )
    _create_guards()


def downgrade() -> None:
    _drop_guards()
    op.drop_table('users')
    op.drop_index(op.f('ix_outbox_consumed_at_id'), table_name='outbox')
    op.drop_table('outbox')
    op.drop_index(op.f('ix_audit_events_action_id'), table_name='audit_events')
    op.drop_index(op.f('ix_audit_events_actor_id'), table_name='audit_events')
    op.drop_index(op.f('ix_audit_events_at'), table_name='audit_events')
    op.drop_index(op.f('ix_audit_events_job_id'), table_name='audit_events')
    op.drop_table('audit_events')
    op.drop_index(op.f('ix_definition_versions_store_name'), table_name='definition_versions')
    op.drop_table('definition_versions')
    op.drop_table('jobs')
