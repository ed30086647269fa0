"""For the job process: find the run the launcher recorded for it.

The launcher records the run *after* the process exists (its pid is part of the row), so a
launched job (``TIDEMARK_LAUNCHED=1`` in its environment) looks its run up by pid and host
instead of creating a second one, waiting a little for the launcher's write to land.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from jobs.catalog.ports import RuntimeCatalog
from jobs.catalog.records import RunInfo
from jobs.lifecycle.process import LAUNCHED_ENV, this_host


def launched_by_lifecycle(env: dict[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get(LAUNCHED_ENV) == "1"


def find_own_run(
    catalog: RuntimeCatalog,
    job: str,
    *,
    timeout_s: float = 30.0,
    pid: int | None = None,
    host: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> RunInfo | None:
    """The live run of ``job`` recorded with this process's pid on this host, or None if the
    launcher has not recorded it within ``timeout_s`` (the job should then exit: a run nobody
    recorded would be invisible to the supervisor)."""
    pid = os.getpid() if pid is None else pid
    host = this_host() if host is None else host
    deadline = time.monotonic() + timeout_s
    while True:
        for run in catalog.active_runs(job):
            if run.pid == pid and run.host == host:
                return run
        if time.monotonic() >= deadline:
            return None
        sleep(0.2)
