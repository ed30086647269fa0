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
from jobs.definition.windows import FixedStarts, Global, Hopping, Tumbling, window_kind

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
        kind = window_kind(defn.window)
        if isinstance(kind, Global):
            return cls(kind.type, 0, 0, 1, 0, defn.allowed_lateness)
        if not isinstance(kind, Tumbling | Hopping):
            raise ValueError(f"window.type: {kind.type} windows are not fixed by arithmetic")
        fs = kind.starts
        return cls(kind.type, fs.size_ms, fs.step_ms, math.gcd(fs.size_ms, fs.step_ms),
                   fs.align_to_ms, defn.allowed_lateness)

    @property
    def starts(self) -> FixedStarts:
        """The window starts (the window kind's one implementation)."""
        return FixedStarts(self.size, self.step, self.align)

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
        return self.starts.last_start_array(slice_start)

    def window_starts(self, slice_start: I64) -> tuple[I64, NDArray[np.bool_]]:
        """``(starts, valid)`` of shape (n, windows_per_slice): the j-th latest window of each
        slice (``valid`` is False where that window does not contain the slice)."""
        if self.is_global:
            return slice_start[:, None], np.ones((len(slice_start), 1), dtype=bool)
        return self.starts.starts_array(slice_start)

    def window_end(self, start: I64) -> I64:
        if self.is_global:
            return np.full(len(start), GLOBAL_END, dtype=np.int64)
        return start + self.size

    def expiry(self, start: I64) -> I64:
        """Watermark at which a window expires (``end + allowed_lateness``), saturating."""
        if self.is_global:
            return np.full(len(start), GLOBAL_END, dtype=np.int64)
        return saturating_add(start + self.size, self.allowed_lateness)
