"""The trigger as the engine runs it: ``emit: final|current`` expanded into parts.

``jobs.definition.trigger.effective_trigger`` is the definition package's expansion (for the
UI and docs); the engine keeps its own small plan because it needs one thing the parts cannot
express: ``final`` holds the single ON_TIME pane back until the window *expires*, so late
records within the allowed lateness are still included (Quix ``.final()`` with grace, Spark
append mode).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.definition.model import Definition, EarlyTrigger, LateTrigger


@dataclass(frozen=True, slots=True)
class TriggerPlan:
    early: EarlyTrigger | None
    on_time: bool
    late: LateTrigger | None
    final: bool
    """One ON_TIME, is_last pane per window, at expiry; no other pane."""


def trigger_plan(defn: Definition) -> TriggerPlan:
    t = defn.trigger
    if t.emit == "final":
        return TriggerPlan(early=None, on_time=False, late=None, final=True)
    if t.emit == "current":
        return TriggerPlan(
            early=EarlyTrigger(kind="count", count=1),
            on_time=False,
            late=LateTrigger(kind="count", count=1),
            final=False,
        )
    late = t.late
    if late is None and defn.allowed_lateness > 0:
        # spec: late {count: 1} is the default while allowed_lateness > 0
        late = LateTrigger(kind="count", count=1)
    return TriggerPlan(early=t.early, on_time=t.on_time, late=late, final=False)


def next_boundary(now: int, every: int, align_to: int) -> int:
    """The first processing-time boundary ``align_to + k*every`` strictly after ``now``."""
    return align_to + ((now - align_to) // every + 1) * every
