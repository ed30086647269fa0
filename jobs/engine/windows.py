"""Which windows a record at event time ``t`` belongs to (pure arithmetic, no state).

Tumbling and hopping windows are fixed by alignment; sliding (KIP-450) windows are defined by
the records themselves, so their helper takes the sorted record times of the key; session
windows are found by overlap in the engine (they depend on what the key already holds).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence


def tumbling_start(t: int, size: int, align_to: int) -> int:
    """start = align_to + floor((t - align_to) / size) * size (floor also below align_to)."""
    return align_to + ((t - align_to) // size) * size


def hopping_starts(t: int, size: int, step: int, align_to: int) -> list[int]:
    """Every start = align_to + k*step with start <= t < start + size, ascending."""
    last_k = (t - align_to) // step
    first_k = (t - size - align_to) // step + 1
    return [align_to + k * step for k in range(first_k, last_k + 1)]


def sliding_starts_containing(
    t: int, size: int, times: Sequence[int], horizon: int | None = None
) -> list[int]:
    """Starts of the KIP-450 windows that contain ``t``, given the key's sorted record times
    (which must include ``t``).

    A window is the smallest ``s`` showing a distinct non-empty record set, so it either ends
    at a record q (``s = q - size``) or starts 1 ms after a record r (``s = r + 1``). Those
    containing ``t`` are: ends at records q in ``[t, t+size]``, starts after records r in
    ``[t-size-1, t-1]`` (such a right window is non-empty: it holds ``t``).

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
