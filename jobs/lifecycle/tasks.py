"""The bodies of the Airflow tasks, as plain functions (the DAG files only call these).

Each opens the configured catalog, does one step, and returns JSON-able values for XCom.
Errors are raised as :class:`LifecycleError` so the Airflow task fails visibly (and is retried
or cleared by an operator); every step is idempotent, so a retry continues where it stopped.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ParamSpec, TypeVar

from jobs.lifecycle.errors import LifecycleError
from jobs.lifecycle.outbox import Change
from jobs.lifecycle.wiring import open_lifecycle
from jobs.logsetup import configure_logging

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


def task_body(fn: Callable[P, R]) -> Callable[P, R]:
    """Mark an Airflow task body: tidemark's log level (``TIDEMARK_LOG_LEVEL``) applies to it;
    the records go to Airflow's task log."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        configure_logging("airflow-task")
        return fn(*args, **kwargs)

    return run

SUPERVISOR_ACTOR = "airflow:supervisor"
MIGRATION_ACTOR = "airflow:migration"


@task_body
def supervise(job: str | None = None) -> list[str]:
    """One reconcile pass (all jobs, or one); raises after the pass if any job failed."""
    with open_lifecycle(actor=SUPERVISOR_ACTOR) as lc:
        report = lc.supervisor.reconcile([job] if job else None)
    for line in report.lines():
        log.info("%s", line)
    if report.errors:
        raise LifecycleError("reconcile failed for: " + "; ".join(report.errors))
    return report.lines()


@task_body
def plan_migrations(
    payloads: Iterable[Mapping[str, Any]], conf: Mapping[str, Any] | None = None
) -> list[int]:
    """Turn definition changes into migrations to drive (or restarts in place).

    ``payloads``: outbox changes from the asset events (several may be folded into one run);
    ``conf`` (manual trigger from the UI/CLI): ``{"job": J, "version": N}`` to switch ``J`` to
    version N (activating it if needed; ``"rollback": true`` records it as a roll back),
    ``{"migration_id": M}`` to resume one, ``{"resume": true}`` to resume every open migration;
    ``"accept_partial_rebuild": true`` records that the user accepts a rebuild from a Kafka topic
    whose retention deleted input the old store read (jobs/lifecycle/retention_gate.py).
    """
    conf = dict(conf or {})
    actor = str(conf.get("actor") or MIGRATION_ACTOR)
    ids: list[int] = []
    with open_lifecycle(actor=MIGRATION_ACTOR) as lc:
        for p in payloads:
            change = Change.from_payload(dict(p))
            if change.migration_id is not None:
                log.info("%s: drive migration %s (outbox event %s)", change.job, change.migration_id, change.outbox_id)
                ids.append(change.migration_id)
                continue
            result = lc.migrator.handle_activation(
                change.job, change.to_version, from_version=change.from_version,
                reason=f"outbox event {change.outbox_id}",
            )
            log.info("%s v%s: %s (%s)", result.job, result.version, result.action, result.detail)
            if result.migration_id is not None:
                ids.append(result.migration_id)
        if conf.get("job") and conf.get("version") is not None:
            job, version = str(conf["job"]), int(conf["version"])
            current = lc.catalog.job(job)
            if current.active_version != version:
                lc.catalog.activate(job, version, actor, note=str(conf.get("note") or "triggered from Airflow"))
            planned = [
                m.id for m in lc.catalog.migrations(job, unfinished=True) if m.to_version == version
            ]
            if planned:  # the catalog planned a migration for the new store
                ids.extend(planned)
            else:
                result = lc.migrator.handle_activation(
                    job, version, from_version=current.active_version, reason=f"manual trigger by {actor}"
                )
                log.info("%s v%s: %s (%s)", result.job, result.version, result.action, result.detail)
                if result.migration_id is not None:
                    ids.append(result.migration_id)
        if conf.get("migration_id") is not None:  # resume (a failed one is retried)
            ids.append(int(conf["migration_id"]))
        if conf.get("resume"):
            ids.extend(m.id for m in lc.catalog.migrations(unfinished=True))
        if conf.get("accept_partial_rebuild"):  # the retention guard lets these go on
            from jobs.lifecycle.retention_gate import accept

            for mid in sorted(set(ids)):
                accept(lc.catalog, actor, lc.catalog.migration(mid), "trigger conf")
    return sorted(set(ids))


@task_body
def start_replay(ids: list[int], *, retry_failed: bool = False) -> list[int]:
    with open_lifecycle(actor=MIGRATION_ACTOR) as lc:
        for mid in ids:
            m = lc.migrator.start_replay(mid, retry_failed=retry_failed)
            log.info("migration %s: %s", mid, m.state)
    return ids


@task_body
def wait_caught_up(ids: list[int], *, timeout_s: float = 6 * 3600, poll_s: float = 5.0) -> list[int]:
    """Poll until no migration is replaying any more; keeps the new runs alive meanwhile."""
    deadline = time.monotonic() + timeout_s
    with open_lifecycle(actor=MIGRATION_ACTOR) as lc:
        while True:
            waiting = []
            for mid in ids:
                m = lc.migrator.check_caught_up(mid)
                if m.state == "replaying":
                    waiting.append(m)
                    lc.supervisor.reconcile_job(m.job)
            if not waiting:
                return ids
            if time.monotonic() >= deadline:
                raise LifecycleError(
                    "still replaying after "
                    f"{timeout_s:.0f}s: "
                    + ", ".join(
                        f"migration {m.id} ({m.job}: new wm {m.new_watermark}, old wm {m.old_watermark})"
                        for m in waiting
                    )
                )
            time.sleep(poll_s)


@task_body
def cut_over(ids: list[int]) -> list[int]:
    with open_lifecycle(actor=MIGRATION_ACTOR) as lc:
        for mid in ids:
            m = lc.migrator.cut_over(mid)
            log.info("migration %s: %s (cutover watermark %s)", mid, m.state, m.cutover_watermark)
    return ids


@task_body
def retire_old(ids: list[int]) -> list[str]:
    out = []
    with open_lifecycle(actor=MIGRATION_ACTOR) as lc:
        for mid in ids:
            m = lc.migrator.retire_old(mid)
            out.append(f"migration {mid} of {m.job}: {m.state}")
            if m.state != "done":
                raise LifecycleError(
                    f"migration {mid} of {m.job} is {m.state}, not done"
                    + (f": {m.error}" if m.error else "")
                )
    return out
