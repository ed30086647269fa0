"""Accumulators: what each function emits, and that merging equals adding (sessions merge)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import AggFn
from jobs.engine import aggregates

FNS: list[AggFn] = [
    "count", "sum", "min", "max", "mean", "first", "last", "collect", "count_distinct",
]


def _fold(fn: AggFn, items: list[tuple[int, int, Any]]) -> Any:
    acc = aggregates.new(fn)
    for t, seq, v in items:
        acc = aggregates.add(fn, acc, v, t, seq)
    return acc


@pytest.mark.parametrize(
    ("fn", "expected"),
    [("count", 0), ("sum", 0), ("count_distinct", 0), ("collect", []), ("min", None),
     ("max", None), ("mean", None), ("first", None), ("last", None)],
)
def test_empty_values_follow_the_spec(fn: AggFn, expected: Any) -> None:
    assert aggregates.result(fn, aggregates.new(fn)) == expected


def test_values_with_nulls_and_ties() -> None:
    items = [(5, 0, 3), (1, 1, 1.5), (5, 2, None), (9, 3, 3), (1, 4, 2)]
    assert aggregates.result("count", _fold("count", items)) == 4  # nulls ignored
    assert aggregates.result("sum", _fold("sum", items)) == 9.5
    assert aggregates.result("min", _fold("min", items)) == 1.5
    assert aggregates.result("max", _fold("max", items)) == 3
    mean = aggregates.result("mean", _fold("mean", items))
    assert isinstance(mean, float) and mean == pytest.approx(2.375)
    # ties at t=1: arrival 1 (1.5) before arrival 4 (2); t=5: arrival 0 (3); t=9: 3
    assert aggregates.result("first", _fold("first", items)) == 1.5
    assert aggregates.result("last", _fold("last", items)) == 3
    assert aggregates.result("collect", _fold("collect", items)) == [1.5, 2, 3, 3]
    assert aggregates.result("count_distinct", _fold("count_distinct", items)) == 3


def test_sum_of_ints_is_int_and_mean_is_float() -> None:
    items = [(0, 0, 2), (0, 1, 2)]
    total = aggregates.result("sum", _fold("sum", items))
    assert total == 4 and isinstance(total, int)
    mean = aggregates.result("mean", _fold("mean", items))
    assert mean == 2.0 and isinstance(mean, float)


def test_count_distinct_identity() -> None:
    items = [(0, 0, 1), (0, 1, 1.0), (0, 2, True), (0, 3, "1")]
    # 1 and 1.0 are one number; true and "1" are other values
    assert aggregates.result("count_distinct", _fold("count_distinct", items)) == 3


def test_min_max_mixed_types_do_not_raise() -> None:
    items = [(0, 0, 1), (0, 1, "a")]
    assert aggregates.result("min", _fold("min", items)) in (1, "a")


values = st.one_of(st.none(), st.integers(-100, 100), st.floats(-1e6, 1e6, allow_nan=False))
item_lists = st.lists(st.tuples(st.integers(0, 20), values), max_size=12)


@pytest.mark.parametrize("fn", FNS)
@settings(max_examples=40)
@given(items=item_lists, cut=st.integers(0, 12))
def test_merge_equals_adding_everything(
    fn: AggFn, items: list[tuple[int, Any]], cut: int
) -> None:
    seqd = [(t, i, v) for i, (t, v) in enumerate(items)]
    whole = aggregates.result(fn, _fold(fn, seqd))
    left, right = _fold(fn, seqd[:cut]), _fold(fn, seqd[cut:])
    merged = aggregates.result(fn, aggregates.merge(fn, right, left))  # order must not matter
    if isinstance(whole, float):
        assert merged == pytest.approx(whole)
    else:
        assert merged == whole


@pytest.mark.parametrize("fn", FNS)
def test_accumulators_are_json(fn: AggFn) -> None:
    acc = _fold(fn, [(1, 0, 2), (0, 1, 3)])
    assert json.loads(json.dumps(acc)) == acc
