"""What goes into the engine and what comes out of it.

These types are the contract between the engine, the vectorized fast path, the Spark runtime
and ``tidemark replay``: input arrives as a columnar :class:`RecordBatch` (one arrival unit,
all keys at once, so the host never calls the engine once per record), and every output is an
:class:`Emission` whose ``to_json()`` is *exactly* the replay output object of
``docs/semantics.md`` (so the replay CLI, the transcript tests and the Spark sink all
print the same thing).

Instants are ``int`` epoch milliseconds. A watermark of ``None`` in a pane means "no finite
watermark": none known yet (minus infinity) or the input has ended (plus infinity).
"""

from __future__ import annotations

import json
import json.encoder
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from jobs.timeutil import datetime_to_ms

_encode_str = json.encoder.encode_basestring
"""JSON text of a str with non-ASCII kept (the function json.dumps uses for it)."""

_ESCAPED = re.compile(r'[\x00-\x1f"\\]')
_JACKSON_ESCAPES = {chr(c): f"\\u{c:04X}" for c in range(0x20)} | {
    "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"',
    "\\": "\\\\"}
"""How Spark's ``to_json`` (Jackson) escapes a character in a string: the short escapes, else
``\\u`` and four upper-case hex digits (``json.dumps`` writes lower-case ones)."""

Key = str | int | float | bool | None
"""A record's key: a JSON scalar; ``None`` is the null key (definitions without ``key``)."""

Timing = Literal["EARLY", "ON_TIME", "LATE"]
LateReason = Literal["expired", "before_watermark"]


def plain_key(key: Any) -> Key:
    """A key as a plain Python scalar (hosts may hand in numpy scalars from columnar data)."""
    return key.item() if isinstance(key, np.generic) else key


def key_json(key: Key) -> str:
    """Canonical JSON of a key: the identity used for state, ordering and snapshots.

    Python would treat ``1``, ``1.0`` and ``True`` as one dict key; JSON (and the user) do not.
    """
    if type(key) is str:  # what json.dumps(key, ensure_ascii=False) returns, without the encoder
        text = _encode_str(key)
        if "\\u" not in text:
            return text
        # a control character: escaped as Spark writes it, so the job's key text is this one
        return '"' + _ESCAPED.sub(lambda m: _JACKSON_ESCAPES[m.group()], key) + '"'
    return json.dumps(plain_key(key), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


NON_FINITE_TEXT = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
"""How output writes a non-finite float: as these JSON strings, never as the bare ``NaN`` /
``Infinity`` that strict JSON readers refuse. It is what Spark's own JSON writer (Jackson)
writes, and Spark's JSON reader reads the strings back into a DOUBLE column."""


def non_finite_text(value: float) -> str:
    """``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` for a non-finite float."""
    return NON_FINITE_TEXT[repr(float(value))]


def jsonable(value: Any) -> Any:
    """A value as it appears in output JSON (datetimes become epoch ms, numpy scalars plain,
    non-finite floats the strings of :data:`NON_FINITE_TEXT`)."""
    if type(value) is float:
        return value if math.isfinite(value) else non_finite_text(value)
    if isinstance(value, datetime):
        return datetime_to_ms(value)
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


@dataclass(slots=True)
class RecordBatch:
    """One arrival unit of records, columnar, in arrival order.

    ``columns`` maps an aggregation *name* to its already evaluated input values (one per
    record); ``count`` without ``of`` needs no column. ``records`` (the original records) is
    optional and only used to echo dropped records in late output. ``processing_time`` is the
    arrival time; ``None`` means "the engine's current processing time".
    """

    keys: list[Key]
    event_times: npt.NDArray[np.int64]
    columns: dict[str, Sequence[Any]] = field(default_factory=dict)
    records: list[dict[str, Any]] | None = None
    processing_time: int | None = None

    def __post_init__(self) -> None:
        self.event_times = np.asarray(self.event_times, dtype=np.int64)
        n = len(self.keys)
        if self.event_times.shape != (n,):
            raise ValueError(
                f"RecordBatch: event_times has shape {self.event_times.shape}, expected ({n},)"
            )
        for name, col in self.columns.items():
            if len(col) != n:
                raise ValueError(f"RecordBatch: column {name!r} has {len(col)} values, expected {n}")
        if self.records is not None and len(self.records) != n:
            raise ValueError(f"RecordBatch: {len(self.records)} records, expected {n}")

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, lo: int, hi: int) -> RecordBatch:
        """Rows ``lo:hi`` as a batch of their own (one arrival unit cut from a larger one)."""
        return RecordBatch(
            keys=self.keys[lo:hi],
            event_times=self.event_times[lo:hi],
            columns={name: col[lo:hi] for name, col in self.columns.items()},
            records=None if self.records is None else self.records[lo:hi],
            processing_time=self.processing_time,
        )

    def take_rows(self, rows: npt.NDArray[np.int64]) -> RecordBatch:
        """The rows at positions ``rows`` (ascending), as a batch of their own."""
        idx = rows.tolist()
        return RecordBatch(
            keys=[self.keys[i] for i in idx],
            event_times=self.event_times[rows],
            columns={name: (col[rows] if isinstance(col, np.ndarray) else [col[i] for i in idx])
                     for name, col in self.columns.items()},
            records=None if self.records is None else [self.records[i] for i in idx],
            processing_time=self.processing_time,
        )

    @classmethod
    def empty(cls, processing_time: int | None = None) -> RecordBatch:
        return cls(keys=[], event_times=np.zeros(0, dtype=np.int64), processing_time=processing_time)


@dataclass(frozen=True, slots=True)
class Pane:
    """One emission of a window's result (or, with ``retraction``, the withdrawal of one).

    ``window_start``/``window_end`` are ``None`` for the global window. For sliding windows
    ``window_end`` is inclusive (KIP-450); for sessions it is ``last_event_time + gap``.
    ``first_event_time``/``last_event_time`` are set for session and sliding windows only and
    are then written to JSON.
    """

    key: Key
    window_start: int | None
    window_end: int | None
    timing: Timing
    pane_index: int
    is_first: bool
    is_last: bool
    retraction: bool
    values: dict[str, Any]
    emitted_at: int
    watermark: int | None
    first_event_time: int | None = None
    last_event_time: int | None = None

    type: Literal["pane"] = "pane"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "pane",
            "key": jsonable(self.key),
            "window_start": self.window_start,
            "window_end": self.window_end,
            "timing": self.timing,
            "pane_index": self.pane_index,
            "is_first": self.is_first,
            "is_last": self.is_last,
            "retraction": self.retraction,
            "values": jsonable(self.values),
            "emitted_at": self.emitted_at,
            "watermark": self.watermark,
        }
        if self.first_event_time is not None:
            out["first_event_time"] = self.first_event_time
            out["last_event_time"] = self.last_event_time
        return out


_PANE_FIELDS = (
    "key", "window_start", "window_end", "timing", "pane_index", "is_first", "is_last",
    "retraction", "values", "emitted_at", "watermark", "first_event_time", "last_event_time",
    "type",
)


def _pane_maker() -> Any:
    """``make_pane``: ``Pane(...)`` without the frozen dataclass's per-field
    ``object.__setattr__`` (the slots are filled through their descriptors, ~3x cheaper); the
    object is an ordinary ``Pane``, equal to the one the constructor builds."""
    from dataclasses import fields

    names = tuple(f.name for f in fields(Pane))
    slots = [Pane.__dict__.get(n) for n in names]
    if names != _PANE_FIELDS or not all(type(d).__name__ == "member_descriptor" for d in slots):
        return None  # pragma: no cover - Pane changed: use the constructor
    (s_key, s_ws, s_we, s_timing, s_idx, s_first, s_last, s_retr, s_values, s_emitted, s_wm,
     s_fet, s_let, s_type) = (d.__set__ for d in slots)  # type: ignore[union-attr]
    new = object.__new__

    def make_pane(key: Key, window_start: int | None, window_end: int | None, timing: Timing,
                  pane_index: int, is_first: bool, is_last: bool, retraction: bool,
                  values: dict[str, Any], emitted_at: int, watermark: int | None,
                  first_event_time: int | None = None, last_event_time: int | None = None
                  ) -> Pane:
        p = new(Pane)
        s_key(p, key)
        s_ws(p, window_start)
        s_we(p, window_end)
        s_timing(p, timing)
        s_idx(p, pane_index)
        s_first(p, is_first)
        s_last(p, is_last)
        s_retr(p, retraction)
        s_values(p, values)
        s_emitted(p, emitted_at)
        s_wm(p, watermark)
        s_fet(p, first_event_time)
        s_let(p, last_event_time)
        s_type(p, "pane")
        return p

    return make_pane


make_pane = _pane_maker() or Pane
"""``make_pane(...)`` is ``Pane(...)`` (same arguments, equal result), only faster."""


@dataclass(frozen=True, slots=True)
class LateRecord:
    """A (record, window) pair that was dropped: one per window the record missed."""

    key: Key
    event_time: int
    window_start: int | None
    window_end: int | None
    reason: LateReason
    record: dict[str, Any] | None

    type: Literal["late"] = "late"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "late",
            "key": jsonable(self.key),
            "event_time": self.event_time,
            "window_start": self.window_start,
            "window_end": self.window_end,
            "reason": self.reason,
            "record": jsonable(self.record),
        }


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A malformed input: unparsable JSON, or a key / event time that is null or does not
    evaluate. ``line`` is the 1-based input line (replay) or ``None`` (a live job). ``field``
    names the definition field that failed (``key``, ``event_time``, ``aggregations.total``),
    when there is one; ``reason`` always names it too."""

    reason: str
    record: Any
    line: int | None = None
    field: str | None = None

    type: Literal["dead_letter"] = "dead_letter"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "dead_letter",
            "line": self.line,
            "reason": self.reason,
            "record": jsonable(self.record),
        }


Emission = Pane | LateRecord | DeadLetter
