"""Reading a job's state store at a snapshot (``tidemark state JOB [--batch N]``).

Through Spark's State Data Source (``format("statestore")``), so what is shown is exactly what a
restart from that batch would resume with:
- native path: one state row per open (window, key) group with Spark's partial aggregates;
- engine path: one blob per bucket (ValueState ``engine``), decoded into the engine's state and
  listed with ``open_windows()`` (bounds, elements, panes emitted, current values).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from jobs.spark.context import JobContext
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.key_layout import read_key_layout
from jobs.spark.plan import shift_for, window_step
from jobs.storage.manifest import committed_batches

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def open_windows(spark: SparkSession, ctx: JobContext, batch_id: int | None = None
                 ) -> tuple[int, list[dict[str, Any]]]:
    """(batch id read, open windows as dicts sorted by key and start)."""
    batches = committed_batches(ctx.checkpoint)
    if not batches:
        raise SparkRuntimeError(f"no committed batch in {ctx.checkpoint}", "batch")
    bid = batches[-1] if batch_id is None else batch_id
    if bid not in batches:
        raise SparkRuntimeError(
            f"batch {bid} is not committed (committed: {batches[0]}..{batches[-1]})", "batch")
    reader = spark.read.format("statestore").option("batchId", bid)
    if ctx.plan.native:
        return bid, _native_windows(reader.load(ctx.checkpoint).collect(), ctx)
    from jobs.spark.engine_path.config import STATE_NAME

    rows = reader.option("stateVarName", STATE_NAME).load(ctx.checkpoint).collect()
    return bid, _engine_windows(rows, ctx)


def _native_windows(rows: list[Any], ctx: JobContext) -> list[dict[str, Any]]:
    from jobs.timeutil import datetime_to_ms

    _size, step = window_step(ctx.defn)
    shift = shift_for(step)
    raw = read_key_layout(ctx.checkpoint) == "raw"
    out = []
    for r in rows:
        key = r["key"].asDict(recursive=True)
        w = key["__w"]
        value = r["value"].asDict(recursive=True) if r["value"] is not None else {}
        out.append({
            "key": key["__key"] if raw else json.loads(key["__key"]),
            "window_start": datetime_to_ms(w["start"]) - shift,
            "window_end": datetime_to_ms(w["end"]) - shift,
            "partial": {k: v for k, v in value.items()},
        })
    return sorted(out, key=lambda d: (json.dumps(d["key"]), d["window_start"]))


def _engine_windows(rows: list[Any], ctx: JobContext) -> list[dict[str, Any]]:
    from jobs.spark.engine_path.config import engine_mode
    from jobs.spark.engine_path.state_blob import restore_engine

    mode = engine_mode(ctx.defn)
    out: list[dict[str, Any]] = []
    for r in rows:
        value = r["value"]
        blob = value["blob"] if value is not None else None
        if blob is None:
            continue
        out.extend(restore_engine(ctx.defn, bytes(blob), mode).open_windows())
    return sorted(out, key=lambda d: (json.dumps(d["key"]), d.get("window_start") or 0))
