"""Columnar output of the vectorized engine: the final panes of one engine call as arrays.

Why: a hopping replay of 1M events fires ~130k windows, and building a ``Pane`` object (plus
its ``values`` dict) per window cost as much as all the aggregation work together. A
vectorized engine hands its results on as columns (as Arrow record batches or Beam's batched
DoFns do); objects are built only for a consumer that asks for them. :class:`FinalPanes` is
that value: key codes plus the engine's key table, window starts, per-pane watermarks and one
numpy array per aggregation, with the fields every final pane shares as constants.
``to_panes()`` gives exactly the ``Pane`` objects the object API returns (the object API is
built on it), and ``json_lines()`` the replay output text without building them.

The arrays are the engine's own results and are not copied: treat them as read-only.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from jobs.engine.records import Emission, Pane, jsonable
from jobs.engine.vectorized.aggregates import object_array
from jobs.engine.vectorized.geometry import WM_INF, WM_NONE
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.panes import final_panes

if TYPE_CHECKING:
    from jobs.engine.vectorized.emission_columns import EmissionColumns

I64 = NDArray[np.int64]


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while panes are built: a firing allocates two
    containers per pane (the pane and its values dict), none of them in a cycle, and the
    collections those allocations trigger were re-scanning every live pane (measured: up to
    a third of the materialization time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _value_dicts(names: list[str], cols: list[list[Any]]) -> list[dict[str, Any]]:
    """One ``values`` dict per pane; dict displays for the common small cases are ~2x faster
    than ``dict(zip(...))`` (this runs once per emitted pane)."""
    if len(names) == 1:
        (a,), (ca,) = names, cols
        return [{a: x} for x in ca]
    if len(names) == 2:
        (a, b), (ca, cb) = names, cols
        return [{a: x, b: y} for x, y in zip(ca, cb, strict=True)]
    if len(names) == 3:
        (a, b, c), (ca, cb, cc) = names, cols
        return [{a: x, b: y, c: z} for x, y, z in zip(ca, cb, cc, strict=True)]
    return [dict(zip(names, r, strict=True)) for r in zip(*cols, strict=True)]


_BARE_NON_FINITE = {"NaN": '"NaN"', "Infinity": '"Infinity"', "-Infinity": '"-Infinity"'}
"""A float key's canonical text (its identity) -> its output text (records.NON_FINITE_TEXT)."""


def _json_texts(col: NDArray[Any]) -> list[Any]:
    """Per value, something whose ``%s`` formatting is its JSON text: the Python int / float
    itself for int64 and finite float64 arrays (``str`` of an int or a finite float is what
    ``json.dumps`` writes), the JSON text otherwise (None, inf, mixed object columns)."""
    if col.dtype == np.int64:
        return col.tolist()
    if col.dtype == np.float64 and bool(np.isfinite(col).all()):
        return col.tolist()
    return [json.dumps(jsonable(v), ensure_ascii=False) for v in col.tolist()]


def _wm_or_none(wm: int) -> int | None:
    return None if wm in (WM_INF, WM_NONE) else wm


@dataclass(frozen=True, eq=False)
class FinalPanes:
    """The final panes of one engine call, in emission order, as columns (see the module
    docstring). Row ``i`` is ``Pane(key, window_start, window_end, "ON_TIME", 0, True, True,
    False, values, emitted_at, watermark)``."""

    key_codes: I64
    """Per pane, the code of its key in ``key_table``."""
    key_table: KeyTable
    """The engine's key table (codes never change; it only grows)."""
    window_start: I64 | None
    """Per pane, the window start in ms; None for the global window (no start or end)."""
    window_size: int
    watermark: I64
    """Per pane, the watermark that fired it; ``WM_NONE`` / ``WM_INF`` (minus / plus infinity)
    are ``None`` in a ``Pane``."""
    values: dict[str, NDArray[Any]]
    """Per aggregation (in definition order), its value per pane: int64 or float64 when every
    value is of that Python type (``tolist()`` gives the exact Python values), else an object
    array of Python ints / floats / None."""
    emitted_at: int
    """Processing time of the call (the same for every pane of one call)."""
    objects: list[Pane] | None = field(default=None, repr=False)
    """The panes as objects when they were built as objects (after a hand-over to the general
    engine); ``to_panes`` returns them then."""

    timing: ClassVar[str] = "ON_TIME"
    pane_index: ClassVar[int] = 0
    is_first: ClassVar[bool] = True
    is_last: ClassVar[bool] = True
    retraction: ClassVar[bool] = False

    def __len__(self) -> int:
        return len(self.key_codes)

    @property
    def pane_count(self) -> int:
        return len(self.key_codes)

    late_count: ClassVar[int] = 0
    """Final panes carry no late records (they come before them, as objects)."""

    def to_emissions(self) -> list[Emission]:
        return list(self.to_panes())

    @classmethod
    def empty(cls, names: Sequence[str], key_table: KeyTable, window_size: int,
              is_global: bool, emitted_at: int) -> FinalPanes:
        none = np.zeros(0, dtype=np.int64)
        return cls(none, key_table, None if is_global else none, window_size, none,
                   {n: none for n in names}, emitted_at)

    @classmethod
    def of_panes(cls, panes: Sequence[Pane], names: Sequence[str], window_size: int,
                 emitted_at: int) -> FinalPanes:
        """Columns of final panes built as objects (by the general engine); ``to_panes()``
        returns those very objects."""
        table = KeyTable()
        codes = np.array([table.code_of(p.key) for p in panes], dtype=np.int64)
        starts = None
        if panes and panes[0].window_start is not None:
            starts = np.array([p.window_start for p in panes], dtype=np.int64)
        wm = np.array([WM_NONE if p.watermark is None else p.watermark for p in panes],
                      dtype=np.int64)
        values = {n: object_array([p.values[n] for p in panes]) for n in names}
        at = panes[0].emitted_at if panes else emitted_at
        return cls(codes, table, starts, window_size, wm, values, at, list(panes))

    @property
    def window_end(self) -> I64 | None:
        return None if self.window_start is None else self.window_start + self.window_size

    def pane_keys(self) -> list[Any]:
        """Per pane, its key (the Python object the engine was given first for it)."""
        return self.key_table.object_array()[self.key_codes].tolist()

    def watermarks(self) -> list[int | None]:
        """Per pane, the ``Pane.watermark`` (None for an infinite watermark)."""
        wm = self.watermark
        if len(wm) and wm.min() == wm.max():  # one watermark fired them all (global scope)
            return [_wm_or_none(int(wm[0]))] * len(wm)
        return [_wm_or_none(w) for w in wm.tolist()]

    def to_panes(self) -> list[Pane]:
        """The ``Pane`` objects, equal to those the general engine emits for these windows."""
        if self.objects is not None:
            return list(self.objects)
        n = len(self)
        if n == 0:
            return []
        with _no_gc():
            rows = _value_dicts(list(self.values), [v.tolist() for v in self.values.values()])
            if self.window_start is None:
                starts: list[Any] = [None] * n
                ends: list[Any] = [None] * n
            else:
                starts = self.window_start.tolist()
                ends = (self.window_start + self.window_size).tolist()
            return final_panes(
                self.pane_keys(), starts, ends, rows, self.watermarks(), self.emitted_at
            )

    def json_lines(self) -> list[str]:
        """Per pane, ``json.dumps(pane.to_json(), separators=(",", ":"), ensure_ascii=False)``
        (the ``tidemark replay`` output line, without the newline), formatted straight from
        the columns with one ``%`` template per call: no Pane or dict is built."""
        if self.objects is not None:
            return [json.dumps(p.to_json(), separators=(",", ":"), ensure_ascii=False)
                    for p in self.objects]
        n = len(self)
        if n == 0:
            return []

        def lit(text: str) -> str:
            return text.replace("%", "%%")

        keys = self.key_table.json_array()[self.key_codes].tolist()
        if not _BARE_NON_FINITE.keys().isdisjoint(keys):  # canonical key text -> the output rule
            keys = [_BARE_NON_FINITE.get(k, k) for k in keys]
        cols: list[Any] = [keys]
        if self.window_start is None:
            span = '"window_start":null,"window_end":null'
        else:
            span = '"window_start":%s,"window_end":%s'
            cols.append(self.window_start.tolist())
            cols.append((self.window_start + self.window_size).tolist())
        vals = []
        for name, col in self.values.items():
            vals.append(lit(json.dumps(name, ensure_ascii=False)) + ":%s")
            cols.append(_json_texts(col))
        wm = self.watermark
        if wm.min() == wm.max():  # one watermark fired them all (global scope): a constant
            wm_text = lit(json.dumps(_wm_or_none(int(wm[0]))))
        else:
            wm_text = "%s"
            cols.append([json.dumps(w) for w in self.watermarks()])
        template = (
            '{"type":"pane","key":%s,' + span + ',"timing":"ON_TIME","pane_index":0,'
            '"is_first":true,"is_last":true,"retraction":false,"values":{' + ",".join(vals)
            + '},"emitted_at":' + lit(json.dumps(self.emitted_at)) + ',"watermark":' + wm_text
            + "}"
        )
        return list(map(template.__mod__, zip(*cols, strict=True)))


@dataclass(frozen=True, eq=False)
class ColumnarOutput:
    """The output of one engine call: ``before`` (late records: rare, kept as objects; after a
    hand-over also the general engine's panes that precede a late line), then the fired
    windows as :class:`FinalPanes`. Emission order is ``before`` then ``panes``."""

    before: list[Emission]
    panes: FinalPanes | EmissionColumns
    """Final panes (the vectorized engine), or every pane and late record of the call
    (:class:`~jobs.engine.vectorized.emission_columns.EmissionColumns`, engines with triggers
    or merging / sliding windows)."""

    def to_emissions(self) -> list[Emission]:
        """The call's output as the object API returns it."""
        if not len(self.panes):
            return list(self.before)
        return [*self.before, *self.panes.to_emissions()]

    @classmethod
    def of_emissions(cls, out: list[Emission], names: Sequence[str], window_size: int,
                     emitted_at: int) -> ColumnarOutput:
        """Split object output (the general engine's, after a hand-over): everything up to the
        last non-pane goes to ``before``, the trailing panes become columns (the general
        engine emits, per record, its late lines and then its panes, and the panes fired when an
        arrival unit ends come last: those end up as columns)."""
        cut = max((i + 1 for i, e in enumerate(out) if not isinstance(e, Pane)), default=0)
        panes = [e for e in out[cut:] if isinstance(e, Pane)]
        return cls(out[:cut], FinalPanes.of_panes(panes, names, window_size, emitted_at))

