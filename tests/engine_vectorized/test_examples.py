"""Hand-computed examples for the vectorized engine (each expectation worked out from
docs/semantics.md in the comments), plus which definitions qualify."""

from __future__ import annotations

from typing import Any

import numpy as np

from jobs.definition.model import (
    Aggregation,
    Definition,
    EarlyTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine import make_engine
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized import VectorizedEngine, qualification_problems, qualifies

SUM_N = (Aggregation("total", "sum", "x"), Aggregation("n", "count"))


def defn(window: Window, **kw: Any) -> Definition:
    base: dict[str, Any] = {"name": "ex", "key": "k", "event_time": "t", "aggregations": SUM_N}
    base.update(kw)
    return Definition(window=window, **base)


def batch(rows: list[tuple[Any, int, Any]], pt: int) -> RecordBatch:
    return RecordBatch(
        keys=[r[0] for r in rows],
        event_times=np.array([r[1] for r in rows], dtype=np.int64),
        columns={"total": [r[2] for r in rows]},
        records=[{"k": r[0], "t": r[1], "x": r[2]} for r in rows],
        processing_time=pt,
    )


def short(e: Any) -> tuple[Any, ...]:
    j = e.to_json()
    if j["type"] == "late":
        return ("late", j["key"], j["event_time"], j["window_start"], j["reason"])
    return ("pane", j["key"], j["window_start"], j["window_end"], j["values"]["total"],
            j["values"]["n"], j["emitted_at"], j["watermark"], j["timing"], j["is_last"])


def test_qualifying_definitions_and_the_reasons_others_do_not() -> None:
    assert qualifies(defn(Window("tumbling", size=10)))
    assert qualifies(defn(Window("hopping", size=10, step=5)))
    # per-key watermarks: a key's records move its watermark one at a time inside a unit
    keyed = defn(Window("hopping", size=10, step=5), watermark=Watermark(scope="key"))
    assert qualifies(keyed)
    assert qualifies(defn(Window("global"), lateness_basis="event"))
    assert not qualifies(defn(Window("session", gap=5)))
    assert not qualifies(defn(Window("sliding", size=5)))
    # the processing clock: event time is the unit's processing time, the watermark the clock
    assert qualifies(defn(Window("tumbling", size=10), event_time="processing"))
    assert qualifies(defn(Window("tumbling", size=10), watermark=Watermark(idle_advance=True)))
    # per-key idle advance: each key's watermark moves with the clock from its own base
    assert qualifies(defn(Window("tumbling", size=10),
                          watermark=Watermark(idle_advance=True, scope="key")))
    # a source's watermark: only its marks move the watermark
    assert qualifies(defn(Window("tumbling", size=10), watermark=Watermark(strategy="source")))
    custom = Trigger(emit="custom", early=EarlyTrigger("count", count=2))
    problems = qualification_problems(defn(
        Window("session", gap=5), trigger=custom, watermark=Watermark(strategy="source"),
        aggregations=(Aggregation("xs", "collect", "x"),),
    ))
    assert problems == [
        "window.type: session is not vectorized",
        "trigger.emit: custom is not vectorized (final only)",
    ]
    # every aggregation function runs on the fast path
    every = tuple(Aggregation(f"a_{fn}", fn, None if fn == "count" else "x") for fn in
                  ("count", "sum", "mean", "min", "max", "first", "last", "collect",
                   "count_distinct"))
    assert qualifies(defn(Window("tumbling", size=10), aggregations=every))


def test_tumbling_final_with_accepted_and_dropped_late_records() -> None:
    d = defn(Window("tumbling", size=10), allowed_lateness=5)
    eng = VectorizedEngine(d)
    # instant 1: nothing seen yet, nothing late; watermark -> max t = 12; a[0,10) expires at
    # 10 + 5 = 15 > 12, so no pane yet
    assert eng.ingest(batch([("a", 1, 1), ("a", 4, 2), ("b", 12, 5)], pt=100)) == []
    assert eng.watermark == 12
    # instant 2: a@8 is behind the watermark (12 >= end 10) but a[0,10) has not expired
    # (12 < 15): accepted late. Watermark -> 16 >= 15: a[0,10) emits 1+2+3 = 6 over 3 records
    out = eng.ingest(batch([("a", 8, 3), ("b", 16, 1)], pt=200))
    assert [short(e) for e in out] == [
        ("pane", "a", 0, 10, 6, 3, 200, 16, "ON_TIME", True),
    ]
    assert eng.drain_late_counts() == [
        {"key": "a", "window_start": 0, "window_end": 10, "accepted": 1, "dropped": 0}
    ]
    # instant 3: a@9 arrives with watermark 16 >= 15: expired, dropped (late line first);
    # c@30 moves the watermark to 30 >= 20 + 5: b[10,20) emits 5 + 1 over 2 records
    out = eng.ingest(batch([("a", 9, 100), ("c", 30, 2)], pt=300))
    assert [short(e) for e in out] == [
        ("late", "a", 9, 0, "expired"),
        ("pane", "b", 10, 20, 6, 2, 300, 30, "ON_TIME", True),
    ]
    assert eng.late_totals() == [{"key": "a", "accepted": 1, "dropped": 1}]
    # end of input: c[30,40) closes; the clock does not move, the watermark is null (+inf)
    assert [short(e) for e in eng.end_of_input()] == [
        ("pane", "c", 30, 40, 2, 1, 300, None, "ON_TIME", True),
    ]


def test_hopping_record_joins_every_window_and_panes_come_out_by_end() -> None:
    # size 4, step 2: t=5 is in [2,6) and [4,8); t=7 in [4,8) and [6,10). With a delay of 10
    # the watermark (7 - 10) closes nothing before the end of input
    eng = VectorizedEngine(defn(Window("hopping", size=4, step=2), watermark=Watermark(delay=10)))
    assert eng.ingest(batch([("k", 5, 1), ("k", 7, 10)], pt=0)) == []
    assert [short(e)[:6] for e in eng.end_of_input()] == [
        ("pane", "k", 2, 6, 1, 1),
        ("pane", "k", 4, 8, 11, 2),
        ("pane", "k", 6, 10, 10, 1),
    ]


def test_keys_one_one_point_oh_and_true_are_three_keys() -> None:
    eng = VectorizedEngine(defn(Window("global")))
    eng.ingest(batch([(1, 0, 1), (1.0, 0, 2), (True, 0, 4), (1, 1, 8)], pt=0))
    panes = [e.to_json() for e in eng.end_of_input()]
    # ordered by key JSON: "1" < "1.0" < "true"; the global window has null bounds
    assert [(p["key"], type(p["key"]), p["values"]["total"]) for p in panes] == [
        (1, int, 9), (1.0, float, 2), (True, bool, 4)
    ]
    assert all(p["window_start"] is None and p["window_end"] is None for p in panes)


def test_strings_in_a_min_column_hand_over_to_the_general_engine() -> None:
    d = defn(Window("tumbling", size=10), aggregations=(Aggregation("lo", "min", "x"),))
    eng = make_engine(d)
    assert isinstance(eng, VectorizedEngine)
    eng.ingest(RecordBatch(keys=["a"], event_times=np.array([1]), columns={"lo": [5]}))
    eng.ingest(RecordBatch(keys=["a"], event_times=np.array([2]), columns={"lo": ["b"]}))
    assert eng.handed_over_because is not None and "str" in eng.handed_over_because
    # the general engine orders mixed types stably (int before str by type name)
    assert [p.to_json()["values"] for p in eng.end_of_input()] == [{"lo": 5}]
