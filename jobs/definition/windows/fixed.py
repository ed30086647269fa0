"""Windows fixed by arithmetic: every start is ``align_to + k*step`` and a window holds
``[start, start + size)``. Tumbling windows are the case ``step == size``.

This is the one implementation of those starts, in scalar form (the general engine, one record
at a time) and NumPy form (the vectorized engine's geometry and the Spark gate, one array per
micro-batch). ``jobs/spark/jvm/.../Gate.java`` computes the same starts in the JVM;
``tests/spark/test_gate_starts_jvm.py`` checks it against :meth:`FixedStarts.starts_array`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

I64 = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class FixedStarts:
    """The starts of windows of ``size_ms`` every ``step_ms``, aligned to ``align_to_ms``."""

    size_ms: int
    step_ms: int
    align_to_ms: int = 0

    @property
    def windows_per_record(self) -> int:
        """How many windows hold one instant at most (``ceil(size / step)``)."""
        return -(-self.size_ms // self.step_ms)

    def last_start(self, t: int) -> int:
        """Start of the latest window holding ``t`` (floor, also below ``align_to``)."""
        a, st = self.align_to_ms, self.step_ms
        return a + ((t - a) // st) * st

    def first_start(self, t: int) -> int:
        """Start of the earliest window holding ``t``: the window after the latest one that
        holds ``t - size``."""
        return self.last_start(t - self.size_ms) + self.step_ms

    def starts(self, t: int) -> list[int]:
        """Every start with ``start <= t < start + size``, ascending."""
        return list(range(self.first_start(t), self.last_start(t) + 1, self.step_ms))

    def last_starts(self, ts: Sequence[int]) -> list[int]:
        """:meth:`last_start` of each instant (one call per batch: the engine's hot path)."""
        a, st = self.align_to_ms, self.step_ms
        return [a + ((t - a) // st) * st for t in ts]

    def first_starts(self, ts: Sequence[int]) -> list[int]:
        """:meth:`first_start` of each instant; a record at ``ts[i]`` is in the windows
        ``range(first_starts[i], last_starts[i] + 1, step_ms)``."""
        a, st, size = self.align_to_ms, self.step_ms, self.size_ms
        return [a + ((t - size - a) // st + 1) * st for t in ts]

    def last_start_array(self, t: I64) -> I64:
        """:meth:`last_start` of each element."""
        a, st = self.align_to_ms, self.step_ms
        return a + np.floor_divide(t - a, st) * st

    def starts_array(self, t: I64) -> tuple[I64, NDArray[np.bool_]]:
        """``(starts, valid)`` of shape ``(len(t), windows_per_record)``: column j is the j-th
        latest window of each instant; ``valid`` is False where that window does not hold it
        (``start + size <= t``)."""
        last = self.last_start_array(t)
        j = np.arange(self.windows_per_record, dtype=np.int64)
        starts = last[:, None] - j[None, :] * self.step_ms
        return starts, starts + self.size_ms > t[:, None]
