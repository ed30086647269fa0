"""Window geometry on numpy arrays: slices, the windows a slice belongs to, their ends.

Why slices: a hopping window of size 4x its step shares each record with four windows. Adding
every record to every window costs four times the work; adding it once to the *slice* (the
interval of width ``gcd(size, step)`` it falls in) and combining ``size / gcd`` slices only when
a window is emitted costs one update per record (the "panes" technique of Li et al., "No pane,
no gain", SIGMOD Record 2005). Tumbling windows are the case ``step == size`` (one slice per
window); the global window is one slice per key.

All a record's windows contain its whole slice (``gcd`` divides both step and size and starts
are aligned), so "the windows of a record" and "the windows of its slice" are the same set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition

I64 = NDArray[np.int64]

INT64_MAX = int(np.iinfo(np.int64).max)
INT64_MIN = int(np.iinfo(np.int64).min)
WM_INF = INT64_MAX
"""Watermark +infinity (end of input)."""
WM_NONE = INT64_MIN
"""Watermark before any record: minus infinity."""
GLOBAL_END = INT64_MAX
"""Internal end of the global window: only the +infinity watermark reaches it."""


def saturating_add(a: I64, b: int) -> I64:
    """``a + b`` clamped to int64 max (``end + allowed_lateness`` with ``infinite`` lateness)."""
    if b <= 0:
        return a + b
    return np.where(a > INT64_MAX - b, INT64_MAX, a + b)


@dataclass(frozen=True)
class Geometry:
    """Slice width and window parameters of one definition (tumbling, hopping or global)."""

    kind: str
    """``tumbling``, ``hopping`` or ``global``."""
    size: int
    step: int
    slice_width: int
    align: int
    allowed_lateness: int

    @classmethod
    def of(cls, defn: Definition) -> Geometry:
        w = defn.window
        if w.type == "global":
            return cls("global", 0, 0, 1, 0, defn.allowed_lateness)
        assert w.size is not None
        size = int(w.size)
        step = int(w.step) if w.type == "hopping" and w.step is not None else size
        return cls(w.type, size, step, math.gcd(size, step), int(w.align_to), defn.allowed_lateness)

    @property
    def is_global(self) -> bool:
        return self.kind == "global"

    @property
    def windows_per_slice(self) -> int:
        """Upper bound on the windows one slice belongs to."""
        return 1 if self.is_global else -(-self.size // self.step)

    @property
    def slices_per_window(self) -> int:
        return 1 if self.is_global else self.size // self.slice_width

    def slice_of(self, t: I64) -> I64:
        """Start of the slice each event time falls in (floor toward minus infinity)."""
        if self.is_global:
            return np.zeros(len(t), dtype=np.int64)
        g = self.slice_width
        return self.align + ((t - self.align) // g) * g

    def last_window_of(self, slice_start: I64) -> I64:
        """Start of the latest-starting (and latest-ending) window containing each slice."""
        if self.is_global:
            return slice_start
        st = self.step
        return self.align + ((slice_start - self.align) // st) * st

    def window_starts(self, slice_start: I64) -> tuple[I64, NDArray[np.bool_]]:
        """``(starts, valid)`` of shape (n, windows_per_slice): the j-th latest window of each
        slice (``valid`` is False where that window does not contain the slice)."""
        last = self.last_window_of(slice_start)
        if self.is_global:
            return last[:, None], np.ones((len(last), 1), dtype=bool)
        j = np.arange(self.windows_per_slice, dtype=np.int64)
        starts = last[:, None] - j[None, :] * self.step
        valid = starts + self.size > slice_start[:, None]
        return starts, valid

    def window_end(self, start: I64) -> I64:
        if self.is_global:
            return np.full(len(start), GLOBAL_END, dtype=np.int64)
        return start + self.size

    def expiry(self, start: I64) -> I64:
        """Watermark at which a window expires (``end + allowed_lateness``), saturating."""
        if self.is_global:
            return np.full(len(start), GLOBAL_END, dtype=np.int64)
        return saturating_add(start + self.size, self.allowed_lateness)
