"""Expanding the trigger shorthands into the parts the engine runs.

The definition keeps the trigger as written (``emit: final``) so that the canonical form and
diffs show what the user chose; the engine and the Spark runtime need the expansion, which the
spec fixes:

* ``final``: one ON_TIME pane per window, fired when the window *expires* (watermark >= end +
  allowed_lateness), so records accepted late are included; no early, no late panes;
* ``current``: an EARLY pane per element (``early {count: 1}``), a LATE pane per late element
  (``late {count: 1}``), no on-time pane;
* ``custom``: the parts as written (``late`` defaulted to ``{count: 1}`` by the parser when
  allowed_lateness > 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.definition.model import Definition, EarlyTrigger, EmitMode, LateTrigger


@dataclass(frozen=True, slots=True)
class EffectiveTrigger:
    emit: EmitMode
    early: EarlyTrigger | None
    on_time: bool
    """Fire an ON_TIME pane when the watermark passes the window end (even if empty)."""
    late: LateTrigger | None
    fires_at_expiry_only: bool
    """``emit: final``: the only pane is the ON_TIME one, fired at expiry rather than at the
    window end (with allowed_lateness 0 the two coincide)."""


def effective_trigger(defn: Definition) -> EffectiveTrigger:
    t = defn.trigger
    if t.emit == "final":
        return EffectiveTrigger("final", None, True, None, fires_at_expiry_only=True)
    if t.emit == "current":
        return EffectiveTrigger(
            "current", EarlyTrigger(kind="count", count=1), False,
            LateTrigger(kind="count", count=1), fires_at_expiry_only=False,
        )
    return EffectiveTrigger("custom", t.early, t.on_time, t.late, fires_at_expiry_only=False)
