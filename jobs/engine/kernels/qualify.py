"""Which definitions the compiled session/sliding engines run, and why the others do not.

The kernels are exact where a window's whole life is "collect, then emit once at expiry" and
nothing fires between the records of an arrival unit: ``emit: final`` (accumulation mode cannot
matter: the single pane is the cumulative one; session windows also take any trigger: their
count triggers run inside the kernel pass, their processing-time timers are an array the
clock scans), an event-time watermark (one for all keys, with or without idle advance; per
key for sessions and sliding windows, below; sessions and sliding windows also run on
the processing clock, whose watermark is the clock; ``scope: key`` under a source's watermark
or the processing clock is that one watermark, as in the general engine), and aggregates
whose accumulators are numbers or one input each (count, sum, min, max, mean, first, last;
for sliding and session windows also collect and count_distinct). Session
windows also take per-key watermarks and idle advance, with any trigger: a record's move of
its key's watermark fires that key's on-time and expiry panes right after the record's own
count pane, inside the same kernel pass (a processing-time tick moving idle watermarks is one
more pass). Sliding windows on event time take per-key watermarks, with or without idle
advance (final: :mod:`.sliding_key`, the watermark each record meets is computed per record
for the kernel pass; with triggers: :mod:`.sliding_key_triggers`, a record's raise fires its
key's panes inside the pass). Sliding windows also run with any trigger under one watermark
(``emit: current``; ``custom`` with count or processing-time parts; any accumulation mode):
each window keeps accumulators that a record updates inside the kernel pass, each record's
count panes fire right after it, and processing-time timers are a column of the windows'
array that the clock scans (:mod:`.sliding_triggers`, which also runs ``emit: final`` on the
processing clock). Anything else runs on the general engine.
"""

from __future__ import annotations

from jobs.definition.model import Definition
from jobs.definition.windows import Session, Sliding, WindowKind, kind_class

KERNEL_WINDOWS: tuple[type[WindowKind], ...] = (Session, Sliding)
KERNEL_FNS = frozenset({"count", "sum", "min", "max", "mean", "first", "last"})
SESSION_SIDE_FNS = frozenset({"collect", "count_distinct"})
"""Also run by the session kernel engine, any trigger, accumulation mode and watermark scope
(entries beside the arrays, :mod:`.session_side`)."""
SLIDING_SIDE_FNS = frozenset({"collect", "count_distinct"})
"""Also run by the sliding kernel engines, any trigger and clock (read from the held records:
:mod:`.sliding_side`, :mod:`.sliding_trigger_side`)."""


def qualification_problems(defn: Definition) -> list[str]:
    """Why the kernel engines cannot run ``defn`` (empty when they can), each naming the
    field."""
    problems: list[str] = []
    kind = kind_class(defn.window.type)
    if not issubclass(kind, KERNEL_WINDOWS):
        problems.append(f"window.type: {defn.window.type} has no kernel engine")
    if defn.trigger.emit != "final" and kind not in (Session, Sliding):
        problems.append(f"trigger.emit: {defn.trigger.emit} has no kernel engine (final only)")
    if defn.uses_processing_time and kind not in (Session, Sliding):
        problems.append("event_time: the processing clock has no kernel engine (session and "
                        "sliding windows only)")
    if defn.watermark.strategy not in ("bounded", "source"):
        problems.append(f"watermark.strategy: {defn.watermark.strategy} has no kernel engine")
    # per-key watermarks (the general engine keeps one per key only when bounded, on event
    # time: else scope: key is the one watermark): session and sliding windows, with or
    # without idle advance (under one watermark, any sliding window)
    key_scope = (defn.watermark.scope == "key" and defn.watermark.strategy == "bounded"
                 and not defn.uses_processing_time)
    keyed_kinds = kind is Session or kind is Sliding
    if defn.watermark.idle_advance and key_scope and not keyed_kinds:
        problems.append("watermark.idle_advance: no kernel engine under watermark.scope: key "
                        "(session and sliding windows)")
    if key_scope and not keyed_kinds:
        problems.append(f"watermark.scope: {defn.watermark.scope} has no kernel engine "
                        "(session and sliding windows)")
    if kind is Session and (defn.window.gap or 0) > 2**60:
        problems.append("window.gap: beyond 2**60 ms")
    if kind is Sliding and (defn.window.size or 0) > 2**60:
        problems.append("window.size: beyond 2**60 ms")
    for a in defn.aggregations:
        if a.fn in SESSION_SIDE_FNS and kind is Session:
            continue
        if a.fn in SLIDING_SIDE_FNS and kind is Sliding:
            continue
        if a.fn not in KERNEL_FNS:
            problems.append(f"aggregations.{a.name}: fn {a.fn} has no kernel engine")
    return problems


def qualifies(defn: Definition) -> bool:
    """Whether ``make_engine`` picks a kernel engine for ``defn``."""
    return not qualification_problems(defn)
