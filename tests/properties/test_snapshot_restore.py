"""Snapshot -> JSON text -> restore at any point changes nothing.

Bytewax's promise ("The snapshot interval has no effect on windowing operator behavior when
there are no failures") and ours (architecture.md: ``state.snapshot()`` is JSON-serialisable
and ``EngineState.restore`` resumes exactly): a run interrupted before any arrival instant,
or just before end of input, and resumed from the JSON text of its snapshot in a NEW engine
emits exactly what the uninterrupted run emits, line for line.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from .drive import arrivals, definition, records, run, windows

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def trigger_and_mode(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    emit = draw(st.sampled_from(["final", "current", "custom"]))
    if emit != "custom":
        return {"emit": emit}, draw(st.sampled_from(["accumulating", "discarding"]))
    trigger = {
        "emit": "custom",
        "early": draw(st.sampled_from([{"count": 1}, {"every": 1500}, {"after": 2500}])),
        "on_time": draw(st.booleans()),
        "late": {"count": 1},
    }
    return trigger, draw(st.sampled_from(["accumulating", "discarding", "retracting"]))


@SETTINGS
@given(data=st.data())
def test_restore_anywhere_is_invisible(data: st.DataObject) -> None:
    recs = data.draw(records())
    window = data.draw(windows())
    instants = data.draw(arrivals(recs))
    trigger, accumulation = data.draw(trigger_and_mode())
    defn = definition(
        window,
        delay=data.draw(st.integers(0, 10)),
        lateness=data.draw(st.integers(0, 15)),
        trigger=trigger,
        accumulation=accumulation,
        basis=data.draw(st.sampled_from(["window", "event"])),
    )
    at = data.draw(st.integers(0, len(instants)))
    assert run(defn, instants, restore_before=at) == run(defn, instants)


@SETTINGS
@given(data=st.data())
def test_vectorized_restore_anywhere_is_invisible(data: st.DataObject) -> None:
    recs = data.draw(records())
    window = data.draw(windows(types=("tumbling", "hopping", "global")))
    instants = data.draw(arrivals(recs))
    aggs = [{"name": "n", "fn": "count"}, {"name": "s", "fn": "sum", "of": "x"},
            {"name": "m", "fn": "mean", "of": "x"}]
    defn = definition(
        window, delay=data.draw(st.integers(0, 10)), lateness=data.draw(st.integers(0, 15)),
        aggregations=aggs,
    )
    at = data.draw(st.integers(0, len(instants)))
    assert run(defn, instants, kind="vectorized", restore_before=at) == run(
        defn, instants, kind="vectorized"
    )
