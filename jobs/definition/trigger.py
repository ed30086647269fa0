"""The trigger as it runs: one typed model for the engine, the Spark runtime and the store.

The definition keeps the trigger as written (``model.Trigger``, ``emit: final``) only so that
canonical JSON and diffs show what the user chose; everything that runs a definition reads
:func:`effective_trigger` instead, whose expansion docs/semantics.md fixes:

* ``final``: no early and no late panes, no pane when the watermark passes the window end;
  one ON_TIME pane per window when the window *expires* (watermark >= end +
  allowed_lateness), so records accepted late are included (Quix ``.final()`` with grace,
  Spark append mode); with allowed_lateness 0 expiry and end coincide;
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
    """What fires a window's panes, with one meaning per field whatever ``emit`` was."""

    emit: EmitMode
    """As written (for messages and the UI; the fields below say what fires)."""
    early: EarlyTrigger | None
    """EARLY panes before the window end (count of pending elements, or processing time)."""
    at_window_end: bool
    """An ON_TIME pane when the watermark passes the window end, even if empty (``custom``
    with ``on_time: true``)."""
    late: LateTrigger | None
    """LATE panes for records accepted after the window end."""
    at_expiry: bool
    """``final``: the window's one pane, ON_TIME and last, fired when it expires."""

    @property
    def needs_clock(self) -> bool:
        """A part fires on processing time (``early {after|every}``, ``late {after}``): the
        host must wake the engine on the clock, not only on records and watermarks."""
        return ((self.early is not None and self.early.kind in ("after", "every"))
                or (self.late is not None and self.late.kind == "after"))

    @property
    def fires_on_count(self) -> bool:
        """A part fires on a count of elements, so a pane can fire between two records of a
        key within one arrival unit."""
        return any(p is not None and p.kind == "count" for p in (self.early, self.late))

    @property
    def has_on_time_pane(self) -> bool:
        """Some pane of a window is ON_TIME (at its end or, for ``final``, at expiry)."""
        return self.at_window_end or self.at_expiry


FINAL = EffectiveTrigger("final", None, at_window_end=False, late=None, at_expiry=True)
CURRENT = EffectiveTrigger("current", EarlyTrigger(kind="count", count=1), at_window_end=False,
                           late=LateTrigger(kind="count", count=1), at_expiry=False)


def effective_trigger(defn: Definition) -> EffectiveTrigger:
    """The definition's trigger as it runs (see the module docstring)."""
    t = defn.trigger
    if t.emit == "final":
        return FINAL
    if t.emit == "current":
        return CURRENT
    return EffectiveTrigger("custom", t.early, at_window_end=t.on_time, late=t.late,
                            at_expiry=False)
