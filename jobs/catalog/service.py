"""The catalog service: the only code in tidemark that opens ORM sessions.

:class:`Catalog` is assembled from one part per concern (each in its own module, each a
mixin over :class:`jobs.catalog.base.CatalogBase`). Every public method is one short
transaction and returns plain dataclasses from :mod:`jobs.catalog.records`. Mutating methods
take an ``actor`` (a user name, or a system name such as ``airflow:supervisor``) and write an
append-only audit event in the same transaction; definition and lifecycle changes also write an
outbox event that the orchestration consumes exactly once. Per-batch telemetry
(``heartbeat``, ``record_batch``, ``write_panes``) is written by the run itself and not audited.

Permission checks are explicit (:meth:`Catalog.require`): the UI and the CLI call it before a
user-initiated change; internal callers (DAGs, the Spark job) are trusted.
"""

from __future__ import annotations

from jobs.catalog.audit_ops import AuditOps
from jobs.catalog.batch_ops import BatchOps
from jobs.catalog.job_ops import ActivationMode, DefinitionInput
from jobs.catalog.migration_ops import MigrationOps
from jobs.catalog.pane_ops import PaneOps
from jobs.catalog.run_ops import RunOps
from jobs.catalog.user_ops import UserOps

__all__ = ["ActivationMode", "Catalog", "DefinitionInput"]


class Catalog(MigrationOps, AuditOps, RunOps, BatchOps, PaneOps, UserOps):
    """Typed access to the catalog database.

    ``Catalog(url)`` opens (and pools) connections to ``url`` (default
    ``Settings.from_env().db_url``). The schema must be at the Alembic head revision
    (``tidemark db upgrade``), else ``CatalogError(code="schema")``; pass ``upgrade=True`` to
    bring it there first. ``clock`` supplies every timestamp written; ``sample_limit`` is how
    many late / dead-letter samples are kept per job. Use it as a context manager or call
    :meth:`close`.
    """

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
