"""Which execution path a definition takes (pure: no pyspark).

The choice itself lives in ``jobs/definition/execution.py`` because it is state-shaping (the
store name depends on it); this module adds what the Spark runtime needs around it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from jobs.definition.execution import NATIVE_FNS, native_reasons
from jobs.definition.model import Definition
from jobs.definition.windows import Hopping, Tumbling, window_kind

__all__ = ["NATIVE_FNS", "SHIFT_FLOOR", "ExecutionPlan", "choose_plan", "shift_for", "window_step"]

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
    reasons = native_reasons(defn)
    return ExecutionPlan("engine" if reasons else "native", reasons)


def shift_for(step: int) -> int:
    """The smallest multiple of ``step`` >= SHIFT_FLOOR (a multiple, so windows stay aligned)."""
    return -(-SHIFT_FLOOR // step) * step


def window_step(defn: Definition) -> tuple[int, int]:
    """(size, step) of a tumbling or hopping window (the kind's window starts)."""
    kind = window_kind(defn.window)
    if not isinstance(kind, Tumbling | Hopping):
        raise ValueError(f"window.type: {kind.type} windows do not run natively on Spark")
    return kind.starts.size_ms, kind.starts.step_ms
