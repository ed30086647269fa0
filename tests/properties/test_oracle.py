"""The oracle itself, checked on tiny cases computed by hand from docs/semantics.md.

The property tests trust the oracle, so the oracle gets its own hand-derived checks first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from jobs.definition.model import Aggregation, Definition, Window

from .oracle import OracleRecord, OracleWindow, aggregate, final_windows, fixed_starts

COUNT = Aggregation(name="n", fn="count")


def defn(window: Window, *aggs: Aggregation) -> Definition:
    return Definition(name="t", window=window, aggregations=aggs or (COUNT,), event_time="et")


def recs(*times: int, key: Any = None) -> list[OracleRecord]:
    return [OracleRecord(key=key, event_time=t, arrival=i) for i, t in enumerate(times)]


def spans(ws: Sequence[OracleWindow]) -> list[tuple[int | None, int | None, tuple[int, ...]]]:
    return [(w.start, w.end, w.members) for w in ws]


def test_tumbling_start_is_floor_and_end_exclusive() -> None:
    ws = final_windows(defn(Window(type="tumbling", size=10)), recs(0, 9, 10, -1))
    # t=-1 -> [-10,0); t=0,9 -> [0,10); t=10 -> [10,20) (10 is the end of [0,10), excluded)
    assert spans(ws) == [(-10, 0, (3,)), (0, 10, (0, 1)), (10, 20, (2,))]


def test_tumbling_align_to_shifts_the_grid() -> None:
    # align 3: start = 3 + floor((2-3)/10)*10 = -7 ; t=13 -> 3 + 1*10 = 13
    ws = final_windows(defn(Window(type="tumbling", size=10, align_to=3)), recs(2, 13, 12))
    assert spans(ws) == [(-7, 3, (0,)), (3, 13, (2,)), (13, 23, (1,))]


def test_hopping_membership_by_hand() -> None:
    w = Window(type="hopping", size=10, step=5)
    assert fixed_starts(w, 7) == [0, 5]
    assert fixed_starts(w, 5) == [0, 5]
    assert fixed_starts(w, 4) == [-5, 0]
    assert fixed_starts(w, 10) == [5, 10]
    # step 3, size 10: starts 3k with 3k <= 10 < 3k+10 -> k = 1, 2, 3 -> 3, 6, 9
    assert fixed_starts(Window(type="hopping", size=10, step=3), 10) == [3, 6, 9]
    # align_to 1: starts 1+5k; [-4,6) misses 7, [1,11) and [6,16) hold it, [11,21) does not
    assert fixed_starts(Window(type="hopping", size=10, step=5, align_to=1), 7) == [1, 6]


def test_hopping_with_step_equal_size_is_tumbling() -> None:
    times = (-13, -1, 0, 4, 9, 10, 25)
    a = final_windows(defn(Window(type="hopping", size=10, step=10)), recs(*times))
    b = final_windows(defn(Window(type="tumbling", size=10)), recs(*times))
    assert spans(a) == spans(b)


def test_sliding_kip450_by_hand() -> None:
    # A@0, B@5, C@12, size 10. Windows ending at a record: [-10,0]{A}, [-5,5]{A,B}, [2,12]{B,C};
    # windows starting 1 ms after a record: [1,11]{B}, [6,16]{C}; [13,23] is empty -> none.
    ws = final_windows(defn(Window(type="sliding", size=10)), recs(0, 5, 12))
    assert spans(ws) == [
        (-10, 0, (0,)), (-5, 5, (0, 1)), (1, 11, (1,)), (2, 12, (1, 2)), (6, 16, (2,)),
    ]
    assert [(w.first_event_time, w.last_event_time) for w in ws] == [
        (0, 0), (0, 5), (5, 5), (5, 12), (12, 12),
    ]


def test_sliding_both_ends_inclusive() -> None:
    # records exactly `size` apart share a window: [0,10] holds both
    ws = final_windows(defn(Window(type="sliding", size=10)), recs(0, 10))
    assert spans(ws) == [(-10, 0, (0,)), (0, 10, (0, 1)), (1, 11, (1,))]


def test_sliding_equal_times_are_one_set() -> None:
    ws = final_windows(defn(Window(type="sliding", size=10)), recs(3, 3))
    assert spans(ws) == [(-7, 3, (0, 1))]


def test_session_splits_at_gap_or_more() -> None:
    # gap 10: 0 and 9 merge (9 < 10), 9 -> 19 is exactly the gap -> separate, 19 -> 30 separate
    ws = final_windows(defn(Window(type="session", gap=10)), recs(19, 0, 30, 9))
    assert spans(ws) == [(0, 19, (1, 3)), (19, 29, (0,)), (30, 40, (2,))]


def test_session_out_of_order_bridge() -> None:
    # 0 and 15 are separate until 8 bridges them: [0, 25)
    ws = final_windows(defn(Window(type="session", gap=10)), recs(0, 15, 8))
    assert spans(ws) == [(0, 25, (0, 1, 2))]


def test_keys_are_separate_and_typed() -> None:
    rs = [
        OracleRecord(key=None, event_time=1, arrival=0),
        OracleRecord(key="a", event_time=2, arrival=1),
        OracleRecord(key=1, event_time=3, arrival=2),
        OracleRecord(key=True, event_time=4, arrival=3),
        OracleRecord(key="a", event_time=5, arrival=4),
    ]
    ws = final_windows(defn(Window(type="global")), rs)
    got = {(repr(w.key), w.start, w.end): w.values["n"] for w in ws}
    assert got == {
        ("None", None, None): 1, ("'a'", None, None): 2, ("1", None, None): 1,
        ("True", None, None): 1,
    }


def _r(t: int, arrival: int, v: Any) -> OracleRecord:
    return OracleRecord(key=None, event_time=t, arrival=arrival, values={"x": v})


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        ("count", 4),  # count OF x ignores the null
        ("sum", 12),
        ("min", 2),
        ("max", 5),
        ("mean", 3.0),
        ("first", 5),  # t=1 has two records: arrival 1 (value 5) beats arrival 3 (value 2)
        ("last", 3),  # t=9, value 3
        ("collect", [5, 2, 2, 3]),
        ("count_distinct", 3),
    ],
)
def test_aggregates_by_hand(fn: str, expected: Any) -> None:
    rows = [_r(9, 0, 3), _r(1, 3, 2), _r(1, 1, 5), _r(4, 2, None), _r(5, 4, 2)]
    # event order: (1,a1)=5, (1,a3)=2, (4,a2)=None, (5,a4)=2, (9,a0)=3
    assert aggregate(Aggregation(name="x", fn=fn, of="x"), rows) == expected  # type: ignore[arg-type]


def test_count_without_of_counts_null_records() -> None:
    rows = [_r(1, 0, None), _r(2, 1, None)]
    assert aggregate(Aggregation(name="n", fn="count"), rows) == 2
    assert aggregate(Aggregation(name="x", fn="count", of="x"), rows) == 0
    assert aggregate(Aggregation(name="x", fn="min", of="x"), rows) is None
    assert aggregate(Aggregation(name="x", fn="collect", of="x"), rows) == []


def test_mean_is_float_and_sum_keeps_int() -> None:
    rows = [_r(1, 0, 1), _r(2, 1, 2)]
    mean = aggregate(Aggregation(name="x", fn="mean", of="x"), rows)
    assert isinstance(mean, float) and mean == 1.5
    total = aggregate(Aggregation(name="x", fn="sum", of="x"), rows)
    assert isinstance(total, int) and total == 3
    assert isinstance(aggregate(Aggregation(name="x", fn="sum", of="x"), [*rows, _r(3, 2, 0.5)]),
                      float)
