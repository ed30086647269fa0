"""Mergeable accumulators for the nine aggregation functions.

Every accumulator is plain JSON data (ints, floats, lists, dicts of strings), so a window's
state snapshots and restores exactly without per-function codecs, and two accumulators of the
same function merge (session windows merge; sliding windows are built from held records).

Order-sensitive functions (first, last, collect) remember ``[t, seq, value]`` triples: event
time first, then the engine's arrival sequence number, which is how docs/semantics.md breaks ties.
Null inputs are ignored by every function; ``count`` without ``of`` counts records (the engine
passes it a non-null placeholder).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable
from typing import Any

from jobs.definition.model import AggFn

Acc = Any
"""An accumulator: JSON data whose shape depends on the function (see ``new``)."""


def _distinct_token(value: Any) -> str:
    """Identity for count_distinct: 1 and 1.0 are one value (as in SQL), True is not 1."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def new(fn: AggFn) -> Acc:
    """The empty accumulator of ``fn``."""
    if fn in ("count", "sum"):
        return 0
    if fn == "mean":
        return [0, 0]
    if fn == "collect":
        return []
    if fn == "count_distinct":
        return {}
    return None  # min, max, first, last


Adder = Callable[[Acc, Any, int, int], Acc]


def _add_count(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    return acc if value is None else acc + 1


def _add_sum(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    return acc if value is None else acc + value


def _add_mean(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    if value is not None:
        acc[0] += value
        acc[1] += 1
    return acc


def _add_min(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    if value is None:
        return acc
    return value if acc is None or _less(value, acc) else acc


def _add_max(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    if value is None:
        return acc
    return value if acc is None or _less(acc, value) else acc


def _add_first(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    if value is None:
        return acc
    return [t, seq, value] if acc is None or (t, seq) < (acc[0], acc[1]) else acc


def _add_last(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    if value is None:
        return acc
    return [t, seq, value] if acc is None or (t, seq) > (acc[0], acc[1]) else acc


def _add_collect(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    if value is None:
        return acc
    item = [t, seq, value]
    if not acc or (acc[-1][0], acc[-1][1]) <= (t, seq):
        acc.append(item)
    else:
        pos = bisect.bisect_right(acc, (t, seq), key=lambda x: (x[0], x[1]))
        acc.insert(pos, item)
    return acc


def _add_distinct(acc: Acc, value: Any, t: int, seq: int) -> Acc:
    if value is not None:
        acc[_distinct_token(value)] = 1
    return acc


_ADDERS: dict[str, Adder] = {
    "count": _add_count,
    "sum": _add_sum,
    "mean": _add_mean,
    "min": _add_min,
    "max": _add_max,
    "first": _add_first,
    "last": _add_last,
    "collect": _add_collect,
    "count_distinct": _add_distinct,
}


def adder(fn: AggFn) -> Adder:
    """The add function of ``fn`` (resolved once, so the per-record path has no dispatch)."""
    try:
        return _ADDERS[fn]
    except KeyError:
        raise ValueError(f"unknown aggregation function {fn!r}") from None


def add(fn: AggFn, acc: Acc, value: Any, t: int, seq: int) -> Acc:
    """``acc`` with one more input (nulls ignored); returns the (possibly new) accumulator."""
    return adder(fn)(acc, value, t, seq)


def merge(fn: AggFn, a: Acc, b: Acc) -> Acc:
    """One accumulator holding the inputs of both (``a`` may be modified)."""
    if fn in ("count", "sum"):
        return a + b
    if fn == "mean":
        return [a[0] + b[0], a[1] + b[1]]
    if fn in ("min", "max", "first", "last"):
        if a is None:
            return b
        if b is None:
            return a
        if fn == "min":
            return b if _less(b, a) else a
        if fn == "max":
            return b if _less(a, b) else a
        if fn == "first":
            return b if (b[0], b[1]) < (a[0], a[1]) else a
        return b if (b[0], b[1]) > (a[0], a[1]) else a
    if fn == "collect":
        return sorted(a + b, key=lambda x: (x[0], x[1]))
    if fn == "count_distinct":
        out = dict(a)
        out.update(b)
        return out
    raise ValueError(f"unknown aggregation function {fn!r}")


ACC_IS_RESULT = frozenset({"count", "sum", "min", "max"})
"""Functions whose emitted value is the accumulator itself (``result(fn, acc) is acc``)."""


def result(fn: AggFn, acc: Acc) -> Any:
    """The emitted value. Empty: count/sum/count_distinct 0, collect [], others null."""
    if fn in ACC_IS_RESULT:
        return acc
    if fn == "mean":
        return None if acc[1] == 0 else float(acc[0]) / acc[1]
    if fn in ("first", "last"):
        return None if acc is None else acc[2]
    if fn == "collect":
        return [x[2] for x in acc]
    if fn == "count_distinct":
        return len(acc)
    raise ValueError(f"unknown aggregation function {fn!r}")


def copy(acc: Acc) -> Acc:
    """A deep enough copy: accumulators hold lists/dicts of immutable leaves."""
    if isinstance(acc, list):
        return [list(x) if isinstance(x, list) else x for x in acc]
    if isinstance(acc, dict):
        return dict(acc)
    return acc


def _less(a: Any, b: Any) -> bool:
    """Order for min/max; values of mixed types (a data error) fall back to a stable order
    instead of stopping the job."""
    try:
        return bool(a < b)
    except TypeError:
        return (type(a).__name__, str(a)) < (type(b).__name__, str(b))

