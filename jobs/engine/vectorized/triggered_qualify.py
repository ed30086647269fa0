"""Which definitions the compiled triggered engine runs exactly, each refusal naming the field."""

from __future__ import annotations

from typing import Any

from jobs.definition.model import Definition
from jobs.definition.trigger import effective_trigger
from jobs.definition.windows import kind_class
from jobs.engine.vectorized import trigger_kernels

K: Any = trigger_kernels
TRIGGERED_FNS = {"count": None, "sum": K.F_SUM, "mean": K.F_MEAN, "min": K.F_MIN,
                 "max": K.F_MAX, "first": K.F_FIRST, "last": K.F_LAST,
                 "collect": K.F_COUNT, "count_distinct": K.F_COUNT}
"""Aggregation functions the engine runs, with their kernel codes (count has two).
``collect`` / ``count_distinct`` are held in the side table of :mod:`triggered_side`; the
kernels keep a non-null count in their column, which the side table's values replace."""
SIDE_FNS = ("collect", "count_distinct")


def triggered_problems(defn: Definition) -> list[str]:
    """Why :class:`TriggeredEngine` cannot run ``defn`` exactly (empty when it can), each
    naming the field. The watermark is one for all keys (bounded with or without idle
    advance, a source's, or the processing clock of ``event_time: processing``) or, under
    ``scope: key`` with ``strategy: bounded``, one per key (:mod:`triggered_key`; ``scope:
    key`` under a source's watermark or the processing clock is the one watermark, as in the
    general engine)."""
    problems: list[str] = []
    if not kind_class(defn.window.type).fixed_by_arithmetic:
        problems.append(f"window.type: {defn.window.type} is not run by the triggered engine")
    eff = effective_trigger(defn)
    if eff.at_expiry:
        problems.append("trigger.emit: final is the final-pane engine's")
    for a in defn.aggregations:
        if a.fn not in TRIGGERED_FNS:
            problems.append(f"aggregations.{a.name}: fn {a.fn} is not compiled")
    return problems


def qualifies_triggered(defn: Definition) -> bool:
    """Whether ``make_engine`` picks :class:`TriggeredEngine` for ``defn``."""
    return not triggered_problems(defn)

