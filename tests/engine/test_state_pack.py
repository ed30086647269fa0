"""``EngineState.pack`` / ``unpack``: the compact positional layout hosts encode (MessagePack
in the Spark runtime) restores exactly the state ``snapshot`` describes, dict orders included,
and a host that round-trips it between every call emits exactly what an uninterrupted engine
emits — for every window type, accumulation mode and aggregation function."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
import pytest

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine import Engine, EngineError, EngineState, RecordBatch

FNS = ("count", "sum", "min", "max", "mean", "first", "last", "collect", "count_distinct")

DEFINITIONS: dict[str, dict[str, Any]] = {
    "tumbling_early_late_retracting": {
        "window": {"type": "tumbling", "size": "10s"},
        "allowed_lateness": "10s",
        "trigger": {"emit": "custom", "early": {"count": 2}, "on_time": True,
                    "late": {"count": 1}},
        "accumulation": "retracting",
    },
    "hopping_discarding_timers": {
        "window": {"type": "hopping", "size": "10s", "step": "5s"},
        "allowed_lateness": "5s",
        "trigger": {"emit": "custom", "early": {"after": "2s"}, "late": {"after": "1s"}},
        "accumulation": "discarding",
    },
    "session_retracting": {
        "window": {"type": "session", "gap": "4s"},
        "allowed_lateness": "10s",
        "trigger": {"emit": "custom", "early": {"every": "2s"}, "on_time": True},
        "accumulation": "retracting",
    },
    "sliding_retracting": {
        "window": {"type": "sliding", "size": "5s"},
        "allowed_lateness": "8s",
        "trigger": {"emit": "custom", "early": {"count": 2}, "late": {"count": 1}},
        "accumulation": "retracting",
    },
    "global_key_scope": {
        "window": {"type": "global"},
        "watermark": {"delay": "2s", "scope": "key", "idle_advance": True},
        "trigger": {"emit": "custom", "early": {"after": "4s"}},
    },
    "tumbling_event_basis_final": {
        "lateness_basis": "event",
        "allowed_lateness": "5s",
    },
}


def _defn(**over: Any) -> Definition:
    base: dict[str, Any] = {
        "name": "t",
        "key": "team",
        "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "n", "fn": "count"}]
        + [{"name": f"x_{fn}", "fn": fn, "of": "x"} for fn in FNS],
    }
    base.update(over)
    return load_definition(base)


KEYS: list[Any] = ["a", "b", "é ü", 7, 2.5, True, None]
NUMBERS: list[Any] = [1, -3, 2**50, 0.1, -0.0, float("nan"), float("inf"), None]
VALUES: list[Any] = [*NUMBERS, "s", "ö", True]
NUMERIC_FNS = ("sum", "mean")


def _scenario(seed: int, n_steps: int = 30) -> list[tuple[str, Any]]:
    rnd = random.Random(seed)
    steps: list[tuple[str, Any]] = []
    pt = hi = 0
    for _ in range(n_steps):
        pt += rnd.choice([0, 500, 1000, 3000, 7000])
        steps.append(("pt", pt))
        rows = []
        for _ in range(rnd.randint(0, 5)):
            t = max(0, hi + rnd.randint(-15_000, 6_000))
            hi = max(hi, t)
            rows.append((rnd.choice(KEYS), t, rnd.choice(VALUES), rnd.choice(NUMBERS)))
        if rows:
            steps.append(("rows", rows))
    steps.append(("eof", None))
    return steps


def _batch(rows: list[tuple[Any, int, Any, Any]]) -> RecordBatch:
    return RecordBatch(
        keys=[r[0] for r in rows],
        event_times=np.array([r[1] for r in rows], dtype=np.int64),
        columns={f"x_{fn}": [r[3] if fn in NUMERIC_FNS else r[2] for r in rows] for fn in FNS},
        records=[{"team": r[0], "et": r[1], "x": r[2]} for r in rows],
    )


def _run(eng: Engine, steps: list[tuple[str, Any]],
         between: Callable[[Engine], Engine] | None = None) -> str:
    out: list[Any] = []
    for kind, arg in steps:
        if kind == "pt":
            ems = eng.advance_processing_time(arg)
        elif kind == "eof":
            ems = eng.end_of_input()
        else:
            ems = eng.ingest(_batch(arg))
        out += [e.to_json() for e in ems]
        if between is not None:
            eng = between(eng)
    return json.dumps(out)  # NaN-safe comparison (nan != nan as a value)


def _same(a: Any, b: Any) -> bool:
    """Equal as data, NaN equal to NaN, -0.0 distinct from 0.0, bool distinct from int."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _through_msgpack(st: EngineState) -> EngineState:
    return EngineState.unpack(msgspec.msgpack.decode(msgspec.msgpack.encode(st.pack())))


def _through_json(st: EngineState) -> EngineState:
    return EngineState.unpack(json.loads(json.dumps(st.pack())))


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("codec", [_through_msgpack, _through_json])
def test_pack_round_trip_between_every_call_changes_nothing(
        name: str, seed: int, codec: Callable[[EngineState], EngineState]) -> None:
    defn = _defn(**DEFINITIONS[name])
    steps = _scenario(seed)
    straight = _run(Engine(defn), steps)
    seen_windows = 0

    def restart(eng: Engine) -> Engine:
        nonlocal seen_windows
        snap = eng.state.snapshot()
        restored = codec(eng.state)
        assert _same(restored.snapshot(), snap)  # exact, dict orders included
        assert list(restored.keys) == list(eng.state.keys)
        for kj, ks in eng.state.keys.items():
            assert list(restored.keys[kj].windows) == list(ks.windows)
        seen_windows += eng.state.window_count
        return Engine(defn, restored)

    assert _run(Engine(defn), steps, between=restart) == straight
    assert seen_windows > 0
    assert '"pane"' in straight


def test_pack_shares_no_state_after_unpack() -> None:
    """unpack owns what it was given; the engine resumed from it does not touch the original
    engine's state (the host encodes ``pack()`` before running again)."""
    defn = _defn(**DEFINITIONS["sliding_retracting"])
    eng = Engine(defn)
    eng.ingest(_batch([("a", 1000, 1, 1), ("a", 2000, 2, 2)]))
    before = eng.state.snapshot()
    other = Engine(defn, _through_msgpack(eng.state))
    other.ingest(_batch([("a", 1500, 5, 5)]))
    assert eng.state.snapshot() == before


def test_unpack_rejects_other_versions_and_malformed_data() -> None:
    with pytest.raises(EngineError, match="version"):
        EngineState.unpack([1, 2, 3])
    with pytest.raises(EngineError, match="version"):
        EngineState.unpack({"version": 1})  # type: ignore[arg-type]
    with pytest.raises(EngineError, match="malformed"):
        EngineState.unpack([2, 0, None])
    good = EngineState()
    good.keys = {}
    p = good.pack()
    p[8] = [['"a"', "a", [], None, None, None, None, 0, 0, [[1, 2]]]]
    with pytest.raises(EngineError, match="malformed"):
        EngineState.unpack(p)


def test_make_pane_is_the_pane_constructor() -> None:
    from jobs.engine.records import Pane, make_pane

    args: list[tuple[Any, ...]] = [
        ("a", 0, 10, "EARLY", 0, True, False, False, {"n": 1}, 5, None),
        (None, None, None, "LATE", 3, False, True, True, {}, 7, 12, 1, 4),
        (1.5, -10, 0, "ON_TIME", 1, False, False, False, {"x": [1]}, 0, -3, None, None),
    ]
    for a in args:
        p, q = make_pane(*a), Pane(*a)
        assert type(p) is Pane and p == q and repr(p) == repr(q)  # (values: not hashable)
        assert p.to_json() == q.to_json() and p.type == "pane"
        with pytest.raises(AttributeError):
            p.key = "b"  # type: ignore[misc]
