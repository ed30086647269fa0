"""Replay-engine throughput: events/s and peak memory, vectorized vs general engine.

Data (numpy, in memory, seeded): N events over K keys arriving in order of processing time
across one hour; each event's time is its arrival minus an out-of-order delay (exponential,
mean 2 s; 1% are stragglers up to 5 minutes late). Events are fed as RecordBatches of B records
per arrival instant (processing time = arrival of the batch's last event), then end of input.
The watermark is bounded (delay 10 s, global scope); allowed lateness 30 s, so stragglers are
partly accepted late and partly dropped (late records are materialized too).

Each case is run in a fresh subprocess (so ``ru_maxrss`` is that case's own peak), which first
applies the engine processes' malloc settings as ``tidemark replay`` does
(``jobs.engine.allocator.tune_malloc``; ``TIDEMARK_MALLOC_TUNING=off`` measures glibc's
defaults instead):
- ``events_per_s`` end to end through the object API: ingest of every batch + end_of_input,
  including building the Pane / LateRecord objects (for the vectorized engine that is its
  columnar output plus ``to_panes()``; ``to_json: true`` rows also call ``to_json()`` on each
  emission), computed from the best of several runs of *process CPU time*
  (``time.process_time``): the machine is shared, and wall time under load measures the
  neighbours (``wall_seconds`` and the load average are recorded too);
- ``events_per_s_columnar`` (vectorized rows with ``to_json: false``): the same input through
  the vectorized engine's columnar API (``ingest_columns`` / ``end_of_input_columns``): the
  fired windows stay columns (``FinalPanes``: key codes, numpy window starts, watermarks and
  one array per aggregation), late records are objects. This is the engine's own product; the
  object number adds what a consumer that wants one ``Pane`` per window pays for building
  them. The two drives alternate within one process (same load), best of ``--repeats`` each
  (``cpu_seconds_columnar``, ``wall_seconds_columnar``, ``peak_traced_mb_columnar`` likewise);
- ``peak_rss_mb``: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the process after the run
  (includes the interpreter, numpy/pandas and the input data: ``baseline_rss_mb`` is the value
  measured just before the engine starts);
- ``peak_traced_mb``: ``tracemalloc`` peak during a second, untimed run (Python and numpy
  allocations made by the engine, input excluded).
Rows of engine ``kernels`` are the compiled session and sliding engines (``jobs.engine.kernels``,
``session_final``, ``session_count_triggers_retracting``, ``session_early_after``,
``session_final_key_scope`` (per-key watermarks), ``session_count_triggers_key_scope`` /
``session_count_triggers_key_idle`` (count triggers, retracting, per-key watermarks, without /
with idle advance), ``session_final_processing`` (the processing clock),
``sliding_final``, ``sliding_count_triggers_retracting``, ``sliding_early_after``,
``sliding_final_collect``, ``sliding_count_triggers_collect``,
``session_count_triggers_collect``, ``sliding_final_idle``,
``session_count_triggers_key_collect``, ``sliding_count_triggers_key_scope`` (per-key
watermarks), ``sliding_count_triggers_uniform_keys`` (uniform keys)), measured like the
vectorized rows: through the object API, and through the columnar API where the engine has one
(``ingest_columns``); its compiled code is loaded from numba's cache before the timed runs.
The general engine gets the same full input on the cases the vectorized engine runs (so the
two compare like for like); on the others its input is capped (``--general-cap``, reported as
``events``).

Run: ``.venv/bin/python benchmarks/replay_throughput.py`` (writes
``benchmarks/results/replay_throughput.json``); ``--events 100000`` for a quick run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from jobs.definition.model import (  # noqa: E402
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine.allocator import tune_malloc  # noqa: E402
from jobs.engine.engine import Engine  # noqa: E402
from jobs.engine.kernels import (  # noqa: E402
    SessionKernelEngine,
    SlidingKernelEngine,
    SlidingTriggerEngine,
)
from jobs.engine.kernels import qualifies as kernel_qualifies  # noqa: E402
from jobs.engine.records import RecordBatch  # noqa: E402
from jobs.engine.vectorized import VectorizedEngine, qualifies  # noqa: E402
from jobs.engine.vectorized.triggered import TriggeredEngine, qualifies_triggered  # noqa: E402

MIN = 60_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
RESULTS = Path(__file__).parent / "results" / "replay_throughput.json"

AGGS = (Aggregation("total", "sum", "v"), Aggregation("n", "count"))
OBJECT_AGGS = (Aggregation("n", "count"), Aggregation("first", "first", "v"),
               Aggregation("last", "last", "v"), Aggregation("items", "collect", "v"),
               Aggregation("distinct", "count_distinct", "v"))
"""The aggregations over any JSON value (``*_collect`` cases)."""


def definition(case: str) -> Definition:
    common: dict[str, Any] = {
        "name": f"bench_{case}", "key": "user", "event_time": "et",
        "watermark": Watermark(delay=10_000), "allowed_lateness": 30_000, "aggregations": AGGS,
    }
    if case == "tumbling_final":
        return Definition(window=Window("tumbling", size=15 * MIN), **common)
    if case == "tumbling_final_4aggs":
        return Definition(
            window=Window("tumbling", size=15 * MIN),
            **{**common, "aggregations": (*AGGS, Aggregation("lo", "min", "v"),
                                          Aggregation("avg", "mean", "v"))},
        )
    if case == "tumbling_final_processing":  # the processing clock: no delay, no lateness
        return Definition(window=Window("tumbling", size=15 * MIN), **{
            **common, "event_time": "processing", "watermark": Watermark(delay=0),
            "allowed_lateness": 0})
    if case == "tumbling_final_source":  # only end of input moves the watermark
        return Definition(window=Window("tumbling", size=15 * MIN), **{
            **common, "watermark": Watermark(strategy="source", delay=0)})
    if case in ("tumbling_final_key_scope", "tumbling_final_key_idle"):
        wm = Watermark(delay=10_000, scope="key", idle_advance=case.endswith("idle"))
        return Definition(window=Window("tumbling", size=15 * MIN),
                          **{**common, "watermark": wm})
    if case == "hopping_final":
        return Definition(window=Window("hopping", size=20 * MIN, step=5 * MIN), **common)
    if case in ("tumbling_final_collect", "hopping_final_collect"):
        window = (Window("tumbling", size=15 * MIN) if case.startswith("tumbling")
                  else Window("hopping", size=20 * MIN, step=5 * MIN))
        return Definition(window=window, **{**common, "aggregations": OBJECT_AGGS})
    if case == "global_final":
        return Definition(window=Window("global"), **common)
    if case == "session_final":
        return Definition(window=Window("session", gap=5 * MIN), **common)
    if case == "session_final_key_scope":
        return Definition(window=Window("session", gap=5 * MIN),
                          **{**common, "watermark": Watermark(delay=10_000, scope="key")})
    if case == "sliding_final":
        return Definition(window=Window("sliding", size=5 * MIN), **common)
    if case == "sliding_final_collect":
        return Definition(window=Window("sliding", size=5 * MIN),
                          **{**common, "aggregations": OBJECT_AGGS})
    if case == "sliding_final_key_scope":
        return Definition(window=Window("sliding", size=5 * MIN),
                          **{**common, "watermark": Watermark(delay=10_000, scope="key")})
    if case == "sliding_final_idle":  # idle advance of the one watermark between units
        return Definition(window=Window("sliding", size=5 * MIN),
                          **{**common, "watermark": Watermark(delay=10_000, idle_advance=True)})
    if case == "tumbling_early_late":
        return Definition(
            window=Window("tumbling", size=15 * MIN),
            trigger=Trigger(emit="custom", early=EarlyTrigger("after", duration=MIN),
                            on_time=True, late=LateTrigger("count", count=1)),
            **common,
        )
    counted = Trigger(emit="custom", early=EarlyTrigger("count", count=100), on_time=True,
                      late=LateTrigger("count", count=1))
    if case == "tumbling_count_triggers_retracting":
        return Definition(window=Window("tumbling", size=15 * MIN), trigger=counted,
                          accumulation="retracting", **common)
    if case == "hopping_count_triggers_retracting":
        return Definition(window=Window("hopping", size=20 * MIN, step=5 * MIN), trigger=counted,
                          accumulation="retracting", **common)
    if case == "tumbling_count_triggers_discarding":
        return Definition(window=Window("tumbling", size=15 * MIN), trigger=counted,
                          accumulation="discarding", **common)
    if case in ("tumbling_count_triggers_collect", "hopping_count_triggers_collect"):
        window = (Window("tumbling", size=15 * MIN) if case.startswith("tumbling")
                  else Window("hopping", size=20 * MIN, step=5 * MIN))
        return Definition(window=window, trigger=counted, accumulation="retracting",
                          **{**common, "aggregations": OBJECT_AGGS})
    if case == "tumbling_count_triggers_processing":  # the processing clock
        return Definition(window=Window("tumbling", size=15 * MIN), trigger=counted,
                          accumulation="retracting", **{
                              **common, "event_time": "processing",
                              "watermark": Watermark(delay=0), "allowed_lateness": 0})
    if case == "tumbling_count_triggers_idle":  # the clock also moves the watermark
        return Definition(window=Window("tumbling", size=15 * MIN), trigger=counted,
                          accumulation="retracting", **{
                              **common, "watermark": Watermark(delay=10_000, idle_advance=True)})
    if case == "tumbling_count_triggers_key_bounded":  # per-key watermarks (scope: key)
        return Definition(window=Window("tumbling", size=15 * MIN), trigger=counted,
                          accumulation="retracting", **{
                              **common, "watermark": Watermark(delay=10_000, scope="key")})
    if case == "tumbling_count_triggers_key_collect":  # ... with collect / count_distinct
        return Definition(window=Window("tumbling", size=15 * MIN), trigger=counted,
                          accumulation="retracting", **{
                              **common, "aggregations": OBJECT_AGGS,
                              "watermark": Watermark(delay=10_000, scope="key")})
    if case == "tumbling_count_triggers_source":  # only end of input moves the watermark
        return Definition(window=Window("tumbling", size=15 * MIN), trigger=counted,
                          accumulation="retracting", **{
                              **common, "watermark": Watermark(strategy="source", delay=0)})
    if case in ("sliding_count_triggers_retracting", "sliding_count_triggers_uniform_keys"):
        return Definition(window=Window("sliding", size=5 * MIN), trigger=counted,
                          accumulation="retracting", **common)
    if case == "sliding_count_triggers_collect":
        return Definition(window=Window("sliding", size=5 * MIN), trigger=counted,
                          accumulation="retracting", **{**common, "aggregations": OBJECT_AGGS})
    if case == "sliding_count_triggers_key_scope":  # per-key watermarks (scope: key)
        return Definition(window=Window("sliding", size=5 * MIN), trigger=counted,
                          accumulation="retracting", **{
                              **common, "watermark": Watermark(delay=10_000, scope="key")})
    if case == "session_count_triggers_retracting":
        return Definition(window=Window("session", gap=5 * MIN), trigger=counted,
                          accumulation="retracting", **common)
    if case == "session_count_triggers_collect":
        return Definition(window=Window("session", gap=5 * MIN), trigger=counted,
                          accumulation="retracting", **{**common, "aggregations": OBJECT_AGGS})
    if case == "session_count_triggers_key_collect":
        wm = Watermark(delay=10_000, scope="key")
        return Definition(window=Window("session", gap=5 * MIN), trigger=counted,
                          accumulation="retracting",
                          **{**common, "watermark": wm, "aggregations": OBJECT_AGGS})
    if case in ("session_count_triggers_key_scope", "session_count_triggers_key_idle"):
        wm = Watermark(delay=10_000, scope="key", idle_advance=case.endswith("idle"))
        return Definition(window=Window("session", gap=5 * MIN), trigger=counted,
                          accumulation="retracting", **{**common, "watermark": wm})
    if case == "session_final_processing":  # the processing clock: no delay, no lateness
        return Definition(window=Window("session", gap=5 * MIN), **{
            **common, "event_time": "processing", "watermark": Watermark(delay=0),
            "allowed_lateness": 0})
    if case == "session_early_after":
        return Definition(
            window=Window("session", gap=5 * MIN),
            trigger=Trigger(emit="custom", early=EarlyTrigger("after", duration=MIN),
                            on_time=True, late=LateTrigger("count", count=1)),
            **common,
        )
    if case == "sliding_early_after":  # processing-time early timers on sliding windows
        return Definition(
            window=Window("sliding", size=5 * MIN),
            trigger=Trigger(emit="custom", early=EarlyTrigger("after", duration=MIN),
                            on_time=True, late=LateTrigger("count", count=1)),
            **common,
        )
    if case == "tumbling_emit_current":
        return Definition(window=Window("tumbling", size=15 * MIN),
                          trigger=Trigger(emit="current"), **common)
    raise SystemExit(f"unknown case {case}")


CASES = [
    "tumbling_final", "tumbling_final_4aggs", "hopping_final", "global_final",
    "tumbling_final_collect", "hopping_final_collect",
    "tumbling_final_processing", "tumbling_final_key_scope", "tumbling_final_key_idle",
    "session_final", "sliding_final", "tumbling_early_late",
    # fixed windows with count triggers: the compiled TriggeredEngine
    "tumbling_count_triggers_retracting", "hopping_count_triggers_retracting",
    "tumbling_count_triggers_discarding", "tumbling_emit_current",
    "tumbling_count_triggers_collect", "hopping_count_triggers_collect",
    # ... on the processing clock, under a source watermark (the bench never moves it), with
    # idle advance
    "tumbling_count_triggers_processing", "tumbling_count_triggers_source",
    "tumbling_count_triggers_idle",
    # sessions with count triggers: the compiled session engine
    "session_count_triggers_retracting", "session_early_after",
    # sessions under per-key watermarks (scope: key): the compiled session engine
    "session_final_key_scope",
    # sessions with count triggers under per-key watermarks / idle advance, and on the
    # processing clock: the compiled session engine
    "session_count_triggers_key_scope", "session_count_triggers_key_idle",
    "session_final_processing",
    # sliding windows with count triggers: the compiled SlidingTriggerEngine
    "sliding_count_triggers_retracting",
    # sliding windows with a processing-time early trigger: the compiled SlidingTriggerEngine
    "sliding_early_after",
    # sliding windows with collect and count_distinct: the compiled SlidingKernelEngine
    "sliding_final_collect",
    # fixed windows, emit: final under a source watermark: the vectorized final engine
    "tumbling_final_source",
    # sliding windows under per-key watermarks (scope: key)
    "sliding_final_key_scope",
    # sliding windows with count triggers, collect and count_distinct: SlidingTriggerEngine
    "sliding_count_triggers_collect",
    # fixed windows with count triggers under per-key bounded watermarks: the TriggeredEngine
    "tumbling_count_triggers_key_bounded",
    # sessions with count triggers and collect / count_distinct: the compiled session engine
    "session_count_triggers_collect",
    # sliding windows, emit: final, idle advance of the one watermark: SlidingKernelEngine
    "sliding_final_idle",
    # fixed windows with count triggers, collect / count_distinct, per-key bounded watermarks
    "tumbling_count_triggers_key_collect",
    # sessions with count triggers and collect / count_distinct under per-key watermarks:
    # the compiled session engine
    "session_count_triggers_key_collect",
    # sliding windows with count triggers under per-key watermarks: SlidingTriggerEngine
    "sliding_count_triggers_key_scope",
    # the same on uniform keys (most keys cold, ~2 records per key and unit): SlidingTriggerEngine
    "sliding_count_triggers_uniform_keys",
]


def fast_engine(defn: Definition) -> Any:
    """The fast engine ``make_engine`` picks for ``defn`` (None: the general engine runs)."""
    if qualifies(defn):
        return VectorizedEngine
    if qualifies_triggered(defn):
        return TriggeredEngine
    return None


def make_data(n: int, n_keys: int, batch: int, key_kind: str, seed: int = 7,
              uniform: bool = False) -> list[RecordBatch]:
    rng = np.random.default_rng(seed)
    arrival = T0 + np.sort(rng.integers(0, 60 * MIN, n))
    delay = rng.exponential(2_000, n).astype(np.int64)
    straggler = rng.random(n) < 0.01
    delay[straggler] = rng.integers(0, 5 * MIN, int(straggler.sum()))
    et = arrival - delay
    # a few hot keys, a long tail (Zipf-like), as user ids usually are
    kid = (rng.zipf(1.3, n) - 1) % n_keys
    if uniform:  # every key as likely (cases ending in _uniform_keys)
        kid = rng.integers(0, n_keys, n)
    v = rng.integers(0, 1000, n)
    if key_kind == "str":
        names = np.array([f"user-{i:05d}" for i in range(n_keys)], dtype=object)
        keys_all: Any = names[kid]
    else:
        keys_all = kid.astype(np.int64)
    out = []
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        keys = keys_all[lo:hi].tolist()  # RecordBatch.keys is a list of JSON scalars
        col = v[lo:hi].copy()  # numpy column: the fast input; one per aggregation with `of`
        columns: dict[str, Any] = {"total": col, "lo": col, "avg": col, "first": col,
                                   "last": col, "items": col, "distinct": col}
        out.append(RecordBatch(
            keys=keys, event_times=et[lo:hi].copy(), columns=columns,
            processing_time=int(arrival[hi - 1]),
        ))
    return out


def drive_columns(engine: Any, batches: list[RecordBatch]) -> dict[str, int]:
    """The vectorized engine's columnar API: panes are counted, never built as objects."""
    counts = {"panes": 0, "late": 0}

    def take(out: Any) -> None:
        # ``before``: objects ahead of the columns (late lines, and under ``scope: key`` the
        # panes a unit's records fired between them)
        n_before_panes = sum(1 for e in out.before if e.type == "pane")
        counts["late"] += len(out.before) - n_before_panes + out.panes.late_count
        counts["panes"] += n_before_panes + out.panes.pane_count

    for b in batches:
        take(engine.ingest_columns(b))
    take(engine.end_of_input_columns())
    return counts


def drive(engine: Any, batches: list[RecordBatch], to_json: bool) -> dict[str, int]:
    counts = {"panes": 0, "late": 0}
    sink: list[Any] = []

    def take(ems: list[Any]) -> None:
        for e in ems:
            counts["panes" if e.type == "pane" else "late"] += 1
        if to_json:
            sink.extend(e.to_json() for e in ems)

    for b in batches:
        take(engine.ingest(b))
    take(engine.end_of_input())
    return counts


def run_case(case: str, engine_kind: str, n: int, n_keys: int, batch: int, key_kind: str,
             to_json: bool, repeats: int = 5) -> dict[str, Any]:
    defn = definition(case)
    batches = make_data(n, n_keys, batch, key_kind, uniform=case.endswith("_uniform_keys"))
    fast = fast_engine(defn)
    if engine_kind == "vectorized" and fast is None:
        return {"case": case, "engine": engine_kind, "skipped": "definition does not qualify"}
    if engine_kind == "kernels" and not kernel_qualifies(defn):
        return {"case": case, "engine": engine_kind, "skipped": "definition does not qualify"}
    kernel: Any = SessionKernelEngine
    if defn.window.type == "sliding":
        kernel = SlidingKernelEngine if defn.trigger.emit == "final" else SlidingTriggerEngine
    cls: Any = {"vectorized": fast, "kernels": kernel}.get(engine_kind, Engine)
    if engine_kind in ("kernels", "vectorized") and cls is not VectorizedEngine:
        cls(defn).ingest(batches[0])  # compiled code loaded (numba's cache) before timing
    gc.collect()
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    best = best_wall = None
    counts: dict[str, int] = {}
    repeats = repeats if engine_kind != "general" else 1
    columnar = hasattr(cls, "ingest_columns") and not to_json
    col_best = col_wall = float("inf")
    col_counts: dict[str, int] = {}
    for _ in range(repeats):
        if columnar:  # alternate with the object drive: both see the same load
            eng = cls(defn)
            t, w = time.process_time(), time.perf_counter()
            col_counts = drive_columns(eng, batches)
            col_best = min(col_best, time.process_time() - t)
            col_wall = min(col_wall, time.perf_counter() - w)
            del eng
        eng = cls(defn)
        t, w = time.process_time(), time.perf_counter()
        counts = drive(eng, batches, to_json)
        dt, dw = time.process_time() - t, time.perf_counter() - w
        best = dt if best is None else min(best, dt)
        best_wall = dw if best_wall is None else min(best_wall, dw)
    assert best is not None and best_wall is not None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    drive(cls(defn), batches, to_json)
    traced_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    extra: dict[str, Any] = {}
    if columnar:
        assert col_counts == counts, (col_counts, counts)
        tracemalloc.start()
        drive_columns(cls(defn), batches)
        col_traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        extra = {
            "events_per_s_columnar": round(n / col_best), "cpu_seconds_columnar": round(col_best, 4),
            "wall_seconds_columnar": round(col_wall, 4),
            "peak_traced_mb_columnar": round(col_traced / 2**20, 1),
        }
    return {
        "case": case, "engine": engine_kind, "engine_class": cls.__name__, "events": n, "keys": n_keys, "batch": batch,
        "key_type": key_kind, "to_json": to_json, "cpu_seconds": round(best, 4),
        "wall_seconds": round(best_wall, 4), "events_per_s": round(n / best),
        "load_avg_1m": round(os.getloadavg()[0], 2), "panes": counts["panes"], "late_records": counts["late"],
        "baseline_rss_mb": round(baseline / 1024, 1), "peak_rss_mb": round(peak / 1024, 1),
        "peak_traced_mb": round(traced_peak / 2**20, 1), "repeats_best_of": repeats, **extra,
    }


def markdown_table(doc: dict[str, Any]) -> str:
    """The results as the table in docs/performance.md."""
    lines = [
        "| case | engine | keys | to_json | events | events/s (CPU), columnar output "
        "| events/s (CPU), Pane objects | wall s (objects) | panes | late "
        "| peak RSS MB (baseline) | traced MB | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["results"]:
        if "skipped" in r:
            continue
        col = f"{r['events_per_s_columnar']:,}" if "events_per_s_columnar" in r else "-"
        lines.append(
            f"| {r['case']} | {r['engine']} | {r['key_type']} | {'yes' if r['to_json'] else 'no'} "
            f"| {r['events']:,} | {col} | {r['events_per_s']:,} | {r['wall_seconds']} "
            f"| {r['panes']:,} "
            f"| {r['late_records']:,} | {r['peak_rss_mb']} ({r['baseline_rss_mb']}) "
            f"| {r['peak_traced_mb']} | {r['load_avg_1m']} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--general-cap", type=int, default=200_000,
                    help="events given to the general engine on cases the vectorized engine "
                         "does not run (it is slow); qualifying cases get the full input")
    ap.add_argument("--one", nargs=5, metavar=("CASE", "ENGINE", "EVENTS", "KEYTYPE", "TOJSON"))
    ap.add_argument("--output", type=Path, default=RESULTS)
    ap.add_argument("--table", action="store_true", help="print the results as a markdown table")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of cases")
    ap.add_argument("--sliding-cap", type=int, default=20_000,
                    help="events for the general engine on sliding windows (slowest case)")
    ap.add_argument("--engines", default="vectorized,kernels,general", help="engines to run")
    ap.add_argument("--repeats", type=int, default=5,
                    help="runs of each vectorized case (the best CPU time counts; more runs "
                         "make the best one steadier on a loaded machine)")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of other cases already in --output")
    args = ap.parse_args()
    if args.table:
        print(markdown_table(json.loads(args.output.read_text())))
        return
    if args.one:
        case, kind, n, key_kind, tj = args.one
        tune_malloc()  # as `tidemark replay` does
        print(json.dumps(run_case(case, kind, int(n), args.keys, args.batch, key_kind, tj == "1",
                                  args.repeats)))
        return
    selected = [c for c in args.cases.split(",") if c]
    old_rows: list[dict[str, Any]] = []
    if args.append and args.output.exists():
        old_rows = [r for r in json.loads(args.output.read_text())["results"]
                    if r["case"] not in selected or r["engine"] not in args.engines]
    rows: list[dict[str, Any]] = []
    plan: list[tuple[str, str, int, str, str]] = []
    for case in selected:
        if fast_engine(definition(case)) is not None and "vectorized" in args.engines:
            for key_kind in ("str", "int"):
                for tj in ("0", "1"):
                    plan.append((case, "vectorized", args.events, key_kind, tj))
        if kernel_qualifies(definition(case)) and "kernels" in args.engines:
            # the compiled session / sliding engine (jobs.engine.kernels): object output only
            for key_kind in ("str", "int"):
                for tj in ("0", "1"):
                    plan.append((case, "kernels", args.events, key_kind, tj))
        cap = args.sliding_cap if case.startswith("sliding") else args.general_cap
        n_general = args.events if qualifies(definition(case)) else min(args.events, cap)
        if fast_engine(definition(case)) is TriggeredEngine:
            n_general = min(args.events, args.general_cap)
        if "general" in args.engines:
            plan.append((case, "general", n_general, "str", "0"))
    for case, kind, n, key_kind, tj in plan:
        cmd = [sys.executable, __file__, "--keys", str(args.keys), "--batch", str(args.batch),
               "--repeats", str(args.repeats), "--one", case, kind, str(n), key_kind, tj]
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = json.loads(res.stdout.strip().splitlines()[-1])
        print(json.dumps(row), flush=True)
        rows.append(row)
        write_results(args, old_rows + rows)  # after every case: a long run keeps what it has


def write_results(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    order = {c: i for i, c in enumerate(CASES)}
    engines = {"vectorized": 0, "kernels": 1}
    rows = sorted(rows, key=lambda r: (order.get(r["case"], 99), engines.get(r["engine"], 2)))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({
        "benchmark": "replay_throughput",
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "cpu": platform.processor() or platform.machine(), "cores_used": 1},
        "params": {"events": args.events, "keys": args.keys, "batch": args.batch,
                   "general_cap": args.general_cap, "sliding_cap": args.sliding_cap},
        "memory_note": "peak_rss_mb = resource.getrusage ru_maxrss (whole process, incl. input "
                       "data; baseline_rss_mb before the engine ran); peak_traced_mb = "
                       "tracemalloc peak of a separate untimed run",
        "results": rows,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
