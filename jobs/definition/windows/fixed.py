"""Windows fixed by arithmetic: every start is ``align_to + k*step`` and a window holds
``[start, start + size)``. Tumbling windows are the case ``step == size``.

This is the one implementation of those starts, in scalar form (the general engine, one record
at a time) and NumPy form (the vectorized engine's geometry and the Spark gate, one array per
micro-batch). ``jobs/spark/jvm/.../Gate.java`` computes the same starts in the JVM;
``tests/spark/test_gate_starts_jvm.py`` checks it against :meth:`FixedStarts.starts_array`.
"""

from __future__ import annotations

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

    def starts(self, t: int) -> list[int]:
        """Every start with ``start <= t < start + size``, ascending."""
        a, st = self.align_to_ms, self.step_ms
        last_k = (t - a) // st
        first_k = (t - self.size_ms - a) // st + 1
        return [a + k * st for k in range(first_k, last_k + 1)]

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
