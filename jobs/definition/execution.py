"""Which kind of state a definition needs on Spark: Spark's own aggregation or the engine's.

Pure (no pyspark): the store name depends on it (``jobs/definition/store.py``), and so do the
UI's "keeps the store / needs a migration" and the catalog's activation, which must not import
Spark.

``native``: Spark's own ``groupBy(window(...), key).agg(...)`` in append mode, behind the gate
(jobs/spark/gate.py). Chosen only where its final panes are provably those of docs/semantics.md:
tumbling or hopping windows, ``emit: final``, a bounded global watermark on an event-time
column with finite delay and allowed lateness, and aggregations Spark computes exactly as the
engine does (count, sum, min, max, mean; not first/last/collect, whose tie-break is arrival
order, nor count_distinct, which Spark cannot do in a streaming aggregation).

``engine``: everything else, the pure engine hosted in Spark's state store.

The two keep different state in the checkpoint (Spark's aggregation buffers per window and key,
or the engine's snapshots per bucket), and Spark refuses to run one query's operators on the
other's checkpoint (``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``). So the path is
state-shaping: a change that moves a definition from one path to the other (``emit: final`` to
early firings, finite to infinite delay, turning idle advance on) needs a new store.

Within the engine path, the **clock** (:func:`needs_clock`) is state-shaping for the same
reason: a definition with anything that moves with processing time alone runs Spark's stateful
operator in ``ProcessingTime`` mode (every bucket woken at every trigger, so a window closes and
an ``after`` trigger fires on the wall clock without new records); the others in ``EventTime``
mode. Spark keeps the mode in the checkpoint and will not restart it in the other one, and an
``EventTime`` checkpoint cannot fire ``after``/``every`` triggers or idle advance on time. So
``early {count}`` -> ``early {after}`` is a new store, while a cadence change within one kind
(``after: 30s`` -> ``after: 1m``, ``count: 2`` -> ``count: 5``) keeps it.
"""

from __future__ import annotations

from typing import Literal

from jobs.definition.model import INFINITE, Definition
from jobs.definition.trigger import effective_trigger
from jobs.definition.windows import KINDS, kind_class

ExecutionPath = Literal["native", "engine"]
SparkStateKind = Literal["native", "engine", "engine+clock"]
"""What a checkpoint holds on Spark: Spark's aggregation, the engine woken by records and
watermark advances (``EventTime`` mode), or the engine woken by the clock (``ProcessingTime``)."""

NATIVE_FNS = frozenset({"count", "sum", "min", "max", "mean"})


def native_reasons(defn: Definition) -> tuple[str, ...]:
    """Why the definition cannot run on Spark's native aggregation (empty: it can)."""
    reasons: list[str] = []
    if not kind_class(defn.window.type).spark_native:
        native = ", ".join(t for t, k in KINDS.items() if k.spark_native)
        reasons.append(f"window.type {defn.window.type} (native: {native})")
    trigger = effective_trigger(defn)
    if not trigger.at_expiry:  # Spark's append mode emits each window once, at expiry
        reasons.append(f"trigger.emit {trigger.emit} (native: final)")
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
    return tuple(reasons)


def execution_path(defn: Definition) -> ExecutionPath:
    return "engine" if native_reasons(defn) else "native"


def needs_clock(defn: Definition) -> bool:
    """Whether the definition has anything that moves with processing time alone: the
    processing clock, idle advance, or a processing-time trigger (``early {after|every}``,
    ``late {after}``). Such a job must be woken by the clock, not only by records and
    watermark advances: on Spark it runs in the ``ProcessingTime`` time mode."""
    return (defn.uses_processing_time or defn.watermark.idle_advance
            or effective_trigger(defn).needs_clock)


def spark_state_kind(defn: Definition) -> SparkStateKind:
    """The kind of state the definition's checkpoint holds on Spark (state-shaping)."""
    if execution_path(defn) == "native":
        return "native"
    return "engine+clock" if needs_clock(defn) else "engine"
