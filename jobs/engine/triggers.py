"""The processing-time boundaries of ``early {every}``. The trigger the engine runs is the
definition package's one model, :class:`~jobs.definition.trigger.EffectiveTrigger`, so the UI,
the docs, the store and the engine agree."""

from __future__ import annotations


def next_boundary(now: int, every: int, align_to: int) -> int:
    """The first processing-time boundary ``align_to + k*every`` strictly after ``now``."""
    return align_to + ((now - align_to) // every + 1) * every


__all__ = ["next_boundary"]
