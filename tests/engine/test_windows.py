"""Window assignment: the arithmetic of docs/semantics.md's window table, and KIP-450 sliding windows
checked against a brute-force reading of the normative definition."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import Aggregation, Definition, Watermark, Window
from jobs.engine import Engine, RecordBatch
from jobs.engine.windows import (
    hopping_starts,
    sliding_right_window_nonempty,
    sliding_starts_containing,
    tumbling_start,
)


def test_tumbling_start_floors_below_alignment() -> None:
    assert tumbling_start(0, 10, 0) == 0
    assert tumbling_start(9, 10, 0) == 0
    assert tumbling_start(10, 10, 0) == 10
    assert tumbling_start(-1, 10, 0) == -10  # floor, not truncation toward zero
    assert tumbling_start(2, 10, 3) == -7
    assert tumbling_start(3, 10, 3) == 3


def test_hopping_starts_every_window_containing_t() -> None:
    assert hopping_starts(7, 10, 5, 0) == [0, 5]
    assert hopping_starts(10, 10, 5, 0) == [5, 10]  # [0,10) excludes 10
    assert hopping_starts(0, 10, 10, 0) == [0]  # step == size: tumbling
    assert hopping_starts(-3, 10, 5, 0) == [-10, -5]
    assert hopping_starts(4, 10, 3, 1) == [-5, -2, 1, 4]


@given(
    t=st.integers(-10_000, 10_000),
    size=st.integers(1, 50),
    step_div=st.integers(1, 50),
    align=st.integers(-100, 100),
)
def test_hopping_starts_match_definition(t: int, size: int, step_div: int, align: int) -> None:
    step = max(1, size // step_div)
    got = hopping_starts(t, size, step, align)
    # definition: every start = align + k*step with start <= t < start + size
    expected = [
        align + k * step
        for k in range((t - size - align) // step - 2, (t - align) // step + 3)
        if align + k * step <= t < align + k * step + size
    ]
    assert got == expected


def test_sliding_starts_containing() -> None:
    times = [5, 8, 14, 30]
    assert sliding_starts_containing(8, 10, times) == [-2, 4, 6]
    assert sliding_starts_containing(30, 10, times) == [20]
    assert sliding_right_window_nonempty(5, 10, times)  # [6,16] holds 8, 14
    assert not sliding_right_window_nonempty(14, 10, times)  # [15,25] holds nothing


def _brute_force_sliding(times: list[int], size: int) -> dict[tuple[int, int], list[int]]:
    """Every distinct non-empty set seen by [s, s+size], at its smallest s (normative)."""
    seen: dict[tuple[int, ...], int] = {}
    lo, hi = min(times) - size - 2, max(times) + 2
    for s in range(lo, hi + 1):
        members = tuple(sorted(i for i, t in enumerate(times) if s <= t <= s + size))
        if members and members not in seen:
            seen[members] = s
    return {(s, s + size): sorted(times[i] for i in m) for m, s in seen.items()}


@settings(max_examples=60, deadline=None)
@given(
    times=st.lists(st.integers(0, 60), min_size=1, max_size=12),
    size=st.integers(1, 20),
    split=st.integers(0, 12),
)
def test_sliding_windows_are_the_distinct_record_sets(
    times: list[int], size: int, split: int
) -> None:
    """Whatever the arrival order and instants, the engine's sliding windows at end of input
    are exactly the normative ones (and at most 2n)."""
    defn = Definition(
        name="s",
        window=Window(type="sliding", size=size),
        aggregations=(Aggregation(name="ts", fn="collect", of="t"),),
        key="k",
        event_time="t",
        watermark=Watermark(delay=10_000),
    )
    eng = Engine(defn)
    panes = []
    for part in (times[:split], times[split:]):
        if part:
            panes += eng.ingest(
                RecordBatch(keys=["x"] * len(part), event_times=np.array(part),
                            columns={"ts": part})
            )
        panes += eng.advance_processing_time(eng.state.processing_time + 1)
    panes += eng.end_of_input()
    got = {(p.window_start, p.window_end): sorted(p.values["ts"]) for p in panes}
    assert got == _brute_force_sliding(times, size)
    assert len(got) <= 2 * len(times)
