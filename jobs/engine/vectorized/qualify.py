"""Which definitions the vectorized engine runs, and why the others do not.

The fast path is exact only where a window's whole life is "collect, then emit once at
expiry": ``emit: final`` (so accumulation mode cannot matter: a single pane is the cumulative
one), fixed or global windows (no merging, no per-record window sets), a bounded watermark (with
idle advance under either scope: a watermark moved by the clock from its base), a source's
watermark (moved only by ``advance_watermark``) or the processing clock (``event_time: processing``: event time is the unit's processing time and
the watermark is the clock), and aggregates with columnar,
mergeable partials (count, sum, min, max, mean, first, last; collect and count_distinct as
side tables of entries). Anything else runs on the general engine.
"""

from __future__ import annotations

from jobs.definition.model import Definition
from jobs.definition.windows import kind_class

OBJECT_FNS = frozenset({"first", "last", "collect", "count_distinct"})
"""Functions over any JSON value (an object column with event times, never handed over)."""
VECTORIZED_FNS = frozenset({"count", "sum", "min", "max", "mean"}) | OBJECT_FNS


def qualification_problems(defn: Definition) -> list[str]:
    """Why the vectorized engine cannot run ``defn`` at all (empty when it can), each naming
    the field."""
    problems: list[str] = []
    if not kind_class(defn.window.type).fixed_by_arithmetic:
        problems.append(f"window.type: {defn.window.type} is not vectorized")
    if defn.trigger.emit != "final":
        problems.append(f"trigger.emit: {defn.trigger.emit} is not vectorized (final only)")
    if defn.watermark.strategy not in ("bounded", "source"):
        problems.append(f"watermark.strategy: {defn.watermark.strategy} is not vectorized")
    for a in defn.aggregations:
        if a.fn not in VECTORIZED_FNS:
            problems.append(f"aggregations.{a.name}: fn {a.fn} is not vectorized")
    return problems


def qualifies(defn: Definition) -> bool:
    """Whether ``make_engine`` picks the fast path: it can run ``defn`` and its result cannot
    differ from the general engine's in any unit (under ``scope: key`` too: a unit's records
    meet their key's watermark one at a time, ``jobs.engine.vectorized.key_units``)."""
    return not qualification_problems(defn)
