"""The trigger as the engine runs it: ``emit: final|current`` expanded into parts.

The expansion itself is the definition package's (``effective_trigger``, so the UI, the docs
and the engine agree); the plan only restates ``final`` in the engine's terms: no firing when
the watermark passes the window end, one ON_TIME ``is_last`` pane when the window *expires*,
so records accepted within the allowed lateness are included (Quix ``.final()`` with grace,
Spark append mode). The ``late {count: 1}`` default of custom triggers is the parser's.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.definition.model import Definition, EarlyTrigger, LateTrigger
from jobs.definition.trigger import effective_trigger


@dataclass(frozen=True, slots=True)
class TriggerPlan:
    early: EarlyTrigger | None
    on_time: bool
    late: LateTrigger | None
    final: bool
    """One ON_TIME, is_last pane per window, at expiry; no other pane."""


def trigger_plan(defn: Definition) -> TriggerPlan:
    """The definition package's expansion (``effective_trigger``), in the engine's terms: a
    ``final`` trigger has no on-time firing at the window end, only its pane at expiry."""
    eff = effective_trigger(defn)
    if eff.fires_at_expiry_only:
        return TriggerPlan(early=None, on_time=False, late=None, final=True)
    return TriggerPlan(early=eff.early, on_time=eff.on_time, late=eff.late, final=False)


def next_boundary(now: int, every: int, align_to: int) -> int:
    """The first processing-time boundary ``align_to + k*every`` strictly after ``now``."""
    return align_to + ((now - align_to) // every + 1) * every
