"""Columnar output for engines whose panes are not all final: every ``Pane`` field and every
``LateRecord`` field as arrays, in emission order.

Why: :class:`~jobs.engine.vectorized.columns.FinalPanes` covers ``emit: final`` on fixed
windows, where every pane shares its timing, index and flags. Engines with triggers,
retractions, sessions or KIP-450 sliding windows emit panes that differ in those fields, and
interleave late records with them (a record's late lines come before the panes it fires); with
hopping triggers or sliding windows they emit more output rows than input records, so building a
``Pane`` per row is their largest cost. :class:`EmissionColumns` holds one engine call's output:
the panes (:class:`PaneColumns`), the late records (:class:`LateColumns`) and, per late record,
how many panes precede it. ``to_emissions()`` builds exactly the objects the object API returns,
``json_lines()`` the ``tidemark replay`` lines without building them.

The arrays are the engine's own results and are not copied: treat them as read-only.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, fields
from itertools import repeat
from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.records import Emission, LateRecord, Pane, jsonable
from jobs.engine.vectorized.aggregates import object_array
from jobs.engine.vectorized.columns import (
    _BARE_NON_FINITE,
    _no_gc,
    _value_dicts,
    _wm_or_none,
)
from jobs.engine.vectorized.geometry import WM_NONE
from jobs.engine.vectorized.keys import KeyTable

I64 = NDArray[np.int64]
I8 = NDArray[np.int8]
B = NDArray[np.bool_]

TIMINGS: tuple[str, ...] = ("EARLY", "ON_TIME", "LATE")
"""``PaneColumns.timing`` codes: the index into this tuple."""
LATE_REASONS: tuple[str, ...] = ("expired", "before_watermark")
"""``LateColumns.reason`` codes: the index into this tuple."""

_PANE_SETTERS: dict[str, Any] | None = (
    {f.name: Pane.__dict__[f.name].__set__ for f in fields(Pane)}
    if all(type(Pane.__dict__.get(f.name)).__name__ == "member_descriptor" for f in fields(Pane))
    else None
)
_LATE_SETTERS: dict[str, Any] | None = (
    {f.name: LateRecord.__dict__[f.name].__set__ for f in fields(LateRecord)}
    if all(type(LateRecord.__dict__.get(f.name)).__name__ == "member_descriptor"
           for f in fields(LateRecord))
    else None
)


def _bulk(cls: type, setters: dict[str, Any] | None, columns: dict[str, Any], n: int) -> list[Any]:
    """``n`` objects of the slots dataclass ``cls``, each field filled for all of them at once
    (``map`` over the slot descriptor: the per-object loop runs in C)."""
    if setters is None:  # pragma: no cover - only if the class loses its slots
        names = [f.name for f in fields(cls)]
        cols = [columns[name] for name in names]
        return [cls(*row) for row in zip(*cols, strict=True)]
    objs: list[Any] = list(map(object.__new__, repeat(cls, n)))
    sink: deque[None] = deque(maxlen=0)
    for name, setter in setters.items():
        sink.extend(map(setter, objs, columns[name]))
    return objs


def _json(value: Any) -> str:
    return json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)


def _value_texts(col: NDArray[Any]) -> list[Any]:
    """Per value, something whose ``%s`` formatting is its output JSON text (a Python int or
    finite float formats as ``json.dumps`` writes it)."""
    if col.dtype == np.int64:
        return col.tolist()
    if col.dtype == np.float64 and bool(np.isfinite(col).all()):
        return col.tolist()
    return [_json(v) for v in col.tolist()]


def _bools(col: B) -> list[str]:
    return np.where(col, "true", "false").tolist()


def _ints_or_null(col: I64 | None, n: int) -> list[Any]:
    return ["null"] * n if col is None else col.tolist()


def _lit(text: str) -> str:
    return text.replace("%", "%%")


def _key_texts(table: KeyTable, codes: I64) -> list[Any]:
    keys = table.json_array()[codes].tolist()
    if not _BARE_NON_FINITE.keys().isdisjoint(keys):  # canonical key text -> the output rule
        keys = [_BARE_NON_FINITE.get(k, k) for k in keys]
    return keys


@dataclass(frozen=True, eq=False)
class PaneColumns:
    """Panes as columns; row ``i`` is ``Pane(key, window_start, window_end, TIMINGS[timing],
    pane_index, is_first, is_last, retraction, values, emitted_at, watermark,
    first_event_time, last_event_time)``."""

    key_codes: I64
    """Per pane, the code of its key in ``key_table``."""
    key_table: KeyTable
    window_start: I64 | None
    """Per pane, the window start in ms; None: the global window (no start or end)."""
    window_end: I64 | None
    """Per pane, the window end in ms (inclusive for sliding windows, as in ``Pane``)."""
    timing: I8
    pane_index: I64
    is_first: B
    is_last: B
    retraction: B
    values: dict[str, NDArray[Any]]
    """Per aggregation (in definition order), its value per pane: int64 or float64 when every
    value is of that Python type, else an object array of the Python values (None, lists)."""
    emitted_at: I64
    watermark: I64
    """Per pane, the watermark it was emitted under; ``WM_NONE`` / ``WM_INF`` are ``None``."""
    first_event_time: I64 | None = None
    """Per pane, for session and sliding windows (None: the field is absent on every pane)."""
    last_event_time: I64 | None = None

    def __len__(self) -> int:
        return len(self.key_codes)

    @classmethod
    def empty(cls, names: Sequence[str], key_table: KeyTable) -> PaneColumns:
        z = np.zeros(0, dtype=np.int64)
        f = np.zeros(0, dtype=np.bool_)
        return cls(z, key_table, None, None, np.zeros(0, dtype=np.int8), z, f, f, f,
                   {n: z for n in names}, z, z)

    def to_panes(self) -> list[Pane]:
        """The ``Pane`` objects the object API returns for these rows."""
        n = len(self)
        if n == 0:
            return []
        with _no_gc():
            timings = np.array(TIMINGS, dtype=object)[self.timing].tolist()
            wm = [_wm_or_none(w) for w in self.watermark.tolist()]
            cols: dict[str, Any] = {
                "key": self.key_table.object_array()[self.key_codes].tolist(),
                "window_start": repeat(None, n) if self.window_start is None else self.window_start.tolist(),
                "window_end": repeat(None, n) if self.window_end is None else self.window_end.tolist(),
                "timing": timings,
                "pane_index": self.pane_index.tolist(),
                "is_first": self.is_first.tolist(),
                "is_last": self.is_last.tolist(),
                "retraction": self.retraction.tolist(),
                "values": _value_dicts(list(self.values),
                                       [v.tolist() for v in self.values.values()]),
                "emitted_at": self.emitted_at.tolist(),
                "watermark": wm,
                "first_event_time": (repeat(None, n) if self.first_event_time is None
                                     else self.first_event_time.tolist()),
                "last_event_time": (repeat(None, n) if self.last_event_time is None
                                    else self.last_event_time.tolist()),
                "type": repeat("pane", n),
            }
            return _bulk(Pane, _PANE_SETTERS, cols, n)

    def json_lines(self) -> list[str]:
        """Per pane, ``json.dumps(pane.to_json(), separators=(",", ":"), ensure_ascii=False)``,
        formatted from the columns with one ``%`` template."""
        n = len(self)
        if n == 0:
            return []
        cols: list[Any] = [_key_texts(self.key_table, self.key_codes),
                           _ints_or_null(self.window_start, n),
                           _ints_or_null(self.window_end, n),
                           np.array([f'"{t}"' for t in TIMINGS])[self.timing].tolist(),
                           self.pane_index.tolist(), _bools(self.is_first),
                           _bools(self.is_last), _bools(self.retraction)]
        vals = []
        for name, col in self.values.items():
            vals.append(_lit(json.dumps(name, ensure_ascii=False)) + ":%s")
            cols.append(_value_texts(col))
        cols.append(self.emitted_at.tolist())
        cols.append([json.dumps(_wm_or_none(w)) for w in self.watermark.tolist()])
        tail = ""
        if self.first_event_time is not None and self.last_event_time is not None:
            tail = ',"first_event_time":%s,"last_event_time":%s'
            cols.append(self.first_event_time.tolist())
            cols.append(self.last_event_time.tolist())
        template = (
            '{"type":"pane","key":%s,"window_start":%s,"window_end":%s,"timing":%s,'
            '"pane_index":%s,"is_first":%s,"is_last":%s,"retraction":%s,"values":{'
            + ",".join(vals) + '},"emitted_at":%s,"watermark":%s' + tail + "}"
        )
        return list(map(template.__mod__, zip(*cols, strict=True)))


@dataclass(frozen=True, eq=False)
class LateColumns:
    """Late records as columns; row ``i`` is ``LateRecord(key, event_time, window_start,
    window_end, LATE_REASONS[reason], record)``."""

    key_codes: I64
    key_table: KeyTable
    event_time: I64
    window_start: I64 | None
    """None: the global window (no start or end)."""
    window_end: I64 | None
    reason: I8
    record: Sequence[dict[str, Any] | None]
    """Per row, the record as the engine was given it (shared, not copied)."""

    def __len__(self) -> int:
        return len(self.key_codes)

    @classmethod
    def empty(cls, key_table: KeyTable) -> LateColumns:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, key_table, z, None, None, np.zeros(0, dtype=np.int8), [])

    def to_late_records(self) -> list[LateRecord]:
        n = len(self)
        if n == 0:
            return []
        cols: dict[str, Any] = {
            "key": self.key_table.object_array()[self.key_codes].tolist(),
            "event_time": self.event_time.tolist(),
            "window_start": repeat(None, n) if self.window_start is None else self.window_start.tolist(),
            "window_end": repeat(None, n) if self.window_end is None else self.window_end.tolist(),
            "reason": np.array(LATE_REASONS, dtype=object)[self.reason].tolist(),
            "record": self.record,
            "type": repeat("late", n),
        }
        return _bulk(LateRecord, _LATE_SETTERS, cols, n)

    def json_lines(self) -> list[str]:
        n = len(self)
        if n == 0:
            return []
        records = [_json(r) for r in self.record]
        cols = [_key_texts(self.key_table, self.key_codes), self.event_time.tolist(),
                _ints_or_null(self.window_start, n), _ints_or_null(self.window_end, n),
                np.array([f'"{r}"' for r in LATE_REASONS])[self.reason].tolist(), records]
        template = ('{"type":"late","key":%s,"event_time":%s,"window_start":%s,'
                    '"window_end":%s,"reason":%s,"record":%s}')
        return list(map(template.__mod__, zip(*cols, strict=True)))


@dataclass(frozen=True, eq=False)
class EmissionColumns:
    """One engine call's panes and late records as columns, in emission order: late row ``i``
    comes right after the first ``late_before[i]`` panes (non-decreasing; ``len(panes)`` puts
    it after all of them)."""

    panes: PaneColumns
    late: LateColumns
    late_before: I64

    @classmethod
    def of_emissions(cls, out: Sequence[Emission], names: Sequence[str],
                     key_table: KeyTable | None = None) -> EmissionColumns:
        """Columns of panes and late records built as objects (by the general engine after a
        hand-over, or by a test); ``names``: the aggregations in definition order. A dead
        letter has no columns: :class:`ValueError`."""
        table = key_table if key_table is not None else KeyTable()
        panes = [e for e in out if isinstance(e, Pane)]
        late = [e for e in out if isinstance(e, LateRecord)]
        if len(panes) + len(late) != len(out):
            raise ValueError("emissions: a dead letter has no columnar form")
        before, seen = [], 0
        for e in out:
            if isinstance(e, Pane):
                seen += 1
            else:
                before.append(seen)

        def ints(xs: list[Any]) -> I64:
            return np.array(xs, dtype=np.int64)

        def opt(xs: list[Any]) -> I64 | None:
            return None if not xs or xs[0] is None else ints(xs)

        pane_cols = PaneColumns(
            ints([table.code_of(p.key) for p in panes]), table,
            opt([p.window_start for p in panes]), opt([p.window_end for p in panes]),
            np.array([TIMINGS.index(p.timing) for p in panes], dtype=np.int8),
            ints([p.pane_index for p in panes]),
            np.array([p.is_first for p in panes], dtype=np.bool_),
            np.array([p.is_last for p in panes], dtype=np.bool_),
            np.array([p.retraction for p in panes], dtype=np.bool_),
            {n: object_array([p.values[n] for p in panes]) for n in names},
            ints([p.emitted_at for p in panes]),
            ints([WM_NONE if p.watermark is None else p.watermark for p in panes]),
            opt([p.first_event_time for p in panes]), opt([p.last_event_time for p in panes]),
        )
        late_cols = LateColumns(
            ints([table.code_of(r.key) for r in late]), table,
            ints([r.event_time for r in late]),
            opt([r.window_start for r in late]), opt([r.window_end for r in late]),
            np.array([LATE_REASONS.index(r.reason) for r in late], dtype=np.int8),
            [r.record for r in late],
        )
        return cls(pane_cols, late_cols, ints(before))

    def __len__(self) -> int:
        """Output lines: panes and late records."""
        return len(self.panes) + len(self.late)

    @property
    def pane_count(self) -> int:
        return len(self.panes)

    @property
    def late_count(self) -> int:
        return len(self.late)

    def _merge(self, panes: list[Any], late: list[Any]) -> list[Any]:
        if not late:
            return panes
        if not panes:
            return late
        out: list[Any] = []
        at = 0
        for pos, row in zip(self.late_before.tolist(), late, strict=True):
            if pos > at:
                out.extend(panes[at:pos])
                at = pos
            out.append(row)
        out.extend(panes[at:])
        return out

    def to_emissions(self) -> list[Emission]:
        """The call's output as the object API returns it."""
        return self._merge(self.panes.to_panes(), self.late.to_late_records())

    def to_panes(self) -> list[Pane]:
        """The panes only (the late records left out)."""
        return self.panes.to_panes()

    def json_lines(self) -> list[str]:
        """Every output line of the call, in emission order, without building objects."""
        return self._merge(self.panes.json_lines(), self.late.json_lines())
