"""ORM rows to the frozen records callers see (one function per record type)."""

from __future__ import annotations

import json
from typing import cast

from jobs.catalog.models import (
    AuditEventRow,
    BatchProgressRow,
    DeadLetterRow,
    DefinitionVersion,
    Job,
    LateSampleRow,
    LateWindowCount,
    Migration,
    MigrationStepRow,
    OutboxRow,
    PaneRow,
    Run,
    SnapshotRow,
    UserRow,
)
from jobs.catalog.records import (
    AuditEvent,
    Compatibility,
    DeadLetterSample,
    DesiredState,
    JobInfo,
    JobStatus,
    LateSample,
    MigrationInfo,
    MigrationState,
    MigrationStep,
    OutboxEvent,
    Outcome,
    PaneRecord,
    ProgressPoint,
    Role,
    RunInfo,
    RunStatus,
    SnapshotInfo,
    StoredDeadLetter,
    StoredLateSample,
    StoredPane,
    Timing,
    User,
    VersionInfo,
    WindowLateCount,
)


def job_info(row: Job, *, active_store: str | None, has_live_run: bool) -> JobInfo:
    status: JobStatus
    if row.deleted_at is not None:
        status = "deleted"
    elif row.failed_reason is not None:
        status = "failed"
    elif has_live_run:
        status = "running" if row.desired_state == "running" else "stopping"
    else:
        status = "starting" if row.desired_state == "running" else "stopped"
    return JobInfo(
        name=row.name,
        desired_state=cast(DesiredState, row.desired_state),
        status=status,
        active_version=row.active_version,
        latest_version=row.latest_version,
        active_store=active_store,
        failed_reason=row.failed_reason,
        failed_at=row.failed_at,
        restart_count=row.restart_count,
        last_restart_at=row.last_restart_at,
        created_at=row.created_at,
        created_by=row.created_by,
        updated_at=row.updated_at,
        deleted_at=row.deleted_at,
    )


def version_info(row: DefinitionVersion, job: str) -> VersionInfo:
    return VersionInfo(
        job=job,
        number=row.number,
        spec_json=row.spec_json,
        spec_hash=row.spec_hash,
        store_name=row.store_name,
        author=row.author,
        created_at=row.created_at,
        note=row.note,
        compatibility=cast(Compatibility, row.compatibility),
    )


def audit_event(row: AuditEventRow) -> AuditEvent:
    return AuditEvent(
        id=row.id,
        at=row.at,
        actor=row.actor,
        action=row.action,
        job=row.job,
        version=row.version,
        outcome=cast(Outcome, row.outcome),
        message=row.message,
        diff=row.diff,
        data=dict(row.data or {}),
    )


def outbox_event(row: OutboxRow) -> OutboxEvent:
    return OutboxEvent(
        id=row.id, created_at=row.created_at, kind=row.kind, job=row.job,
        payload=dict(row.payload or {}),
    )


def run_info(row: Run, job: str) -> RunInfo:
    return RunInfo(
        id=row.id,
        job=job,
        version=row.version,
        store=row.store,
        pid=row.pid,
        host=row.host,
        log_path=row.log_path,
        spark_app_id=row.spark_app_id,
        status=cast(RunStatus, row.status),
        exit_reason=row.exit_reason,
        started_at=row.started_at,
        last_heartbeat_at=row.last_heartbeat_at,
        ended_at=row.ended_at,
        restart_count=row.restart_count,
    )


def progress_point(row: BatchProgressRow, job: str) -> ProgressPoint:
    return ProgressPoint(
        run_id=row.run_id,
        job=job,
        store=row.store,
        recorded_at=row.recorded_at,
        batch_id=row.batch_id,
        input_rows=row.input_rows,
        rows_per_second=row.rows_per_second,
        duration_ms=row.duration_ms,
        watermark=row.watermark,
        state_rows=row.state_rows,
        state_bytes=row.state_bytes,
        late_accepted=row.late_accepted,
        late_dropped=row.late_dropped,
        dead_letters=row.dead_letters,
    )


def snapshot_info(row: SnapshotRow, job: str) -> SnapshotInfo:
    return SnapshotInfo(
        run_id=row.run_id,
        job=job,
        version=row.version,
        store=row.store,
        batch_id=row.batch_id,
        committed_at=row.committed_at,
        watermark=row.watermark,
        source_offsets=row.source_offsets,
        state_rows=row.state_rows,
        state_bytes=row.state_bytes,
        checkpoint_location=row.checkpoint_location,
    )


def window_late_count(row: LateWindowCount, job: str) -> WindowLateCount:
    return WindowLateCount(
        job=job,
        store=row.store,
        key=json.loads(row.key_json),
        window_start=row.window_start,
        window_end=row.window_end,
        accepted=row.accepted,
        dropped=row.dropped,
        last_at=row.last_at,
    )


def late_sample(row: LateSampleRow, job: str) -> StoredLateSample:
    return StoredLateSample(
        id=row.id,
        job=job,
        store=row.store,
        batch_id=row.batch_id,
        recorded_at=row.recorded_at,
        sample=LateSample(
            key=json.loads(row.key_json),
            event_time=row.event_time,
            window_start=row.window_start,
            window_end=row.window_end,
            reason=row.reason,
            record=row.record,
        ),
    )


def dead_letter(row: DeadLetterRow, job: str) -> StoredDeadLetter:
    return StoredDeadLetter(
        id=row.id,
        job=job,
        store=row.store,
        batch_id=row.batch_id,
        recorded_at=row.recorded_at,
        sample=DeadLetterSample(reason=row.reason, record=row.record),
    )


def stored_pane(row: PaneRow, job: str) -> StoredPane:
    return StoredPane(
        job=job,
        version=row.version,
        store=row.store,
        batch_id=row.batch_id,
        seq=row.seq,
        pane=PaneRecord(
            key=json.loads(row.key_json),
            window_start=row.window_start,
            window_end=row.window_end,
            timing=cast(Timing, row.timing),
            pane_index=row.pane_index,
            is_first=row.is_first,
            is_last=row.is_last,
            retraction=row.retraction,
            values=dict(row.values),
            emitted_at=row.emitted_at,
            watermark=row.watermark,
            first_event_time=row.first_event_time,
            last_event_time=row.last_event_time,
        ),
    )


def migration_info(row: Migration, job: str, steps: list[MigrationStepRow]) -> MigrationInfo:
    return MigrationInfo(
        id=row.id,
        job=job,
        from_version=row.from_version,
        to_version=row.to_version,
        from_store=row.from_store,
        to_store=row.to_store,
        state=cast(MigrationState, row.state),
        created_at=row.created_at,
        updated_at=row.updated_at,
        created_by=row.created_by,
        replayed_files=row.replayed_files,
        total_files=row.total_files,
        new_watermark=row.new_watermark,
        old_watermark=row.old_watermark,
        cutover_watermark=row.cutover_watermark,
        error=row.error,
        steps=tuple(
            MigrationStep(
                at=s.at,
                state=cast(MigrationState, s.state),
                actor=s.actor,
                message=s.message,
                data=dict(s.data or {}),
            )
            for s in steps
        ),
    )


def user(row: UserRow) -> User:
    return User(
        name=row.name, role=cast(Role, row.role), created_at=row.created_at,
        disabled=row.disabled,
    )
