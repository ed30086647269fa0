"""Dict records -> a columnar :class:`RecordBatch`, and dead letters for malformed ones.

The definition's SQL expressions (key, event_time, each aggregation's ``of``) are compiled
once by :func:`jobs.definition.expr.compile_expression` (no ``eval``) and evaluated per record.
A record whose key or event time is null or does not evaluate, or whose aggregation input
cannot be computed (or is not a number for sum/mean), becomes a :class:`DeadLetter` naming the
field and the record; the rest of the batch goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from jobs.definition.model import INFINITE, Definition
from jobs.engine.records import DeadLetter, Key, RecordBatch
from jobs.timeutil import TimeParseError, datetime_to_ms, parse_instant

RowFn = Callable[[Mapping[str, Any]], Any]
_NUMERIC_FNS = frozenset({"sum", "mean"})

EARLIEST_MS = -62_135_596_800_000
"""0001-01-01T00:00:00.000Z: the earliest instant (Spark's TIMESTAMP range starts there)."""
LATEST_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the latest instant (Spark's TIMESTAMP range ends there)."""
BOUND_LIMIT = INFINITE
"""Window bounds (and a window's end plus a finite allowed lateness) must stay within
``±BOUND_LIMIT`` ms (2^62), so that the engine's int64 arithmetic on them cannot overflow."""
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def instant_problem(ms: int) -> str | None:
    """Why an instant (event time, ``$processing_time``, ``$watermark``) cannot be used, or
    None."""
    if EARLIEST_MS <= ms <= LATEST_MS:
        return None
    shown = f"{ms} ms" if abs(ms) < 10**30 else f"{_show(ms)} (ms)"
    return (f"{shown} is outside the representable range of instants "
            f"({EARLIEST_MS} to {LATEST_MS} ms: 0001-01-01 to 9999-12-31 UTC)")


def reach_problem(ms: int) -> str:
    """Why a representable event time ``ms`` still cannot be used: its windows (plus lateness)
    pass ``±BOUND_LIMIT``."""
    return (f"the windows of {ms} ms reach past the representable range of window bounds "
            f"(±{BOUND_LIMIT} ms)")


def window_reach(defn: Definition) -> int:
    """How far from its event time a record's windows (plus a finite allowed lateness) reach."""
    w = defn.window
    lateness = defn.allowed_lateness if defn.allowed_lateness < INFINITE else 0
    return max(w.size or 0, w.step or 0, w.gap or 0) + lateness


def _compile(sql: str, field: str) -> RowFn:
    """The definition package's compiler (imported here: it pulls in sqlglot)."""
    from jobs.definition.expr import compile_expression

    fn: RowFn = compile_expression(sql, field)
    return fn


def _event_ms(value: Any) -> int:
    if isinstance(value, datetime):
        return datetime_to_ms(value)
    return parse_instant(value)


def _show(record: Any) -> str:
    if type(record) is int and abs(record) >= 10**30:  # str() of a huge int is slow or fails
        return f"an integer of about {int(record.bit_length() * 0.30103) + 1} digits"
    text = repr(record)
    return text if len(text) <= 200 else text[:197] + "..."


class RecordExtractor:
    """Evaluates a definition's expressions over dict records (see module docstring)."""

    def __init__(self, defn: Definition) -> None:
        self.defn = defn
        self._key: RowFn | None = _compile(defn.key, "key") if defn.key is not None else None
        self._time: RowFn | None = (
            None if defn.uses_processing_time else _compile(defn.event_time, "event_time")
        )
        self._reach = window_reach(defn)
        """How far from its event time a record's windows (plus lateness) can reach."""
        self._aggs: list[tuple[str, str, RowFn | None]] = [
            (a.name, a.fn, _compile(a.of, f"aggregations.{a.name}") if a.of is not None else None)
            for a in defn.aggregations
        ]

    def extract(
        self,
        records: Sequence[Any],
        processing_time: int | None,
        lines: Sequence[int] | None = None,
    ) -> tuple[RecordBatch, list[DeadLetter]]:
        """One :class:`RecordBatch` of the good records (in input order) and the dead letters.

        ``lines`` (optional, replay) gives each record's input line number for dead letters.
        With the processing clock every record's event time is ``processing_time``.
        """
        keys: list[Key] = []
        times: list[int] = []
        cols: dict[str, list[Any]] = {name: [] for name, _, fn in self._aggs if fn is not None}
        good: list[dict[str, Any]] = []
        dead: list[DeadLetter] = []
        pt = processing_time if processing_time is not None else 0
        for i, rec in enumerate(records):
            line = lines[i] if lines is not None else None
            if not isinstance(rec, Mapping):
                dead.append(DeadLetter(f"a record must be a JSON object, got {_show(rec)}",
                                       rec, line))
                continue
            try:
                key = self._eval_key(rec)
                t = self._eval_time(rec, pt)
                vals = [self._eval_agg(name, fn, f, rec) for name, fn, f in self._aggs
                        if f is not None]
            except _Bad as bad:
                dead.append(DeadLetter(str(bad), rec, line, bad.field))
                continue
            keys.append(key)
            times.append(t)
            j = 0
            for name, _, f in self._aggs:
                if f is not None:
                    cols[name].append(vals[j])
                    j += 1
            good.append(dict(rec))
        batch = RecordBatch(
            keys=keys,
            event_times=np.asarray(times, dtype=np.int64),
            columns=dict(cols),
            records=good,
            processing_time=processing_time,
        )
        return batch, dead

    def _eval_key(self, rec: Mapping[str, Any]) -> Key:
        if self._key is None:
            return None
        try:
            value = self._key(rec)
        except Exception as exc:  # an expression error is data, not a crash
            raise _Bad("key", f"key: does not evaluate: {exc}") from None
        if value is None:
            raise _Bad("key", f"key: {self.defn.key} is null")
        if isinstance(value, datetime):
            return datetime_to_ms(value)
        if not isinstance(value, str | int | float | bool):
            raise _Bad("key", f"key: {_show(value)} is not a scalar (string, number, boolean)")
        return value

    def _eval_time(self, rec: Mapping[str, Any], pt: int) -> int:
        if self._time is None:
            return pt
        try:
            value = self._time(rec)
        except Exception as exc:
            raise _Bad("event_time", f"event_time: does not evaluate: {exc}") from None
        if value is None:
            raise _Bad("event_time", f"event_time: {self.defn.event_time} is null")
        try:
            ms = _event_ms(value)
        except (TimeParseError, OverflowError) as exc:
            raise _Bad("event_time", f"event_time: {exc}") from None
        problem = instant_problem(ms)
        if problem:
            raise _Bad("event_time", f"event_time: {problem}")
        if ms + self._reach > BOUND_LIMIT or ms - self._reach < -BOUND_LIMIT:
            raise _Bad("event_time", f"event_time: {reach_problem(ms)}")
        return ms

    def _eval_agg(self, name: str, fn: str, f: RowFn, rec: Mapping[str, Any]) -> Any:
        field = f"aggregations.{name}"
        try:
            value = f(rec)
        except Exception as exc:
            raise _Bad(field, f"{field}: does not evaluate: {exc}") from None
        if fn in _NUMERIC_FNS and value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            raise _Bad(field, f"{field}: {_show(value)} is not a number ({fn} needs numbers)")
        if fn in _NUMERIC_FNS and type(value) is int and not INT64_MIN <= value <= INT64_MAX:
            raise _Bad(field, f"{field}: {_show(value)} is outside the 64-bit integer range "
                              f"({fn} adds 64-bit integers, as Spark's BIGINT)")
        if isinstance(value, datetime):
            return datetime_to_ms(value)
        return value


class _Bad(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
