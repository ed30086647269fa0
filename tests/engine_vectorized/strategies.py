"""Hypothesis strategies: random qualifying definitions and random arrival instants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from hypothesis import strategies as st

from jobs.definition.model import (
    INFINITE,
    Aggregation,
    Definition,
    Trigger,
    Watermark,
    Window,
    WindowType,
)

KEYS: list[Any] = ["a", "b", None, 1, 1.0, True, "ü", "a\x00b"]
AGG_CHOICES = [
    Aggregation("n", "count"),
    Aggregation("nx", "count", "x"),
    Aggregation("total", "sum", "x"),
    Aggregation("lo", "min", "x"),
    Aggregation("hi", "max", "x"),
    Aggregation("avg", "mean", "x"),
]


@st.composite
def definitions(draw: st.DrawFn, kinds: tuple[str, ...] = ("tumbling", "hopping", "global")) -> Definition:
    kind = cast(WindowType, draw(st.sampled_from(kinds)))
    if kind == "global":
        window = Window("global")
    else:
        size = draw(st.integers(1, 20))
        step = draw(st.integers(1, size)) if kind == "hopping" else None
        window = Window(kind, size=size, step=step, align_to=draw(st.integers(-7, 7)))
    aggs = draw(st.lists(st.sampled_from(AGG_CHOICES), min_size=1, max_size=6, unique_by=lambda a: a.name))
    return Definition(
        name="vec",
        window=window,
        aggregations=tuple(aggs),
        key="k",
        event_time="t",
        watermark=Watermark(
            delay=draw(st.sampled_from([0, 0, 1, 3, 10, INFINITE])),
            scope=draw(st.sampled_from(["global", "key"])),
        ),
        allowed_lateness=draw(st.sampled_from([0, 0, 2, 5, 30, INFINITE])),
        lateness_basis=draw(st.sampled_from(["window", "event"])),
        trigger=Trigger(emit="final"),
        accumulation=draw(st.sampled_from(["discarding", "accumulating", "retracting"])),
    )


# x: ints, dyadic floats (exact under any summation order), nulls
VALUES = st.one_of(st.integers(-50, 50), st.integers(-8, 8).map(lambda i: i / 4), st.none())


@dataclass
class Instant:
    processing_time: int
    rows: list[tuple[Any, int, Any]]
    """(key, event time, x)"""


@st.composite
def instants(draw: st.DrawFn, max_instants: int = 8) -> list[Instant]:
    n = draw(st.integers(1, max_instants))
    out = []
    pt = draw(st.integers(0, 1000))
    base = draw(st.integers(-20, 20))
    for _ in range(n):
        pt += draw(st.integers(0, 50))
        rows = draw(
            st.lists(
                st.tuples(st.sampled_from(KEYS), st.integers(base, base + 80), VALUES),
                min_size=0, max_size=12,
            )
        )
        base += draw(st.integers(0, 15))
        out.append(Instant(pt, rows))
    return out


def record_of(row: tuple[Any, int, Any]) -> dict[str, Any]:
    return {"k": row[0], "t": row[1], "x": row[2]}
