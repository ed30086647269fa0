"""Hypothesis strategies: random session definitions the kernel engine runs (``emit: final``,
and with count triggers), and random event logs (records, clock lines, watermark lines) for
them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from hypothesis import strategies as st

from jobs.definition.model import (
    INFINITE,
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Watermark,
    WatermarkStrategy,
    Window,
)

KEYS: list[Any] = ["a", "b", None, 1, 1.0, True, "ü", "a\x00b"]
AGG_CHOICES = [
    Aggregation("n", "count"),
    Aggregation("nx", "count", "x"),
    Aggregation("total", "sum", "x"),
    Aggregation("lo", "min", "x"),
    Aggregation("hi", "max", "x"),
    Aggregation("avg", "mean", "x"),
    Aggregation("f", "first", "x"),
    Aggregation("l", "last", "x"),
]
# ints, floats (not all dyadic: the summation order must match bit for bit), nulls
VALUES = st.one_of(
    st.integers(-50, 50), st.integers(-8, 8).map(lambda i: i / 4),
    st.sampled_from([0.1, 0.7, -0.3, 1e16, -0.0]), st.none(),
)


@st.composite
def session_definitions(draw: st.DrawFn) -> Definition:
    aggs = draw(st.lists(st.sampled_from(AGG_CHOICES), min_size=1, max_size=8,
                         unique_by=lambda a: a.name))
    strategy = cast(WatermarkStrategy, draw(st.sampled_from(["bounded", "bounded", "source"])))
    return Definition(
        name="sess",
        window=Window("session", gap=draw(st.integers(1, 20))),
        aggregations=tuple(aggs),
        key="k",
        event_time="t",
        watermark=Watermark(strategy=strategy,
                            delay=draw(st.sampled_from([0, 0, 1, 3, 10, INFINITE]))),
        allowed_lateness=draw(st.sampled_from([0, 0, 2, 5, 30, INFINITE])),
        lateness_basis=draw(st.sampled_from(["window", "event"])),
        trigger=Trigger(emit="final"),
        accumulation=draw(st.sampled_from(["discarding", "accumulating", "retracting"])),
    )


@st.composite
def event_logs(draw: st.DrawFn, max_lines: int = 40) -> list[dict[str, Any]]:
    """Records around a slowly rising time (out of order by up to 40 ms), with clock lines
    (``$processing_time``, rising) and watermark lines (``$watermark``) in between."""
    n = draw(st.integers(1, max_lines))
    out: list[dict[str, Any]] = []
    base = draw(st.integers(-30, 30))
    pt = draw(st.integers(0, 100))
    for _ in range(n):
        kind = draw(st.sampled_from(["rec"] * 8 + ["clock", "wm"]))
        if kind == "clock":
            pt += draw(st.integers(1, 30))
            out.append({"$processing_time": pt})
        elif kind == "wm":
            out.append({"$watermark": base + draw(st.integers(-10, 20))})
        else:
            out.append({"k": draw(st.sampled_from(KEYS)),
                        "t": base + draw(st.integers(-40, 25)), "x": draw(VALUES)})
            base += draw(st.integers(0, 4))
    return out


TRIGGERS = st.one_of(
    st.just(Trigger(emit="current")),
    st.builds(
        Trigger, emit=st.just("custom"),
        early=st.one_of(st.none(), st.integers(1, 4).map(
            lambda n: EarlyTrigger(kind="count", count=n))),
        on_time=st.booleans(),
        late=st.one_of(st.none(), st.integers(1, 3).map(
            lambda n: LateTrigger(kind="count", count=n))),
    ),
)
"""Triggers without processing-time parts: count-based early / late panes, on time or not."""


@st.composite
def triggered_session_definitions(draw: st.DrawFn) -> Definition:
    """Session definitions that fire more than once, every accumulation mode and lateness
    basis."""
    return replace(draw(session_definitions()), trigger=draw(TRIGGERS))
