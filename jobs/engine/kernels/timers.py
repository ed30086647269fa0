"""The due times of processing-time trigger parts, shared by the kernel engines that keep
timers as an int64 column (sessions and sliding windows)."""

from __future__ import annotations

from jobs.definition.model import EarlyTrigger, LateTrigger
from jobs.engine.triggers import next_boundary


def timer_due_times(now: int, early: EarlyTrigger | None, late: LateTrigger | None,
                    never: int) -> tuple[int, int]:
    """The due times an early / a late timer started at ``now`` gets, as the general engine's
    ``Firing._fire_window`` sets them; ``never`` for a part that is not processing-time based.
    A due time beyond int64 is clamped below ``never`` (it never comes, but stays a timer)."""
    ev = lv = never
    if early is not None and early.kind == "after":
        ev = now + (early.duration or 0)
    elif early is not None and early.kind == "every":
        ev = next_boundary(now, early.duration or 0, early.align_to)
    if late is not None and late.kind == "after":
        lv = now + (late.duration or 0)
    if ev != never:
        ev = min(ev, never - 1)
    if lv != never:
        lv = min(lv, never - 1)
    return ev, lv
