"""Per micro-batch facts for the catalog: progress, snapshot, late counts, samples.

Built after a batch *commits* (from ``StreamingQuery.recentProgress``, the checkpoint's commit
log and the gate's side files), so a snapshot row is always a real recovery point. The catalog
call is idempotent per (store, batch id): a batch re-run after a crash is not counted twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from jobs.spark.context import JobContext
from jobs.spark.sinks import read_side
from jobs.storage.manifest import commit_watermark, read_batch_info, state_size_bytes
from jobs.timeutil import parse_instant

if TYPE_CHECKING:
    from jobs.catalog.ports import RuntimeCatalog

SAMPLE_LIMIT = 20


@dataclass
class BatchReport:
    batch_id: int
    input_rows: int
    rows_per_second: float
    duration_ms: int
    durations: dict[str, int]
    watermark: int | None
    state_rows: int
    state_bytes: int
    committed_at: datetime
    source_offsets: Any
    checkpoint: str
    panes: int = 0
    late_counts: list[dict[str, Any]] = field(default_factory=list)
    late_samples: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: int = 0
    dead_letter_samples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def late_accepted(self) -> int:
        return sum(int(c["accepted"]) for c in self.late_counts)

    @property
    def late_dropped(self) -> int:
        return sum(int(c["dropped"]) for c in self.late_counts)


class Reporter(Protocol):
    def report(self, batch: BatchReport) -> None: ...

    def known_batches(self) -> set[int]:
        """Batch ids already recorded for this store (to backfill what a crash lost)."""
        ...


WatermarkMap = Callable[[int], "int | None"]


def build_report(ctx: JobContext, progress: dict[str, Any], to_ours: WatermarkMap,
                 panes: int = 0, state_rows: int | None = None) -> BatchReport:
    """One committed batch's report from its Spark progress object. ``state_rows``: the
    state's rows as tidemark counted them (jobs/spark/state_rows.py); without it, the state
    operators' own ``numRowsTotal``."""
    bid = int(progress["batchId"])
    sparks_rows = 0
    state_bytes = 0
    for op in progress.get("stateOperators") or []:
        sparks_rows += max(int(op.get("numRowsTotal") or 0), 0)  # -1: RocksDB does not count
        custom = op.get("customMetrics") or {}
        state_bytes += int(custom.get("rocksdbSstFileSize") or op.get("memoryUsedBytes") or 0)
    if state_rows is None:
        state_rows = sparks_rows
    if not state_bytes:
        state_bytes = state_size_bytes(ctx.checkpoint)
    spark_wm = commit_watermark(ctx.checkpoint, bid)
    if spark_wm is None:
        spark_wm = read_batch_info(ctx.checkpoint, bid).watermark_ms
    watermark = to_ours(spark_wm)
    durations = {k: int(v) for k, v in (progress.get("durationMs") or {}).items()}
    ts = progress.get("timestamp")
    committed = datetime.fromtimestamp(parse_instant(ts) / 1000, tz=UTC) if ts else datetime.now(UTC)
    dead = read_side(ctx.output_root, "dead_letters", bid)
    late = read_side(ctx.output_root, "late", bid)
    counts = read_side(ctx.output_root, "late_counts", bid)
    merged: dict[tuple[str, Any, Any], dict[str, Any]] = {}
    for c in counts:
        k = (c["key"], c["window_start"], c["window_end"])
        m = merged.setdefault(k, {"key": c["key"], "window_start": c["window_start"],
                                  "window_end": c["window_end"], "accepted": 0, "dropped": 0})
        m["accepted"] += int(c["accepted"])
        m["dropped"] += int(c["dropped"])
    return BatchReport(
        batch_id=bid,
        input_rows=int(progress.get("numInputRows") or 0),
        rows_per_second=float(progress.get("processedRowsPerSecond") or 0.0),
        duration_ms=durations.get("triggerExecution", 0),
        durations=durations,
        watermark=watermark,
        state_rows=state_rows,
        state_bytes=state_bytes,
        committed_at=committed,
        source_offsets=[s.get("endOffset") for s in progress.get("sources") or []],
        checkpoint=ctx.checkpoint,
        panes=panes,
        late_counts=list(merged.values()),
        late_samples=late[-SAMPLE_LIMIT:],
        dead_letters=len(dead),
        dead_letter_samples=dead[-SAMPLE_LIMIT:],
    )


class CatalogReporter:
    """Sends reports to ``record_batch`` of the run ``run_id`` (the runtime's catalog port)."""

    def __init__(self, catalog: RuntimeCatalog, run_id: int) -> None:
        self.catalog = catalog
        self.run_id = run_id

    def known_batches(self) -> set[int]:
        run = self.catalog.run(self.run_id)
        snaps = self.catalog.snapshots(run.job, store=run.store, limit=1_000_000)
        return {s.batch_id for s in snaps}

    def report(self, batch: BatchReport) -> None:
        from jobs.catalog.records import (
            BatchProgress,
            BatchSnapshot,
            DeadLetterSample,
            LateCount,
            LateSample,
        )

        progress = BatchProgress(
            batch_id=batch.batch_id, input_rows=batch.input_rows,
            rows_per_second=batch.rows_per_second, duration_ms=batch.duration_ms,
            watermark=batch.watermark, state_rows=batch.state_rows,
            state_bytes=batch.state_bytes, late_accepted=batch.late_accepted,
            late_dropped=batch.late_dropped, dead_letters=batch.dead_letters,
        )
        snapshot = BatchSnapshot(
            batch_id=batch.batch_id, committed_at=batch.committed_at,
            watermark=batch.watermark, source_offsets=batch.source_offsets,
            state_bytes=batch.state_bytes, checkpoint_location=batch.checkpoint,
            state_rows=batch.state_rows,
        )
        counts = [
            LateCount(key=json.loads(c["key"]), window_start=c["window_start"],
                      window_end=c["window_end"], accepted=c["accepted"], dropped=c["dropped"])
            for c in batch.late_counts
        ]
        samples = [
            LateSample(key=json.loads(s["key"]), event_time=s.get("event_time"),
                       window_start=s.get("window_start"), window_end=s.get("window_end"),
                       reason=s["reason"], record=_maybe_json(s.get("record")))
            for s in batch.late_samples
        ]
        dead = [DeadLetterSample(reason=d["reason"], record=_maybe_json(d.get("record")))
                for d in batch.dead_letter_samples]
        self.catalog.record_batch(self.run_id, progress, snapshot, counts, samples, dead)


def _maybe_json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
