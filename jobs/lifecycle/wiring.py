"""Build the supervisor and migrator from settings: what DAG tasks and CLI verbs call.

``TIDEMARK_JOB_COMMAND`` overrides the launch command as a JSON list with ``{job}`` and
``{version}`` placeholders (no shell involved), e.g.
``["/opt/venv/bin/python", "-m", "jobs.run", "{job}", "--version", "{version}"]``; tests use it
to launch a fake job instead of Spark. Policy numbers come from ``TIDEMARK_<FIELD>`` (see
:class:`jobs.lifecycle.policy.RestartPolicy`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from jobs.catalog import Catalog
from jobs.config import Settings
from jobs.lifecycle.catalog_port import LifecycleCatalog
from jobs.lifecycle.errors import LifecycleError
from jobs.lifecycle.migration import Migrator
from jobs.lifecycle.policy import RestartPolicy
from jobs.lifecycle.reconcile import CommandFactory, Launcher, Supervisor, default_command
from jobs.timeutil import Clock

COMMAND_ENV = "TIDEMARK_JOB_COMMAND"


def command_from_env(env: Mapping[str, str] | None = None) -> CommandFactory:
    """The job command from ``TIDEMARK_JOB_COMMAND`` / ``[supervisor] job_command`` (``env``
    None: tidemark's settings), else the default."""
    raw = (Settings.from_env().values if env is None else env).get(COMMAND_ENV)
    if not raw:
        return default_command
    try:
        template = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise LifecycleError(f"{COMMAND_ENV}: not a JSON list: {exc}") from exc
    if not isinstance(template, list) or not template or not all(isinstance(a, str) for a in template):
        raise LifecycleError(f"{COMMAND_ENV}: must be a non-empty JSON list of strings")

    def command(job: str, version: int) -> Sequence[str]:
        return [a.replace("{job}", job).replace("{version}", str(version)) for a in template]

    return command


@dataclass
class Lifecycle:
    catalog: Catalog
    supervisor: Supervisor
    migrator: Migrator


@contextmanager
def open_lifecycle(
    *,
    actor: str = "airflow:supervisor",
    settings: Settings | None = None,
    clock: Clock | None = None,
    policy: RestartPolicy | None = None,
    launcher: Launcher | None = None,
) -> Iterator[Lifecycle]:
    """A supervisor and migrator over the configured catalog, closed on exit."""
    settings = settings or Settings.from_env()
    catalog = Catalog(settings.db_url, clock=clock)
    try:
        port = LifecycleCatalog(catalog, actor=actor)
        supervisor = Supervisor(
            port,
            db_url=settings.db_url,
            clock=clock,
            policy=policy or RestartPolicy.from_env(),
            launcher=launcher or Launcher(command=command_from_env()),
            settings=settings,
        )
        yield Lifecycle(catalog, supervisor, Migrator(supervisor, actor=actor))
    finally:
        catalog.close()
