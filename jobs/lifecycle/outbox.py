"""Reading definition changes from the catalog outbox (no Airflow here; the trigger wraps it).

Orchestration is the outbox's consumer. Two kinds of event need an event-driven reaction, and
each change produces exactly one of them:
- ``migration_requested``: an activation needing a new store, planned by the catalog (the new
  version becomes active at the cut-over) -> drive that migration;
- ``version_activated`` without a ``migration_id``: an immediate switch (same store: restart in
  place; a store that has run before: roll back, resume its checkpoint) -> handle it.
Not forwarded: ``version_activated`` written by a cut-over (it carries the ``migration_id`` of
the migration already being driven), ``migration_requested`` for migrations the lifecycle
planned itself (the DAG run that planned it drives it), and every other kind (desired state,
restart requests, deletes): those are state the supervisor reads on each pass.

Delivery is claim -> hand over -> ack: an event is acknowledged only after its change has been
handed to Airflow, and a claim whose consumer died comes back after the lease. A change can
thus be delivered twice in a crash, never lost; handling it is idempotent (an unfinished
migration is reused), so each change drives one migration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from jobs.catalog import CatalogError
from jobs.catalog.ports import LifecycleService
from jobs.catalog.records import OutboxEvent

CONSUMER = "airflow:outbox-trigger"
LIFECYCLE_ACTORS = frozenset({"airflow:migration", "airflow:supervisor"})


@dataclass(frozen=True, slots=True)
class Change:
    outbox_id: int
    kind: str
    job: str
    to_version: int
    from_version: int | None = None
    same_store: bool | None = None
    migration_id: int | None = None

    def payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_payload(cls, p: dict[str, Any]) -> Change:
        def opt_int(v: Any) -> int | None:
            return None if v is None else int(v)

        return cls(
            outbox_id=int(p["outbox_id"]),
            kind=str(p["kind"]),
            job=str(p["job"]),
            to_version=int(p["to_version"]),
            from_version=opt_int(p.get("from_version")),
            same_store=p.get("same_store"),
            migration_id=opt_int(p.get("migration_id")),
        )


def classify(catalog: LifecycleService, ev: OutboxEvent) -> Change | None:
    """The change an event asks orchestration to handle, or None (acknowledge and move on)."""
    p = ev.payload or {}
    if not ev.job or p.get("to_version") is None:
        return None
    base = dict(
        outbox_id=ev.id, kind=ev.kind, job=ev.job, to_version=int(p["to_version"]),
        from_version=None if p.get("from_version") is None else int(p["from_version"]),
        same_store=p.get("same_store"),
    )
    if ev.kind == "version_activated":
        if p.get("migration_id") is not None:
            return None  # a cut-over's own switch
        return Change(**base)  # type: ignore[arg-type]
    if ev.kind == "migration_requested" and p.get("migration_id") is not None:
        mid = int(p["migration_id"])
        try:
            info = catalog.migration(mid)
        except CatalogError:
            return None
        if info.created_by in LIFECYCLE_ACTORS:
            return None
        return Change(**base, migration_id=mid)  # type: ignore[arg-type]
    return None


def poll_changes(
    catalog: LifecycleService, consumer: str = CONSUMER, *, limit: int = 50, lease_ms: int = 300_000
) -> list[Change]:
    """Claim pending events; return the changes to hand over (ack each with :func:`ack` once
    handed over), acknowledging everything else at once."""
    events = catalog.claim_outbox(consumer, limit=limit, lease_ms=lease_ms)
    changes: list[Change] = []
    other: list[int] = []
    for ev in events:
        change = classify(catalog, ev)
        if change is None:
            other.append(ev.id)
        else:
            changes.append(change)
    if other:
        catalog.ack_outbox(consumer, other)
    return changes


def ack(catalog: LifecycleService, ids: Sequence[int], consumer: str = CONSUMER) -> int:
    return catalog.ack_outbox(consumer, list(ids))
