"""The engine path on real Spark: sessions with early/late triggers in retracting mode, parity
with replay for the same arrival instants, the late sink, and state inspection at a snapshot.
Expected behaviour is replay's (itself checked by hand-written transcripts); the one documented
difference is the ``watermark`` field of panes fired by a count trigger during ingest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.definition import load_definition
from jobs.spark.context import JobContext
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import read_jsonl_dir
from .parity import canon, definition, replay_output, spark_panes, spark_run

pytestmark = pytest.mark.spark


def test_sessions_retracting_equal_replay_and_state_is_inspectable(
        spark: Any, tmp_path: Path, settings: Settings) -> None:
    defn = definition(tmp_path, {
        "key": "team", "event_time": "et", "window": {"type": "session", "gap": "10s"},
        "trigger": {"emit": "custom", "early": {"count": 2}, "on_time": True,
                    "late": {"count": 1}},
        "allowed_lateness": "20s", "accumulation": "retracting",
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
    }, "team STRING, score INT, et BIGINT")
    instants = [
        (1000, [{"team": "a", "score": 1, "et": 1000}, {"team": "b", "score": 2, "et": 2000}]),
        (2000, [{"team": "a", "score": 5, "et": 12000}, {"team": "a", "score": 3, "et": 5000}]),
        (3000, [{"team": "a", "score": 7, "et": 40000}]),
        # a@14000 extends a's closed-but-not-expired session (late, accepted, retraction);
        # b@3000: b's session [2000, 12000) expired at wm 40000 >= 12000 + 20000 -> dropped
        (4000, [{"team": "a", "score": 1, "et": 14000}, {"team": "b", "score": 1, "et": 3000}]),
        (5000, [{"team": "a", "score": 1, "et": 90000}]),
    ]
    runner, ctx = spark_run(spark, tmp_path, defn, instants, settings)
    assert not ctx.plan.native
    expected = replay_output(defn, instants)
    got = spark_panes(spark, ctx)
    assert any(p["retraction"] for p in got)
    assert canon(got, ("watermark",)) == canon(expected, ("watermark",))
    on_time = [p for p in got if p["timing"] == "ON_TIME"]
    assert canon(on_time) == canon([p for p in expected if p.get("timing") == "ON_TIME"])

    late = read_jsonl_dir(Path(ctx.late_path))
    assert [(x["key"], x["event_time"], x["reason"]) for x in late] == [('"b"', 3000, "expired")]
    assert sum(r.late_dropped for r in runner.reports) == 1
    assert sum(r.late_accepted for r in runner.reports) >= 1

    from jobs.spark.inspect import open_windows

    batch, windows = open_windows(spark, ctx)
    # at the end: a's session [40000, 50000) closed (wm 90000) but within lateness? 50000+20000
    # <= 90000 -> expired; only a@90000's session is open
    assert [(w["key"], w["window_start"], w["window_end"]) for w in windows] == [
        ("a", 90000, 100000)]
    _, earlier = open_windows(spark, ctx, batch_id=1)
    assert {(w["key"], w["window_start"]) for w in earlier} == {("a", 1000), ("b", 2000)}


def test_spark_analyzer_rejects_with_field_name(spark: Any, tmp_path: Path,
                                                settings: Settings) -> None:
    defn = load_definition({
        "name": "bad", "source": {"kind": "files", "path": str(tmp_path / "in"),
                                  "format": "json", "schema": "team STRING, note STRING, et TIMESTAMP"},
        "key": "team", "event_time": "et", "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "n", "fn": "count"}, {"name": "s", "fn": "sum", "of": "note"}],
    })
    (tmp_path / "in").mkdir()
    runner = JobRunner(spark, JobContext.create(defn, settings), RunOptions(until_idle=True))
    with pytest.raises(SparkRuntimeError) as err:
        runner.build()
    assert err.value.field == "aggregations[1].of"
    assert "numeric" in str(err.value)


# ------------------------------------------------------------ host pieces (no Spark needed)

def _engine_with_state(kind: str) -> Any:
    """An engine that has seen a few instants and holds open windows: ``general``,
    ``vectorized``, or ``handed_over`` (vectorized, handed over to the general engine by a
    float in an int sum)."""
    import numpy as np

    from jobs.engine import RecordBatch, make_engine

    spec: dict[str, Any] = {
        "name": "t", "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
    }
    if kind == "general":
        spec.update({"allowed_lateness": "10s", "accumulation": "retracting",
                     "trigger": {"emit": "custom", "early": {"count": 2}, "on_time": True,
                                 "late": {"count": 1}}})
    defn = load_definition(spec)
    eng = make_engine(defn, None, "external")
    for i in range(4):
        eng.ingest(RecordBatch(
            keys=["a", "b", "é", "a"], event_times=np.array([1000, 2000, 3000, 4000]) + 7000 * i,
            columns={"total": [1, 2, 3, 4] if kind == "vectorized" else [1, 2.5, -0.0, float("nan")]},
            processing_time=100 * (i + 1)))
        eng.advance_watermark(5000 * i)
    return defn, eng


@pytest.mark.parametrize("kind", ["general", "vectorized", "handed_over"])
def test_state_blob_round_trips_exactly_and_old_blobs_still_restore(kind: str) -> None:
    import json
    import zlib

    from jobs.engine import make_engine
    from jobs.spark.engine_path.state_blob import blob_token, decode_state, encode_state

    defn, eng = _engine_with_state(kind)
    snap = json.dumps(eng.state.snapshot())  # text: NaN compares equal as text
    blob, token = encode_state(eng.state)
    assert blob[0] == (2 if kind == "vectorized" else 1) and token is not None
    assert blob_token(blob) == token
    assert json.dumps(decode_state(blob, type(eng.state)).snapshot()) == snap
    probe = type(make_engine(defn, None, "external").state)  # what the host passes
    assert json.dumps(make_engine(defn, decode_state(blob, probe), "external").state.snapshot()
                      ) == snap
    assert encode_state(eng.state)[1] != token  # a new token per save
    # a blob written before the tags: zlib-compressed JSON snapshot
    old = zlib.compress(json.dumps(eng.state.snapshot(), separators=(",", ":")).encode(), 1)
    assert blob_token(old) is None
    assert json.dumps(decode_state(old, type(eng.state)).snapshot()) == snap
    restored = make_engine(defn, decode_state(blob, type(eng.state)), "external")
    from_old = make_engine(defn, decode_state(old, type(eng.state)), "external")
    assert json.dumps([e.to_json() for e in restored.end_of_input()]) == json.dumps(
        [e.to_json() for e in from_old.end_of_input()])


def test_state_messagepack_cannot_hold_falls_back_to_the_json_blob() -> None:
    import json

    from jobs.engine import EngineState
    from jobs.spark.engine_path.state_blob import blob_token, decode_state, encode_state

    _, eng = _engine_with_state("general")
    st = eng.state
    assert st.keys
    w = next(iter(next(iter(st.keys.values())).windows.values()))
    w.accs[0] = 2**70  # an int sum beyond 64 bits
    st.keys['"\ud800"'] = st.keys.pop(next(iter(st.keys)))  # a lone surrogate in a key json
    blob, token = encode_state(st)
    assert token is None and blob_token(blob) is None and blob[0] == 0x78
    assert json.dumps(decode_state(blob, EngineState).snapshot()) == json.dumps(st.snapshot())


def test_unreadable_state_blob_is_an_engine_error() -> None:
    from jobs.engine import EngineError, EngineState
    from jobs.spark.engine_path.state_blob import decode_state

    with pytest.raises(EngineError, match="not readable"):
        decode_state(b"\x07garbage", EngineState)


def _reference_frame(emissions: list[Any], late_counts: list[dict[str, Any]]) -> Any:
    """The output rows as the engine host built them before (through ``to_json``)."""
    import json

    import pandas as pd

    from jobs.engine.records import key_json
    from jobs.spark.engine_path.output import OUT_COLUMNS

    rows: list[dict[str, Any]] = []
    empty = dict.fromkeys(OUT_COLUMNS)
    for seq, e in enumerate(emissions):
        obj = e.to_json()
        if obj["type"] == "pane":
            rows.append({
                **empty, "kind": "pane", "seq": seq, "key": key_json(obj["key"]),
                "window_start": obj["window_start"], "window_end": obj["window_end"],
                "first_event_time": obj.get("first_event_time"),
                "last_event_time": obj.get("last_event_time"), "timing": obj["timing"],
                "pane_index": obj["pane_index"], "is_first": obj["is_first"],
                "is_last": obj["is_last"], "retraction": obj["retraction"],
                "values": json.dumps(obj["values"], separators=(",", ":"), ensure_ascii=False),
                "emitted_at": obj["emitted_at"], "watermark": obj["watermark"],
            })
        else:
            rows.append({**empty, "kind": obj["type"], "seq": seq,
                         "payload": json.dumps(obj, ensure_ascii=False, default=str)})
    for c in late_counts:
        rows.append({**empty, "kind": "late_count", "seq": len(rows),
                     "payload": json.dumps(c, ensure_ascii=False, default=str)})
    return pd.DataFrame(rows, columns=OUT_COLUMNS)


def _pane(**over: Any) -> Any:
    from jobs.engine.records import Pane

    base: dict[str, Any] = dict(
        key="a", window_start=0, window_end=10, timing="ON_TIME", pane_index=0, is_first=True,
        is_last=False, retraction=False, values={"total": 3, "n": 1}, emitted_at=5,
        watermark=12)
    base.update(over)
    return Pane(**base)


@pytest.mark.parametrize("case", ["panes", "mixed", "sessions", "late_only", "odd_values"])
def test_output_frame_equals_the_to_json_rows(case: str) -> None:
    import numpy as np
    import pandas as pd

    from jobs.engine.records import LateRecord
    from jobs.spark.engine_path.output import emission_frame

    late = LateRecord(key="é", event_time=3, window_start=0, window_end=10, reason="expired",
                      record={"team": "é", "x": 1})
    counts = [{"key": "é", "window_start": 0, "window_end": 10, "accepted": 0, "dropped": 1}]
    panes = [_pane(), _pane(key=7, values={"total": 2.5, "n": 2}, watermark=None),
             _pane(key=None, window_start=None, window_end=None, retraction=True),
             _pane(key=True, values={"total": -0.0, "n": 0}),
             _pane(key=1.5, values={"total": 1e16, "n": 2**70})]
    emissions: list[Any]
    lc: list[dict[str, Any]] = []
    if case == "panes":
        emissions = panes
    elif case == "mixed":
        emissions, lc = [late, *panes, late], counts
    elif case == "sessions":
        emissions = [_pane(first_event_time=1, last_event_time=4),
                     _pane(key="b", first_event_time=2, last_event_time=2, watermark=None)]
    elif case == "late_only":
        emissions, lc = [late], counts
    else:
        emissions = [_pane(values={"a": float("nan"), "b": float("inf"), "c": float("-inf"),
                                   "d": "x\"\n\u2028é", "e": None, "f": [1, "é", None],
                                   "g": True, "h": np.int64(4), "é": 0.1}),
                     _pane(values={"m": np.float64(2.5), "n": False})]
    got = emission_frame(emissions, lc)
    pd.testing.assert_frame_equal(got, _reference_frame(emissions, lc))
    assert emission_frame([], []) is None


@pytest.mark.parametrize(("buckets", "partitions"), [(2, 2), (4, 2), (3, 4), (16, 8)])
def test_spread_bucket_keys_share_the_partitions_evenly(
        spark: Any, buckets: int, partitions: int) -> None:
    from pyspark.sql import functions as F

    from jobs.spark.engine_path.buckets import spread_bucket_keys

    keys = spread_bucket_keys(buckets, partitions)
    assert len(set(keys)) == buckets
    df = spark.createDataFrame([(v,) for v in keys], "v BIGINT")
    placed = [r[0] for r in df.select(F.pmod(F.hash("v"), F.lit(partitions))).collect()]
    assert placed == [i % partitions for i in range(buckets)]  # Spark's own hash agrees


def test_bucket_layout_is_fixed_by_the_checkpoint(spark: Any, tmp_path: Path) -> None:
    import json

    from jobs.spark.engine_path.buckets import LAYOUT_FILE, bucket_layout, spread_bucket_keys

    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    new = tmp_path / "new"
    assert bucket_layout(spark, str(new), 2) == (2, spread_bucket_keys(2, parts))
    assert bucket_layout(spark, f"file:{new}", 6) == (2, spread_bucket_keys(2, parts))  # pinned
    old = tmp_path / "old"
    (old / "offsets").mkdir(parents=True)
    (old / "offsets" / "0").write_text("v1\n{}\n")
    assert bucket_layout(spark, str(old), 3) == (3, None)  # ran before layout files: 0..n-1
    assert bucket_layout(spark, str(old), 5) == (3, None)
    assert json.loads((old / LAYOUT_FILE).read_text())["keys"] is None


def test_engine_path_dead_letters_equal_the_gates(spark: Any, tmp_path: Path,
                                                  settings: Settings) -> None:
    """The engine path splits dead letters off inside the stateful processor (from pandas);
    the native path still runs the gate (from Arrow). Same input, so the same dead letters,
    byte for byte (reason and record text), for every flat column type, nulls and NaN
    included; dead letters do not move the watermark (a key-less record from far in the
    future closes nothing); a batch holding only dead letters writes them and nothing else."""
    from .conftest import land

    t0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    future = "2027-06-01T00:00:00Z"
    good = {"team": "a", "score": 1, "ratio": 0.5, "ok": True, "amount": 1.5, "day": "2026-01-01",
            "et": "2026-01-01T00:00:01Z", "big": 2**40}
    land(tmp_path / "in", [
        [good,
         {**good, "team": None, "score": None, "ratio": float("nan"), "et": future},
         {**good, "team": None, "ok": None, "amount": None, "day": None, "big": None},
         {**good, "et": None, "team": "é\u2028\"x\\", "ratio": None, "score": -3},
         {**good, "team": None, "et": None, "ratio": 1e300},
         "garbage{ \"é\"",
         {**good, "team": "b", "et": "2026-01-01T00:00:03.123456Z"}],
        ["{broken", {**good, "team": None, "et": "1969-12-31T23:59:59.999Z"}],
        [{**good, "et": "2026-01-01T00:00:30Z"}],
    ])
    dead: dict[bool, list[tuple[str, str]]] = {}
    for engine in (False, True):
        defn = load_definition({
            "name": f"dl_{int(engine)}",
            "source": {"kind": "files", "path": str(tmp_path / "in"), "format": "json",
                       "schema": "team STRING, score INT, ratio DOUBLE, ok BOOLEAN, "
                                 "amount DECIMAL(10,2), day DATE, et TIMESTAMP, big BIGINT"},
            "key": "team", "event_time": "et",
            "window": {"type": "tumbling", "size": "10s"},
            "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                             {"name": "n", "fn": "count"}],
        })
        ctx = JobContext.create(defn, settings, force_engine=engine)
        assert ctx.plan.native is not engine
        runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
        assert runner.run() == "idle"
        rows = read_jsonl_dir(Path(ctx.dead_letter_path))
        assert {(d["job"], d["version"], d["store"]) for d in rows} == {
            (ctx.job, ctx.version, ctx.store)}
        dead[engine] = sorted((d["reason"], d["record"]) for d in rows)
        by_batch = {r.batch_id: r.dead_letters for r in runner.reports if r.dead_letters}
        assert by_batch == {0: 5, 1: 2}
        if engine:
            panes = spark.read.parquet(ctx.panes_path).collect()
            assert sorted((p["key"], p["window_start"] - t0) for p in panes) == [
                ('"a"', 0), ('"b"', 0)]
            assert all(p["watermark"] < t0 + 60_000 for p in panes)
    assert dead[True] == dead[False]
    assert len(dead[True]) == 7
