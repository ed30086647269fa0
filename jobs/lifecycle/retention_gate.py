"""The retention guard in the migration flow: may a new store rebuild from a Kafka topic?

A new store replays its Kafka topics from the earliest retained offsets. If retention has
already deleted records the old store consumed, the new results would silently miss them, so
before the new version starts (:meth:`jobs.lifecycle.migration.Migrator.start_replay`) the
topic's earliest offsets are compared with the offsets the old store's checkpoint started from
(:mod:`jobs.kafka.retention`). The migration is refused (state ``failed``, a ``retention_guard``
audit row with outcome ``refused``) unless a user accepted a partial rebuild: an
``accept_partial_rebuild`` audit row for that migration, or for the (version, old store, new
store) it goes between, written by the Define page's checkbox or ``tidemark migrate
--accept-partial-rebuild``. An accepted partial rebuild records from which offsets the new
results are complete: in the migration's ``replaying`` step, in the ``retention_guard`` audit
row's data, and in ``_complete_from.json`` beside the new store's results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jobs.config import Settings
from jobs.kafka.errors import KafkaSetupError
from jobs.kafka.retention import Partition, RetentionVerdict, check_retention
from jobs.storage.errors import StorageError
from jobs.storage.location import join
from jobs.storage.resolve import storage_for

ACCEPT_ACTION = "accept_partial_rebuild"
GUARD_ACTION = "retention_guard"
REFUSAL = "retention guard:"
"""How a migration's error starts when the guard refused it (the CLI exits 3 then)."""
COMPLETE_FROM_FILE = "_complete_from.json"
"""Beside a rebuilt store's results: from which offset of each partition they are complete
(underscore-prefixed, so readers of the results skip it as Spark's own bookkeeping)."""


def offsets_json(offsets: Mapping[Partition, int]) -> dict[str, int]:
    """``{"topic[partition]": offset}``, the form the audit data, the CLI and the UI show."""
    return {f"{t}[{p}]": o for (t, p), o in sorted(offsets.items())}


def describe(offsets: Mapping[Partition, int]) -> str:
    return ", ".join(f"{tp} from offset {o}" for tp, o in offsets_json(offsets).items())


def old_start_offsets(settings: Settings, old_store: str) -> dict[Partition, int] | None:
    """The Kafka offsets the old store's query started from (its checkpoint's
    ``sources/0/0``); None when that store never read Kafka (no such file)."""
    from jobs.kafka.admin import parse_start_offsets

    path = join(settings.checkpoint_root, old_store, "sources", "0", "0")
    try:
        storage = storage_for(path)
        if not storage.exists(path):
            return None
        text = storage.read_text(path)
    except (StorageError, OSError) as exc:
        raise KafkaSetupError(f"cannot read the old store's start offsets {path}: {exc}",
                              "retention") from exc
    return parse_start_offsets(text, path)


def check_rebuild(settings: Settings, old_store: str, new_spec: Mapping[str, Any]
                  ) -> RetentionVerdict | None:
    """The verdict for rebuilding a store of ``new_spec`` after ``old_store``; None when the
    guard does not apply (the new version does not read Kafka, or the old store never did).

    Only the topics (with ``assign``, the partitions) the new version reads count: input the
    old store read and the new one does not is not replayed."""
    from jobs.kafka.admin import earliest_offsets

    source = new_spec.get("source") or {}
    if source.get("kind") != "kafka":
        return None
    first = old_start_offsets(settings, old_store)
    if not first:
        return None
    options = dict(source.get("options") or {})
    earliest = earliest_offsets(options)
    if "assign" in options:  # only the assigned partitions are replayed
        reads = {tp: o for tp, o in first.items() if tp in earliest}
    else:  # every partition of the topics: one that vanished is an error
        topics = {t for t, _ in earliest}
        reads = {tp: o for tp, o in first.items() if tp[0] in topics}
    return check_retention(reads, earliest)


def acceptance(events: list[Any], *, migration_id: int, to_version: int, from_store: str,
               to_store: str) -> Any | None:
    """The newest ``accept_partial_rebuild`` audit event (newest first in ``events``) that
    names this migration, or its version and stores."""
    for ev in events:
        data = ev.data or {}
        if data.get("migration_id") == migration_id or (
                ev.version == to_version and data.get("from_store") == from_store
                and data.get("to_store") == to_store):
            return ev
    return None


def acceptance_data(verdict: RetentionVerdict | None, **ids: Any) -> dict[str, Any]:
    """Audit data of an acceptance: what was known lost and complete-from when accepted."""
    data: dict[str, Any] = dict(ids)
    if verdict is not None:
        data["lost"] = {f"{t}[{p}]": [a, b] for (t, p), (a, b) in sorted(verdict.lost.items())}
        data["complete_from"] = offsets_json(verdict.complete_from)
    return data


def write_complete_from(output_root: str, verdict: RetentionVerdict, migration_id: int) -> str:
    """Record beside the new store's results from which offsets they are complete."""
    path = join(output_root, COMPLETE_FROM_FILE)
    storage_for(path).write_text(path, json.dumps({
        "migration_id": migration_id,
        "complete_from": offsets_json(verdict.complete_from),
        "lost": {f"{t}[{p}]": [a, b] for (t, p), (a, b) in sorted(verdict.lost.items())},
    }, indent=2, sort_keys=True) + "\n")
    return path


def accept(catalog: Any, actor: str, m: Any, how: str) -> None:
    """Record that ``actor`` accepts a partial rebuild for migration ``m`` (an audit row the
    guard looks for when the migration starts or is retried)."""
    catalog.record_audit(
        actor, ACCEPT_ACTION, job=m.job, version=m.to_version,
        message=f"migration {m.id}: partial rebuild accepted ({how}); the new results are "
                "complete only from the earliest retained offsets",
        data={"migration_id": m.id, "from_store": m.from_store, "to_store": m.to_store})
