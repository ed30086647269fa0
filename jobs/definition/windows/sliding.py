"""Sliding windows (Kafka Streams' KIP-450): of fixed size, defined by the records themselves.

A window is the smallest ``[s, s + size]`` (both ends included) showing a distinct non-empty
set of a key's records, so it either ends at a record q (``s = q - size``) or starts 1 ms after
a record r (``s = r + 1``). The starts therefore depend on the key's held record times, which
the engine passes in sorted.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from jobs.definition.model import Window, WindowType
from jobs.definition.windows.base import SIZE, WindowKind, WindowParam


@dataclass(frozen=True)
class Sliding(WindowKind):
    size_ms: int

    type: ClassVar[WindowType] = "sliding"
    params: ClassVar[tuple[WindowParam, ...]] = (SIZE,)
    spark_native: ClassVar[bool] = False
    fixed_by_arithmetic: ClassVar[bool] = False
    bounds_from_records: ClassVar[bool] = True

    @classmethod
    def of(cls, window: Window) -> Sliding:
        assert window.size is not None
        return cls(size_ms=window.size)

    def window(self) -> Window:
        return Window(type=self.type, size=self.size_ms)

    def starts_containing(
        self, t: int, times: Sequence[int], horizon: int | None = None
    ) -> list[int]:
        """:func:`sliding_starts_containing` for this size."""
        return sliding_starts_containing(t, self.size_ms, times, horizon)


def sliding_starts_containing(
    t: int, size: int, times: Sequence[int], horizon: int | None = None
) -> list[int]:
    """Starts of the windows that contain ``t``, given the key's sorted record times (which
    must include ``t``): those ending at records q in ``[t, t+size]`` and those starting after
    records r in ``[t-size-1, t-1]`` (such a right window is non-empty: it holds ``t``).

    Records at or before ``horizon`` define no window here (``[t-size, t]`` always counts):
    the engine may already have forgotten them, so using them only when still held would make
    the answer depend on when it forgets.
    """
    out: set[int] = {t - size}
    lo = bisect.bisect_left(times, t)
    hi = bisect.bisect_right(times, t + size)
    for q in times[lo:hi]:
        if horizon is None or q > horizon:
            out.add(q - size)
    lo = bisect.bisect_left(times, t - size - 1)
    hi = bisect.bisect_left(times, t)
    for r in times[lo:hi]:
        if horizon is None or r > horizon:
            out.add(r + 1)
    return sorted(out)


def sliding_right_window_nonempty(t: int, size: int, times: Sequence[int]) -> bool:
    """Whether the window ``[t+1, t+1+size]`` opened by a record at ``t`` holds any record."""
    i = bisect.bisect_right(times, t)
    return i < len(times) and times[i] <= t + 1 + size
