"""A brute-force oracle for the FINAL content of every window (docs/semantics.md).

Why this exists: the engine is incremental (windows created, merged, fired, expired one record
at a time) and therefore hard to get right. This module computes the same answer the slow,
obvious way, straight from the definitions of docs/semantics.md, for the case where nothing is late (an
infinite watermark delay, or everything in one arrival instant, followed by end of input). In
that case every window ends up holding exactly the records the semantics assign to it, so the last
(``emit: final``) pane of every window must equal what this module returns.

It is deliberately naive, never fast:
- tumbling / hopping: enumerate window starts ``align_to + k*step`` around each record and keep
  those with ``start <= t < start+size`` (tumbling is hopping with ``step == size``);
- sliding (KIP-450): slide the closed interval ``[s, s+size]`` over EVERY millisecond ``s``
  from before the first record to after the last, collect the distinct non-empty record sets,
  each at the smallest ``s`` that shows it;
- session: sort by event time and cut where consecutive events are ``>= gap`` apart;
- global: all records of a key form one window;
- aggregates are recomputed from scratch from the member records.

It imports nothing from ``jobs.engine`` on purpose: it must be an independent reading of
docs/semantics.md. It only reads the definition dataclasses (``jobs.definition.model``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobs.definition.model import Aggregation, Definition, Window

JsonScalar = str | int | float | bool | None


class OracleError(ValueError):
    """The oracle was asked something it cannot answer (e.g. a sweep too wide to brute-force)."""


@dataclass(frozen=True)
class OracleRecord:
    """One input record as the oracle sees it.

    ``values`` maps an aggregation NAME to the already evaluated input of that aggregation
    (what ``RecordBatch.columns`` holds); ``count`` with no ``of`` needs no entry. ``arrival``
    is the record's position in the stream: it breaks ties in event time for first / last /
    collect, as docs/semantics.md says.
    """

    key: JsonScalar
    event_time: int
    arrival: int
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OracleWindow:
    """The final content of one window of one key.

    ``start`` / ``end`` follow the output convention of docs/semantics.md: ``end`` is exclusive for
    tumbling / hopping, the inclusive end for sliding, ``last_t + gap`` for sessions, and both
    are None for the global window. ``first_event_time`` / ``last_event_time`` are the smallest
    and largest member event times (docs/semantics.md reports them for sessions and sliding windows).
    """

    key: JsonScalar
    start: int | None
    end: int | None
    first_event_time: int
    last_event_time: int
    values: dict[str, Any]
    members: tuple[int, ...]
    """Arrival numbers of the member records, sorted (handy for KIP-450 checks)."""

    def ident(self) -> tuple[str, int | None, int | None]:
        """A sortable identity (key as repr so None / str / int keys compare)."""
        return (repr(self.key), self.start, self.end)


# --------------------------------------------------------------------------- aggregates


def _event_order(records: Iterable[OracleRecord]) -> list[OracleRecord]:
    """Event-time order, ties broken by arrival (docs/semantics.md's rule for first/last/collect)."""
    return sorted(records, key=lambda r: (r.event_time, r.arrival))


def aggregate(agg: Aggregation, records: Sequence[OracleRecord]) -> Any:
    """One aggregate over ``records`` from scratch.

    Nulls are ignored, except by ``count`` with no ``of`` (which counts records). A window
    whose inputs are all null is treated like docs/semantics.md's empty pane: count, sum and
    count_distinct are 0, collect is [], the others are null.
    """
    ordered = _event_order(records)
    if agg.fn == "count" and agg.of is None:
        return len(ordered)
    present = [r.values.get(agg.name) for r in ordered]
    vals = [v for v in present if v is not None]
    if agg.fn == "count":
        return len(vals)
    if agg.fn == "sum":
        total: Any = 0
        for v in vals:
            total = total + v
        return total
    if agg.fn == "min":
        return min(vals) if vals else None
    if agg.fn == "max":
        return max(vals) if vals else None
    if agg.fn == "mean":
        if not vals:
            return None
        # sum first, divide once: for ints this is the correctly rounded float of the mean
        return float(sum(vals) / len(vals))
    if agg.fn == "first":
        return vals[0] if vals else None
    if agg.fn == "last":
        return vals[-1] if vals else None
    if agg.fn == "collect":
        return list(vals)
    if agg.fn == "count_distinct":
        return len(set(vals))
    raise OracleError(f"aggregation {agg.name!r}: unknown fn {agg.fn!r}")


def aggregate_all(aggs: Sequence[Aggregation], records: Sequence[OracleRecord]) -> dict[str, Any]:
    return {a.name: aggregate(a, records) for a in aggs}


# --------------------------------------------------------------------------- window assignment


def fixed_starts(window: Window, t: int) -> list[int]:
    """Every start ``align_to + k*step`` with ``start <= t < start + size`` (hopping/tumbling).

    Enumerates k over a range that surely covers every candidate and filters by docs/semantics.md's
    membership condition, rather than computing the answer with a formula.
    """
    size = window.size
    step = window.step if window.type == "hopping" else window.size
    if size is None or step is None:
        raise OracleError(f"window.type {window.type}: size/step missing")
    align = window.align_to
    k_hi = (t - align) // step + 1
    k_lo = k_hi - size // step - 2
    starts = []
    for k in range(k_lo, k_hi + 1):
        start = align + k * step
        if start <= t < start + size:
            starts.append(start)
    return starts


def _by_key(records: Iterable[OracleRecord]) -> dict[JsonScalar, list[OracleRecord]]:
    groups: dict[JsonScalar, list[OracleRecord]] = {}
    for r in records:
        # True == 1 and 1.0 == 1 in Python dicts; keep keys distinct by type as JSON would
        groups.setdefault(_key_token(r.key), []).append(r)
    return groups


def _key_token(key: JsonScalar) -> Any:
    return key if key is None or isinstance(key, str) else (type(key).__name__, key)


def _untoken(token: Any) -> JsonScalar:
    if isinstance(token, tuple):
        return token[1]
    return token


def _window(
    defn: Definition, key: JsonScalar, start: int | None, end: int | None,
    members: Sequence[OracleRecord],
) -> OracleWindow:
    return OracleWindow(
        key=key,
        start=start,
        end=end,
        first_event_time=min(r.event_time for r in members),
        last_event_time=max(r.event_time for r in members),
        values=aggregate_all(defn.aggregations, members),
        members=tuple(sorted(r.arrival for r in members)),
    )


def fixed_windows(defn: Definition, records: Sequence[OracleRecord]) -> list[OracleWindow]:
    size = defn.window.size
    assert size is not None
    out = []
    for token, recs in _by_key(records).items():
        buckets: dict[int, list[OracleRecord]] = {}
        for r in recs:
            for s in fixed_starts(defn.window, r.event_time):
                buckets.setdefault(s, []).append(r)
        for s, members in buckets.items():
            out.append(_window(defn, _untoken(token), s, s + size, members))
    return out


MAX_SLIDING_SWEEP = 2_000_000
"""Refuse sweeps longer than this many milliseconds x records (keep the oracle brute force)."""


def sliding_windows(defn: Definition, records: Sequence[OracleRecord]) -> list[OracleWindow]:
    """KIP-450 by brute force: every millisecond ``s``, the set of records in ``[s, s+size]``."""
    size = defn.window.size
    assert size is not None
    out = []
    for token, recs in _by_key(records).items():
        lo = min(r.event_time for r in recs) - size - 1
        hi = max(r.event_time for r in recs) + 1
        if (hi - lo) * len(recs) > MAX_SLIDING_SWEEP:
            raise OracleError(f"sliding sweep of {hi - lo} ms over {len(recs)} records too wide")
        seen: set[frozenset[int]] = set()
        for s in range(lo, hi + 1):
            members = [r for r in recs if s <= r.event_time <= s + size]
            if not members:
                continue
            ids = frozenset(r.arrival for r in members)
            if ids in seen:
                continue
            seen.add(ids)
            out.append(_window(defn, _untoken(token), s, s + size, members))
    return out


def session_windows(defn: Definition, records: Sequence[OracleRecord]) -> list[OracleWindow]:
    """Sort by event time; a gap ``>= gap`` between consecutive events starts a new session."""
    gap = defn.window.gap
    assert gap is not None
    out = []
    for token, recs in _by_key(records).items():
        ordered = _event_order(recs)
        sessions: list[list[OracleRecord]] = [[ordered[0]]]
        for prev, cur in zip(ordered, ordered[1:], strict=False):
            if cur.event_time - prev.event_time >= gap:
                sessions.append([cur])
            else:
                sessions[-1].append(cur)
        for members in sessions:
            first = members[0].event_time
            last = max(r.event_time for r in members)
            out.append(_window(defn, _untoken(token), first, last + gap, members))
    return out


def global_windows(defn: Definition, records: Sequence[OracleRecord]) -> list[OracleWindow]:
    return [
        _window(defn, _untoken(token), None, None, recs)
        for token, recs in _by_key(records).items()
    ]


def final_windows(defn: Definition, records: Sequence[OracleRecord]) -> list[OracleWindow]:
    """Every window's final content when nothing is late, sorted by (key, start, end)."""
    kind = defn.window.type
    if not records:
        return []
    if kind in ("tumbling", "hopping"):
        result = fixed_windows(defn, records)
    elif kind == "sliding":
        result = sliding_windows(defn, records)
    elif kind == "session":
        result = session_windows(defn, records)
    elif kind == "global":
        result = global_windows(defn, records)
    else:
        raise OracleError(f"window.type: unknown {kind!r}")
    return sorted(result, key=lambda w: (repr(w.key), _none_low(w.start), _none_low(w.end)))


def _none_low(v: int | None) -> float:
    return -math.inf if v is None else v
