"""Which execution path a definition takes (pure: no pyspark).

``native``: Spark's own ``groupBy(window(...), key).agg(...)`` in append mode, behind the gate
(jobs/spark/gate.py). Chosen only where its final panes are provably the spec's: tumbling or
hopping windows, ``emit: final``, a bounded global watermark on an event-time column with finite
delay and allowed lateness, and aggregations Spark computes exactly as the engine does (count,
sum, min, max, mean; not first/last/collect, whose tie-break is arrival order, nor
count_distinct, which Spark cannot do in a streaming aggregation).

``engine``: everything else, the pure engine hosted in Spark's state store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from jobs.definition.model import INFINITE, Definition

NATIVE_FNS = frozenset({"count", "sum", "min", "max", "mean"})
SHIFT_FLOOR = 2**41
"""Event times are shifted by at least this much (~70 years) inside the native query, so that
Spark's watermark, which starts at 0 and never goes below it, is positive as soon as one event
arrived; 0 can then only mean "no watermark yet"."""


@dataclass(frozen=True)
class ExecutionPlan:
    path: Literal["native", "engine"]
    reasons: tuple[str, ...]
    """Why not native (empty for native)."""

    @property
    def native(self) -> bool:
        return self.path == "native"


def choose_plan(defn: Definition) -> ExecutionPlan:
    reasons: list[str] = []
    w = defn.window
    if w.type not in ("tumbling", "hopping"):
        reasons.append(f"window.type {w.type} (native: tumbling, hopping)")
    if defn.trigger.emit != "final":
        reasons.append(f"trigger.emit {defn.trigger.emit} (native: final)")
    wm = defn.watermark
    if wm.strategy != "bounded" or wm.scope != "global" or wm.idle_advance:
        reasons.append("watermark (native: bounded, global scope, no idle advance)")
    if defn.uses_processing_time:
        reasons.append("processing-time clock")
    if wm.delay >= INFINITE or defn.allowed_lateness >= INFINITE:
        reasons.append("infinite delay or allowed lateness")
    for agg in defn.aggregations:
        if agg.fn not in NATIVE_FNS:
            reasons.append(f"aggregation {agg.name}: {agg.fn}")
    return ExecutionPlan("engine" if reasons else "native", tuple(reasons))


def shift_for(step: int) -> int:
    """The smallest multiple of ``step`` >= SHIFT_FLOOR (a multiple, so windows stay aligned)."""
    return -(-SHIFT_FLOOR // step) * step


def window_step(defn: Definition) -> tuple[int, int]:
    """(size, step) of a tumbling or hopping window."""
    w = defn.window
    assert w.size is not None
    return w.size, (w.step if w.type == "hopping" and w.step is not None else w.size)
