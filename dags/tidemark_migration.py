"""Migration: switch a job to an activated version, building a new store when needed.

Started by definition changes, event-driven: an ``AssetWatcher`` polls the catalog outbox
(:class:`jobs.lifecycle.outbox_trigger.OutboxTrigger`) and every activation becomes an asset
event; several may be folded into one run. Also triggerable from the UI/CLI with conf
``{"job": J, "version": N}`` (switch, roll back), ``{"migration_id": M}`` or ``{"resume": true}``
(resume after a failure). Steps: plan -> start_replay -> wait_caught_up -> cut_over ->
retire_old; each is recorded in the catalog and idempotent (see :mod:`jobs.lifecycle.migration`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import Asset, AssetWatcher, dag, get_current_context, task

from jobs.lifecycle.outbox_trigger import OutboxTrigger


def _db_url() -> str:
    from jobs.config import Settings  # imported here: the DAG file stays import-light

    return Settings.from_env().db_url


definition_changes = Asset(
    name="tidemark_definition_changes",
    uri="tidemark://catalog/outbox/version_activated",
    watchers=[AssetWatcher(name="tidemark_outbox", trigger=OutboxTrigger(db_url=_db_url()))],
)


@dag(
    dag_id="tidemark_migration",
    schedule=[definition_changes],
    catchup=False,
    max_active_runs=1,
    tags=["tidemark"],
    doc_md=__doc__,
)
def tidemark_migration() -> None:
    @task
    def plan() -> list[int]:
        from jobs.lifecycle.tasks import plan_migrations

        context: Any = get_current_context()
        payloads: list[dict[str, Any]] = []
        events = context.get("triggering_asset_events") or {}
        for asset_events in events.values():
            for ev in asset_events:
                payload = (ev.extra or {}).get("payload")
                if payload:
                    payloads.append(payload)
        dag_run = context.get("dag_run")
        conf = dict(getattr(dag_run, "conf", None) or {})
        return plan_migrations(payloads, conf)

    @task
    def start_replay(ids: list[int]) -> list[int]:
        from jobs.lifecycle import tasks

        conf: Any = getattr(get_current_context().get("dag_run"), "conf", None) or {}
        return tasks.start_replay(ids, retry_failed=conf.get("migration_id") is not None)

    @task(execution_timeout=timedelta(hours=12))
    def wait_caught_up(ids: list[int]) -> list[int]:
        from jobs.config import Settings
        from jobs.lifecycle import tasks

        settings = Settings.from_env()
        poll = float(settings.value("TIDEMARK_MIGRATION_POLL_S") or 5)
        timeout = float(settings.value("TIDEMARK_MIGRATION_TIMEOUT_S") or 6 * 3600)
        return tasks.wait_caught_up(ids, timeout_s=timeout, poll_s=poll)

    @task
    def cut_over(ids: list[int]) -> list[int]:
        from jobs.lifecycle import tasks

        return tasks.cut_over(ids)

    @task
    def retire_old(ids: list[int]) -> list[str]:
        from jobs.lifecycle import tasks

        return tasks.retire_old(ids)

    # TaskFlow: a call returns the XComArg that Airflow resolves to the task's list when the
    # next task runs, so the chain is typed Any between the steps
    ids: Any = plan()
    for step in (start_replay, wait_caught_up, cut_over):
        ids = step(ids)
    retire_old(ids)


tidemark_migration()
