"""Running one definition over the same arrival instants through replay and through Spark.

An input is a list of arrival instants ``(processing_time_ms, [record, ...])``. Replay reads
them as ``{"$processing_time": T}`` lines followed by the records, in its micro-batch mode
(``Arrival("batch")``: the records between two clock lines are one unit); Spark reads one landed file
per instant (one micro-batch each, ``maxFilesPerTrigger=1``), with the instant's time in an
``arrival`` column that the engine path's test mode takes as the batch's processing time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jobs.config import Settings
from jobs.definition import Definition, load_definition
from jobs.engine.arrival import Arrival
from jobs.replay import replay_lines
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import land

Instants = list[tuple[int, list[dict[str, Any]]]]


def definition(tmp: Path, spec: dict[str, Any], schema: str) -> Definition:
    full = {
        "name": "parity",
        "source": {"kind": "files", "path": str(tmp / "in"), "format": "json",
                   "schema": schema + ", arrival BIGINT"},
        **spec,
    }
    return load_definition(full)


def replay_output(defn: Definition, instants: Instants) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for t, records in instants:
        lines.append({"$processing_time": t})
        lines.extend(records)
    # each instant is one micro-batch of the job: replay mirrors it (docs/semantics.md)
    return list(replay_lines(defn, lines, eof_flush=False, arrival=Arrival("batch")))


def spark_run(spark: Any, tmp: Path, defn: Definition, instants: Instants, settings: Settings,
              force_engine: bool = False, buckets: int = 2) -> tuple[JobRunner, JobContext]:
    land(tmp / "in", [[{**r, "arrival": t} for r in recs] for t, recs in instants])
    ctx = JobContext.create(defn, settings, force_engine=force_engine)
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True, arrival_column="arrival",
                                              buckets=buckets))
    runner.run()
    return runner, ctx


def spark_panes(spark: Any, ctx: JobContext) -> list[dict[str, Any]]:
    from jobs.spark.sinks import pane_json

    if not Path(ctx.panes_path).exists():
        return []
    rows = spark.read.parquet(ctx.panes_path).collect()
    return [pane_json(r.asDict()) for r in rows]


def canon(panes: list[dict[str, Any]], drop: tuple[str, ...] = ()) -> list[str]:
    """Order-free comparison form: sorted canonical JSON, without the ``drop`` fields."""
    out = []
    for p in panes:
        if p.get("type", "pane") != "pane":
            continue
        q = {k: v for k, v in p.items() if k not in drop}
        q["type"] = "pane"
        out.append(json.dumps(q, sort_keys=True))
    return sorted(out)
