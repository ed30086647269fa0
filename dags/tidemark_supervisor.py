"""Supervisor: every minute (and on demand), bring every job's runs to their desired state.

Thin by design: the logic is :func:`jobs.lifecycle.tasks.supervise` (tested without Airflow).
Trigger it by hand with ``{"job": "<name>"}`` to reconcile one job now.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import Param, dag, task


@dag(
    dag_id="tidemark_supervisor",
    schedule="* * * * *",
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(minutes=10),
    tags=["tidemark"],
    params={"job": Param(None, type=["null", "string"], description="reconcile only this job")},
    doc_md=__doc__,
)
def tidemark_supervisor() -> None:
    @task(retries=0)
    def reconcile(params: dict[str, Any] | None = None) -> list[str]:
        from jobs.lifecycle.tasks import supervise

        job = (params or {}).get("job")
        return supervise(job or None)

    reconcile()


tidemark_supervisor()
