"""The trigger as the engine runs it (the definition package's one model,
:class:`~jobs.definition.trigger.EffectiveTrigger`, so the UI, the docs, the store and the
engine agree), and the processing-time boundaries of ``early {every}``."""

from __future__ import annotations

from jobs.definition.trigger import EffectiveTrigger, effective_trigger

TriggerPlan = EffectiveTrigger
"""The engine's name for the trigger model."""
trigger_plan = effective_trigger


def next_boundary(now: int, every: int, align_to: int) -> int:
    """The first processing-time boundary ``align_to + k*every`` strictly after ``now``."""
    return align_to + ((now - align_to) // every + 1) * every


__all__ = ["TriggerPlan", "next_boundary", "trigger_plan"]
