"""One micro-batch's catalog write, independent of the database: who it belongs to, what it
holds, the late-count rows it upserts and the bind conversions of the columns' types.

The SQLite and PostgreSQL writers (``batch_sqlite``, ``batch_postgres``) write exactly this;
:class:`~jobs.catalog.batch_write.BatchWriter` picks one and holds the connection.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Dialect

from jobs.catalog.base import key_json
from jobs.catalog.records import (
    BatchProgress,
    BatchSnapshot,
    DeadLetterSample,
    LateCount,
    LateSample,
)

PRUNE_EVERY = 8
"""Samples are pruned every 8th batch (fewer statements on the other batches); reads
return at most ``sample_limit`` rows, so callers always see exactly the newest N."""


@dataclass(frozen=True, slots=True)
class BatchTarget:
    """Who a batch belongs to (immutable per run, cached by the service)."""

    run_id: int
    job_id: int
    store: str
    version: int


@dataclass(frozen=True, slots=True)
class BatchInput:
    """One micro-batch as ``record_batch`` received it, plus when it was recorded."""

    target: BatchTarget
    now: datetime
    progress: BatchProgress
    snapshot: BatchSnapshot
    late_counts: Sequence[LateCount]
    late_samples: Sequence[LateSample]
    dead_letter_samples: Sequence[DeadLetterSample]
    sample_limit: int


def late_rows(late_counts: Sequence[LateCount]) -> list[list[Any]]:
    """``[slot, key_json, start, end, accepted, dropped]``, one row per window (counts of the
    same window summed): PostgreSQL refuses an upsert that touches a row twice, and one row
    per window is less work. ``slot`` is :func:`jobs.catalog.base.slot_of` (inlined: this loop
    runs for every late window of every batch)."""
    rows: dict[str, list[Any]] = {}
    texts: dict[tuple[type, Any], str] = {}  # 1, 1.0 and True are equal keys in a dict
    for c in late_counts:
        k = c.key
        kt = texts.get((k.__class__, k))
        if kt is None:
            kt = texts[(k.__class__, k)] = key_json(k)
        s = c.window_start
        e = c.window_end
        slot = f"[{'null' if e is None else int(e)},{'null' if s is None else int(s)},{kt}]"
        row = rows.get(slot)
        if row is None:
            rows[slot] = [slot, kt, s, e, c.accepted, c.dropped]
        else:
            row[4] += c.accepted
            row[5] += c.dropped
    return list(rows.values())


@dataclass(frozen=True, slots=True)
class Converters:
    """Bind conversions of the columns' own types, resolved once per dialect."""

    timestamp: Callable[[Any], Any]
    json: Callable[[Any], Any]

    @classmethod
    def for_dialect(cls, dialect: Dialect) -> Converters:
        from sqlalchemy import JSON

        from jobs.catalog.types import UTCDateTime

        ts = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
        serializer = getattr(dialect, "_json_serializer", None) or json.dumps
        if dialect.name == "sqlite":
            js = JSON().dialect_impl(dialect).bind_processor(dialect)
        else:
            js = None

        def ident(v: Any) -> Any:
            return v

        return cls(
            timestamp=ts or ident,
            json=js or (lambda v: serializer(v)),
        )
