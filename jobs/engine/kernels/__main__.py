"""``python -m jobs.engine.kernels``: compile every numba kernel (session windows, final,
triggered, with processing-time timers and with per-key watermarks, final and triggered; sliding
windows, final and with count triggers, under one watermark (with or without idle advance) or
per-key watermarks; triggered fixed windows, also under per-key watermarks; collect /
count_distinct with triggers, every watermark scope) into numba's cache (``make install`` runs
it once), so no test or job process pays the first compile (~15 s of CPU)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

import numpy as np

from jobs.definition.model import (
    Accumulation,
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine.kernels.session import SessionKernelEngine
from jobs.engine.kernels.sliding import SlidingKernelEngine
from jobs.engine.kernels.sliding_triggers import SlidingTriggerEngine
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized.triggered import TriggeredEngine

WINDOW_FAMILIES: dict[str, str] = {
    "session": "session", "sliding": "sliding", "tumbling": "fixed", "hopping": "fixed"}
"""The kernel family each window type's engines run (``warm``'s sections)."""


def warm(windows: Collection[str] | None = None) -> int:
    """Run every kernel once with the argument types the engines pass; returns the panes.

    ``windows`` (window types) limits the run to the kernels those windows' engines use (a
    worker daemon hosting one definition needs no other family); a type outside
    :data:`WINDOW_FAMILIES` runs them all."""
    families = None if windows is None or any(w not in WINDOW_FAMILIES for w in windows) \
        else {WINDOW_FAMILIES[w] for w in windows}
    n = 0
    if families is None or "session" in families:
        n += _warm_session()
    if families is None or "sliding" in families:
        n += _warm_sliding()
    if families is None or "fixed" in families:
        n += _warm_fixed()
    for window in ("session", "sliding", "tumbling"):
        if families is None or WINDOW_FAMILIES[window] in families:
            n += _warm_side(window)
    return n


def _warm_session() -> int:
    defn = Definition(
        name="warm", key="k", event_time="t", window=Window("session", gap=10),
        aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x")),
        trigger=Trigger(emit="final"),
    )
    eng = SessionKernelEngine(defn)
    out = eng.ingest(RecordBatch(keys=["a", "b"], event_times=np.array([1, 30]),
                                 columns={"s": [1, 2.5]}, processing_time=1))
    n = len(out) + len(eng.end_of_input())
    keyed = replace(defn, watermark=Watermark(scope="key", idle_advance=True))
    for kvalues in ([1, 2], [1.5, 2.5]):  # per-key watermarks, idle advance
        keng = SessionKernelEngine(keyed)
        n += len(keng.ingest(RecordBatch(keys=["a", "a"], event_times=np.array([1, 30]),
                                         columns={"s": kvalues}, processing_time=1)))
        n += len(keng.advance_processing_time(100))
        n += len(keng.end_of_input())
    values: list[Any]
    for mode in ("discarding", "accumulating", "retracting"):
        triggered = replace(defn, accumulation=mode, trigger=Trigger(
            emit="custom", early=EarlyTrigger("count", count=1), late=LateTrigger("count", count=1)))
        for values in ([1, 2], [1.5, 2.5]):
            seng = SessionKernelEngine(triggered)
            n += len(seng.ingest(RecordBatch(keys=["a", "a"], event_times=np.array([1, 30]),
                                             columns={"s": values}, processing_time=1)))
            n += len(seng.ingest(RecordBatch(keys=["a"], event_times=np.array([20]),
                                             columns={"s": values[:1]}, processing_time=2)))
            n += len(seng.end_of_input())
    timed_modes: tuple[Accumulation, ...] = ("accumulating", "retracting")
    for timed_mode in timed_modes:  # processing-time timers on sessions
        timed = replace(defn, accumulation=timed_mode, trigger=Trigger(
            emit="custom", early=EarlyTrigger("after", duration=10),
            late=LateTrigger("after", duration=10)))
        for values in ([1, 2], [1.5, 2.5]):
            ceng = SessionKernelEngine(timed)
            n += len(ceng.ingest(RecordBatch(keys=["a", "a"], event_times=np.array([1, 30]),
                                             columns={"s": values}, processing_time=1)))
            n += len(ceng.advance_processing_time(20))
            n += len(ceng.ingest(RecordBatch(keys=["a"], event_times=np.array([15]),
                                             columns={"s": values[:1]}, processing_time=25)))
            n += len(ceng.advance_processing_time(50))
            n += len(ceng.end_of_input())
    for key_mode in ("accumulating", "retracting"):  # triggered, per-key watermarks, idle
        keyed_triggered = replace(keyed, accumulation=key_mode, trigger=Trigger(
            emit="custom", early=EarlyTrigger("count", count=1), late=LateTrigger("count", count=1)))
        for values in ([1, 2], [1.5, 2.5]):
            keng = SessionKernelEngine(keyed_triggered)
            n += len(keng.ingest(RecordBatch(keys=["a", "a"], event_times=np.array([1, 30]),
                                             columns={"s": values}, processing_time=1)))
            n += len(keng.advance_processing_time(100))
            n += len(keng.end_of_input())
    return n


def _warm_sliding() -> int:
    n = 0
    for aggs in ((Aggregation("n", "count"), Aggregation("s", "sum", "x")),
                 (Aggregation("lo", "min", "x"), Aggregation("f", "first", "x")),
                 (Aggregation("n", "count"),)):
        sliding = Definition(
            name="warm", key="k", event_time="t", window=Window("sliding", size=10),
            aggregations=aggs, trigger=Trigger(emit="final"),
        )
        # global and per-key watermarks (with idle advance)
        for values, wm in (([1, 2, 3], Watermark()), ([1.5, 2, 0.5], Watermark()),
                           ([1.5, 2, 0.5], Watermark(scope="key", idle_advance=True))):
            leng = SlidingKernelEngine(replace(sliding, watermark=wm))
            cols: dict[str, Any] = {a.name: values for a in aggs if a.of is not None}
            n += len(leng.ingest(RecordBatch(keys=["a", "a", "b"], event_times=np.array(
                [1, 5, 30]), columns=cols, processing_time=1)))
            n += len(leng.ingest(RecordBatch(keys=["a", "a", "b"], event_times=np.array(
                [3, 60, 0]), columns=cols, processing_time=2)))
            leng.open_windows()
            n += len(leng.advance_processing_time(100))
            n += len(leng.end_of_input())
    slide_trig = Definition(  # sliding windows with count triggers (one signature set)
        name="warm", key="k", event_time="t", window=Window("sliding", size=10),
        aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x"),
                      Aggregation("f", "first", "x")),
        trigger=Trigger(emit="current"), accumulation="retracting",
    )
    # one watermark, with idle advance, and per-key watermarks with idle advance
    for swm in (Watermark(), Watermark(idle_advance=True),
                Watermark(scope="key", idle_advance=True)):
        steng = SlidingTriggerEngine(replace(slide_trig, watermark=swm))
        for pt, values in ((1, [1, 2, 3]), (2, [1.5, 2, 0.5])):
            n += len(steng.ingest(RecordBatch(keys=["a", "a", "b"], event_times=np.array(
                [1, 5, 30]) * pt, columns={"s": values, "f": values}, processing_time=pt)))
        n += len(steng.advance_processing_time(100))
        n += len(steng.end_of_input())
    return n


def _warm_fixed() -> int:
    n = 0
    for accumulation in ("discarding", "accumulating", "retracting"):
        fixed = Definition(
            name="warm", key="k", event_time="t", window=Window("tumbling", size=10),
            aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x"),
                          Aggregation("lo", "min", "x")),
            trigger=Trigger(emit="custom", early=EarlyTrigger("count", count=1),
                            late=LateTrigger("count", count=1)),
            accumulation=accumulation,
        )
        for values in ([1, 2], [1.5, 2.5]):
            # one watermark for all keys; per-key watermarks with idle advance
            for fwm in (Watermark(), Watermark(scope="key", idle_advance=True)):
                teng = TriggeredEngine(replace(fixed, watermark=fwm))
                n += len(teng.ingest(RecordBatch(keys=["a", "b"], event_times=np.array([1, 30]),
                                                 columns={"s": values, "lo": values},
                                                 processing_time=1)))
                n += len(teng.advance_processing_time(100))
                n += len(teng.end_of_input())
    return n


def _warm_side(window_type: str) -> int:
    """collect / count_distinct with triggers on one window type."""
    n = 0
    side = (Aggregation("c", "collect", "x"), Aggregation("d", "count_distinct", "x"))
    side_cols: dict[str, Any] = {"c": [1, 2, 2], "d": [1, 2, 2]}
    side_trigger = Trigger(emit="custom", early=EarlyTrigger("count", count=1),
                           late=LateTrigger("count", count=1))
    side_defns = [  # collect / count_distinct with triggers: sessions, sliding, fixed windows
        replace(Definition(name="warm", key="k", event_time="t", window=window,
                           aggregations=side, trigger=trigger),
                accumulation=mode, watermark=wm)
        for window, trigger in ((Window("session", gap=10), side_trigger),
                                (Window("sliding", size=10), Trigger(emit="current")),
                                (Window("tumbling", size=10), side_trigger))
        if window.type == window_type
        for mode in ("discarding", "retracting")
        for wm in (Watermark(), Watermark(scope="key", idle_advance=True))]
    for side_defn in side_defns:
        seng2: Any = {"session": SessionKernelEngine, "sliding": SlidingTriggerEngine,
                      "tumbling": TriggeredEngine}[side_defn.window.type](side_defn)
        n += len(seng2.ingest(RecordBatch(keys=["a", "a", "b"], event_times=np.array(
            [1, 5, 30]), columns=side_cols, processing_time=1)))
        n += len(seng2.ingest(RecordBatch(keys=["a", "a", "b"], event_times=np.array(
            [3, 60, 0]), columns=side_cols, processing_time=2)))
        n += len(seng2.advance_processing_time(100))
        n += len(seng2.end_of_input())
    return n


if __name__ == "__main__":
    print(f"jobs.engine.kernels: kernels compiled and cached ({warm()} panes)")
