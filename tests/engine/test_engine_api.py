"""The Engine API as hosts use it: columnar batches of many keys, snapshots that restore
exactly (and resume to the same output), open windows, late counts, external watermarks."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from jobs.definition import load_definition
from jobs.definition.model import Aggregation, Definition, Window
from jobs.engine import Engine, EngineError, EngineState, RecordBatch, make_engine

Step = tuple[str, Any]


def _defn(**over: Any) -> Definition:
    base: dict[str, Any] = {
        "name": "t",
        "key": "team",
        "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "score"}],
    }
    base.update(over)
    return load_definition(base)


def _batch(rows: list[tuple[Any, int, int]], pt: int | None = None) -> RecordBatch:
    """rows of (key, event time, score)."""
    return RecordBatch(
        keys=[r[0] for r in rows],
        event_times=np.array([r[1] for r in rows], dtype=np.int64),
        columns={"total": [r[2] for r in rows]},
        records=[{"team": r[0], "et": r[1], "score": r[2]} for r in rows],
        processing_time=pt,
    )


def _run(eng: Engine, steps: list[Step], between: Callable[[Engine], Engine] | None = None
         ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, arg in steps:
        if kind == "pt":
            ems = eng.advance_processing_time(arg)
        elif kind == "wm":
            ems = eng.advance_watermark(arg)
        elif kind == "eof":
            ems = eng.end_of_input()
        else:
            ems = eng.ingest(_batch(arg))
        out += [e.to_json() for e in ems]
        if between is not None:
            eng = between(eng)
    return out


def _scenario(seed: int, n_steps: int = 40) -> list[Step]:
    rnd = random.Random(seed)
    steps: list[Step] = []
    pt = 0
    hi = 0
    for _ in range(n_steps):
        pt += rnd.choice([0, 500, 1000, 3000, 7000])
        steps.append(("pt", pt))
        rows = []
        for _ in range(rnd.randint(0, 4)):
            t = max(0, hi + rnd.randint(-15_000, 6_000))
            hi = max(hi, t)
            rows.append((rnd.choice(["a", "b", "c"]), t, rnd.randint(-3, 9)))
        if rows:
            steps.append(("rows", rows))
    steps.append(("eof", None))
    return steps


DEFINITIONS: dict[str, dict[str, Any]] = {
    "session_retracting_early_every": {
        "window": {"type": "session", "gap": "4s"},
        "allowed_lateness": "10s",
        "trigger": {"emit": "custom", "early": {"every": "2s"}, "on_time": True},
        "accumulation": "retracting",
    },
    "sliding_late_after": {
        "window": {"type": "sliding", "size": "5s"},
        "allowed_lateness": "8s",
        "trigger": {"emit": "custom", "early": {"count": 2}, "late": {"after": "3s"}},
        "accumulation": "discarding",
    },
    "hopping_key_scope_idle": {
        "window": {"type": "hopping", "size": "10s", "step": "5s"},
        "watermark": {"delay": "2s", "scope": "key", "idle_advance": True},
        "allowed_lateness": "5s",
        "trigger": {"emit": "current"},
    },
    "global_early_after": {
        "window": {"type": "global"},
        "trigger": {"emit": "custom", "early": {"after": "4s"}},
    },
    "tumbling_final_event_basis": {
        "lateness_basis": "event",
        "allowed_lateness": "5s",
    },
}


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
@pytest.mark.parametrize("seed", [1, 2])
def test_snapshot_restore_resumes_to_the_same_output(name: str, seed: int) -> None:
    """A host that snapshots after every call (through JSON) and restores into a fresh engine
    emits exactly what an uninterrupted engine emits."""
    defn = _defn(**DEFINITIONS[name])
    steps = _scenario(seed)
    straight = _run(Engine(defn), steps)

    def restart(eng: Engine) -> Engine:
        snap = eng.state.snapshot()
        text = json.dumps(snap)
        restored = EngineState.restore(json.loads(text), copy_data=False)
        assert restored.snapshot() == snap  # exact round trip
        assert EngineState.restore(snap).snapshot() == snap
        return Engine(defn, restored)

    assert _run(Engine(defn), steps, between=restart) == straight
    assert any(o["type"] == "pane" for o in straight)


def test_snapshot_is_a_copy() -> None:
    eng = Engine(_defn())
    eng.ingest(_batch([("a", 1000, 1)]))
    snap = eng.state.snapshot()
    eng.ingest(_batch([("a", 2000, 5)]))
    assert EngineState.restore(snap).keys['"a"'].windows[0].elements == 1


def test_restore_rejects_unknown_version() -> None:
    with pytest.raises(EngineError, match="version"):
        EngineState.restore({"version": 99})


def test_final_panes_of_one_unit_do_not_depend_on_its_order() -> None:
    """Nothing is late here, so the last pane of every session is the same whatever the order
    and split of the units; the early panes (count 2, checked after each record of a key)
    do follow the key's record order (docs/semantics.md, "Arrival model")."""
    defn = _defn(
        window={"type": "session", "gap": "3s"},
        allowed_lateness="5s",
        trigger={"emit": "custom", "early": {"count": 2}, "on_time": True},
        accumulation="retracting",
        watermark={"delay": "1m"},  # nothing is late, so any split into instants is equal
    )
    rows = [("a", t * 1000 + 7, t) for t in [0, 2, 4, 9, 11, 30, 1, 5]] + [("b", 3000, 1)]
    results = []
    for seed in range(4):
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        eng = Engine(defn)
        out = eng.ingest(_batch(shuffled[:5]))
        out += eng.advance_processing_time(1000)
        out += eng.ingest(_batch(shuffled[5:]))
        out += eng.end_of_input()
        # the instant split changes with the shuffle; the final totals must not
        results.append(sorted(
            (o.window_start, o.values["total"]) for o in out
            if o.type == "pane" and o.is_last
        ))
    assert all(r == results[0] for r in results)
    one = Engine(defn)
    a = [e.to_json() for e in one.ingest(_batch(rows)) + one.end_of_input()]
    two = Engine(defn)
    b = [e.to_json() for e in two.ingest(_batch(rows[::-1])) + two.end_of_input()]

    def last(out: list[dict[str, object]]) -> list[tuple[object, object]]:
        return sorted((o["window_start"], o["values"]) for o in out  # type: ignore[misc]
                      if o["is_last"] and not o["retraction"])

    assert last(a) == last(b)
    early = [o for o in a if o["timing"] == "EARLY" and not o["retraction"]]
    assert early != [o for o in b if o["timing"] == "EARLY" and not o["retraction"]]


def test_many_keys_in_one_batch() -> None:
    rnd = random.Random(7)
    rows = [(f"k{rnd.randrange(300)}", rnd.randrange(0, 60_000), rnd.randrange(10))
            for _ in range(5000)]
    eng = Engine(_defn())
    panes = eng.ingest(_batch(rows)) + eng.end_of_input()
    by_key: dict[str, int] = {}
    for key, _, score in rows:
        by_key[key] = by_key.get(key, 0) + score
    got: dict[str, int] = {}
    for p in panes:
        got[p.key] = got.get(p.key, 0) + p.values["total"]  # type: ignore[union-attr]
    assert got == by_key
    assert sum(p.values["n"] for p in panes) == 5000  # type: ignore[union-attr]


def test_open_windows_and_late_counts() -> None:
    eng = Engine(_defn(allowed_lateness="20s", trigger={"emit": "custom", "on_time": True}))
    eng.ingest(_batch([("a", 1000, 2), ("b", 3000, 4)], pt=1))
    rows = eng.open_windows()
    assert [(r["key"], r["window_start"], r["window_end"], r["elements"], r["values"])
            for r in rows] == [("a", 0, 10000, 1, {"n": 1, "total": 2}),
                               ("b", 0, 10000, 1, {"n": 1, "total": 4})]
    eng.ingest(_batch([("a", 15_000, 1)], pt=2))  # wm 15000: [0,10000) late, not expired
    eng.ingest(_batch([("a", 2000, 1), ("b", 2500, 1)], pt=3))  # two accepted late
    eng.ingest(_batch([("a", 31_000, 1)], pt=4))  # wm 31000: [0,10000) expired
    eng.ingest(_batch([("a", 500, 1), ("a", 600, 1)], pt=5))  # two dropped
    assert eng.drain_late_counts() == [
        {"key": "a", "window_start": 0, "window_end": 10000, "accepted": 1, "dropped": 2},
        {"key": "b", "window_start": 0, "window_end": 10000, "accepted": 1, "dropped": 0},
    ]
    assert eng.drain_late_counts() == []
    assert eng.late_totals() == [
        {"key": "a", "accepted": 1, "dropped": 2},
        {"key": "b", "accepted": 1, "dropped": 0},  # b holds no window any more
    ]


def test_external_watermark_is_driven_by_the_host() -> None:
    eng = Engine(_defn(), watermark="external")
    assert eng.ingest(_batch([("a", 1000, 1), ("a", 50_000, 1)])) == []
    assert eng.max_event_time == 50_000
    panes = eng.advance_watermark(10_000)
    assert [(p.window_start, p.values["n"]) for p in panes] == [(0, 1)]  # type: ignore[union-attr]
    assert eng.advance_watermark(9_000) == []  # never back


def test_watermark_calls_are_checked() -> None:
    eng = Engine(_defn())
    with pytest.raises(EngineError, match="source"):
        eng.advance_watermark(5)
    eng.end_of_input()
    with pytest.raises(EngineError, match="ended"):
        eng.ingest(_batch([("a", 1, 1)]))


def test_batch_processing_time_fires_due_timers_first() -> None:
    eng = Engine(_defn(trigger={"emit": "custom", "early": {"after": "5s"}, "on_time": True},
                       watermark={"delay": "1m"}))
    eng.advance_processing_time(1000)
    eng.ingest(_batch([("a", 1000, 1)]))
    out = eng.ingest(_batch([("a", 2000, 1)], pt=6000))
    assert [(p.timing, p.values["n"], p.emitted_at) for p in out] == [  # type: ignore[union-attr]
        ("EARLY", 1, 6000)
    ]


def test_batch_shape_is_checked() -> None:
    with pytest.raises(ValueError, match="event_times"):
        RecordBatch(keys=["a"], event_times=np.array([1, 2]))
    eng = Engine(_defn())
    with pytest.raises(EngineError, match="total"):
        eng.ingest(RecordBatch(keys=["a"], event_times=np.array([1])))


def test_engine_refuses_impossible_windows() -> None:
    bad = Definition(name="x", window=Window(type="hopping", size=10, step=20),
                     aggregations=(Aggregation(name="n", fn="count"),))
    with pytest.raises(EngineError, match="window.step"):
        Engine(bad)
    with pytest.raises(EngineError, match="window.gap"):
        Engine(Definition(name="x", window=Window(type="session"),
                          aggregations=(Aggregation(name="n", fn="count"),)))


def test_make_engine_picks_the_fast_path_only_when_it_qualifies() -> None:
    session = make_engine(_defn(window={"type": "session", "gap": "1s"}))
    assert type(session).__name__ == "SessionKernelEngine"
    sliding = make_engine(_defn(window={"type": "sliding", "size": "1s"}))
    assert type(sliding).__name__ == "SlidingKernelEngine"
    collect = [{"name": "all", "fn": "collect", "of": "score"}]
    final = make_engine(_defn(window={"type": "sliding", "size": "1s"}, aggregations=collect))
    assert type(final).__name__ == "SlidingKernelEngine"
    triggered = make_engine(_defn(window={"type": "sliding", "size": "1s"},
                                  aggregations=collect, trigger={"emit": "current"}))
    assert type(triggered).__name__ == "SlidingTriggerEngine"
    keyed_sliding = make_engine(_defn(window={"type": "sliding", "size": "1s"},
                                      aggregations=collect, trigger={"emit": "current"},
                                      watermark={"scope": "key"}))
    assert type(keyed_sliding).__name__ == "SlidingTriggerEngine"
    keyed = make_engine(_defn(aggregations=collect, trigger={"emit": "current"},
                              watermark={"scope": "key"}))
    assert type(keyed).__name__ == "TriggeredEngine"
    assert isinstance(make_engine(_defn(), vectorized=False), Engine)
    fast = make_engine(_defn())
    assert type(fast).__name__ == "VectorizedEngine"
    # idle advance of the one watermark
    for trigger, name in (({"emit": "final"}, "SlidingKernelEngine"),
                          ({"emit": "current"}, "SlidingTriggerEngine")):
        eng = make_engine(_defn(window={"type": "sliding", "size": "1s"}, trigger=trigger,
                                aggregations=collect, watermark={"idle_advance": True}))
        assert type(eng).__name__ == name


def test_numpy_columns_and_keys_keep_state_json() -> None:
    """Columnar hosts hand in numpy arrays and scalars; state and output stay plain JSON."""
    eng = Engine(_defn(key="team"))
    batch = RecordBatch(
        keys=list(np.array([7, 7, 8])),
        event_times=np.array([1000, 2000, 3000]),
        columns={"total": np.array([1, 2, 3], dtype=np.int64)},
    )
    eng.ingest(batch)
    json.dumps(eng.state.snapshot())
    panes = eng.end_of_input()
    assert [p.to_json()["key"] for p in panes] == [7, 8]
    assert [p.values["total"] for p in panes] == [3, 3]  # type: ignore[union-attr]
    assert json.dumps([p.to_json() for p in panes])
