"""Which windows a record at event time ``t`` belongs to, as plain functions over the window
kinds' one implementation (``jobs.definition.windows``): tumbling and hopping windows by
:class:`~jobs.definition.windows.FixedStarts`, sliding (KIP-450) windows from the key's sorted
record times. Session windows are found by overlap in the engine (``jobs/engine/assign.py``).
"""

from __future__ import annotations

from jobs.definition.windows import FixedStarts
from jobs.definition.windows.sliding import (
    sliding_right_window_nonempty,
    sliding_starts_containing,
)


def tumbling_start(t: int, size: int, align_to: int) -> int:
    """start = align_to + floor((t - align_to) / size) * size (floor also below align_to)."""
    return FixedStarts(size, size, align_to).last_start(t)


def hopping_starts(t: int, size: int, step: int, align_to: int) -> list[int]:
    """Every start = align_to + k*step with start <= t < start + size, ascending."""
    return FixedStarts(size, step, align_to).starts(t)


__all__ = ["hopping_starts", "sliding_right_window_nonempty", "sliding_starts_containing",
           "tumbling_start"]
