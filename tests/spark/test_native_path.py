"""The native path end to end on real Spark: panes, dead letters, late records, bookkeeping.

Expected values are worked out by hand from docs/semantics.md (see comments)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.definition import load_definition
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import land, read_jsonl_dir
from .parity import canon, replay_output, spark_panes

pytestmark = pytest.mark.spark

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _defn(tmp: Path, **extra: Any) -> Any:
    return load_definition({
        "name": "scores",
        "source": {"kind": "files", "path": str(tmp / "in"), "format": "json",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
        **extra,
    })


def test_native_tumbling_final_dead_letters_and_late(spark: Any, tmp_path: Path,
                                                     settings: Settings) -> None:
    # instant 0: a@1s, b@2s, an unparsable line, a record without key -> wm 2s
    # instant 1: a@12s -> wm 12s: [0,10s) closes for a {1,1} and b {2,1}
    # instant 2: a@3s is for [0,10s), expired (wm 12s >= 10s + 0) -> late "expired";
    #            a@25s -> wm 25s: [10s,20s) closes for a {5,1}
    land(tmp_path / "in", [
        [{"team": "a", "score": 1, "et": "2026-01-01T00:00:01Z"},
         {"team": "b", "score": 2, "et": "2026-01-01T00:00:02Z"},
         "garbage{",
         {"team": None, "score": 1, "et": "2026-01-01T00:00:01Z"}],
        [{"team": "a", "score": 5, "et": "2026-01-01T00:00:12Z"}],
        [{"team": "a", "score": 7, "et": "2026-01-01T00:00:03Z"},
         {"team": "a", "score": 1, "et": "2026-01-01T00:00:25Z"}],
    ])
    defn = _defn(tmp_path)
    ctx = JobContext.create(defn, settings)
    assert ctx.plan.native
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
    assert runner.run() == "idle"

    panes = spark_panes(spark, ctx)
    got = {(p["key"], p["window_start"] - T0): (p["values"], p["timing"], p["watermark"] - T0)
           for p in panes}
    assert got == {
        ("a", 0): ({"total": 1, "n": 1}, "ON_TIME", 12_000),
        ("b", 0): ({"total": 2, "n": 1}, "ON_TIME", 12_000),
        ("a", 10_000): ({"total": 5, "n": 1}, "ON_TIME", 25_000),
    }
    assert all(p["is_last"] and p["pane_index"] == 0 and not p["retraction"] for p in panes)
    rows = spark.read.parquet(ctx.panes_path).collect()
    assert {(r["job"], r["version"], r["store"]) for r in rows} == {("scores", 1, ctx.store)}

    dead = read_jsonl_dir(Path(ctx.dead_letter_path))
    assert sorted(d["reason"] for d in dead) == [
        "key is null or did not evaluate", "unparsable record"]
    late = read_jsonl_dir(Path(ctx.late_path))
    assert [(x["key"], x["event_time"] - T0, x["window_start"] - T0, x["reason"])
            for x in late] == [('"a"', 3000, 0, "expired")]

    by_batch = {r.batch_id: r for r in runner.reports}
    assert by_batch[0].dead_letters == 2 and by_batch[0].input_rows == 4
    assert by_batch[2].late_dropped == 1
    assert by_batch[2].watermark == T0 + 25_000


def test_native_equals_replay_final_panes(spark: Any, tmp_path: Path, settings: Settings) -> None:
    """Hopping + allowed lateness: late-but-not-expired records are accepted, expired dropped;
    every final pane equals replay's for the same arrival instants (emitted_at aside: Spark
    emits a window in the micro-batch after the one whose records closed it)."""
    from .parity import definition, spark_run

    defn = definition(tmp_path, {
        "key": "k", "event_time": "et",
        "window": {"type": "hopping", "size": "10s", "step": "5s"},
        "allowed_lateness": "5s",
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}, {"name": "lo", "fn": "min", "of": "v"},
                         {"name": "avg", "fn": "mean", "of": "v"}],
    }, "k STRING, v INT, et BIGINT")
    instants = [
        (1000, [{"k": "x", "v": 1, "et": 1000}, {"k": "y", "v": 4, "et": 6000}]),
        (2000, [{"k": "x", "v": 2, "et": 14000}]),
        # wm 14s: [0,10s) is late (accepted, end+5s > 14s); [-5s,5s) expired for et 3000
        (3000, [{"k": "x", "v": 3, "et": 3000}, {"k": "y", "v": 5, "et": 31000}]),
        (4000, [{"k": "x", "v": 9, "et": 7000}]),  # wm 31s: all its windows expired
    ]
    runner, ctx = spark_run(spark, tmp_path, defn, instants, settings)
    assert ctx.plan.native
    expected = replay_output(defn, instants)
    assert len([e for e in expected if e["type"] == "pane"]) >= 5
    assert canon(spark_panes(spark, ctx), drop=("emitted_at",)) == canon(
        expected, drop=("emitted_at",))
    # emitted_at is the timestamp of the batch that emitted the pane, as its offsets log
    # entry records it (a re-run batch writes the same value); the watermark is docs/semantics.md's
    # watermark before that batch
    from jobs.spark.checkpoint import read_batch_info

    rows = spark.read.parquet(ctx.panes_path).select("batch_id", "emitted_at", "watermark").collect()
    assert rows
    for r in rows:
        info = read_batch_info(ctx.checkpoint, r.batch_id)
        assert r.emitted_at == info.timestamp_ms
        assert r.watermark == runner._to_ours(info.watermark_ms)
    late = read_jsonl_dir(Path(ctx.late_path))
    want_late = sorted((e["event_time"], e["window_start"]) for e in expected if e["type"] == "late")
    assert sorted((x["event_time"], x["window_start"]) for x in late) == want_late
    assert sum(r.late_accepted for r in runner.reports) >= 1


def _use_gate(monkeypatch: pytest.MonkeyPatch, gate: str) -> None:
    """Run the next job with the Python gate (mapInArrow) or the JVM gate (the default)."""
    if gate == "python":
        monkeypatch.setenv("TIDEMARK_GATE", "python")
    else:
        monkeypatch.delenv("TIDEMARK_GATE", raising=False)


def _side_files(root: Path) -> dict[str, list[str]]:
    """Every line the gate wrote, per (kind, batch), sorted (line order within a file is not
    part of the contract; content is)."""
    out: dict[str, list[str]] = {}
    for kind in ("dead_letters", "late", "late_counts"):
        for f in sorted((root / kind).glob("batch_id=*/part-*.jsonl")):
            key = f"{kind}/{f.parent.name}"
            out[key] = sorted([*out.get(key, []), *f.read_text(encoding="utf-8").splitlines()])
    return out


@pytest.mark.parametrize("basis", ["window", "event"])
def test_jvm_gate_writes_what_the_python_gate_writes(
    spark: Any, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch, basis: str,
) -> None:
    """The JVM gate (Spark SQL + Java) and the Python gate (mapInArrow) make the same decisions
    and write byte-identical dead letters, late records and late counts — for awkward values:
    floats Python prints in exponent form, NaN, -0.0, decimals, dates, sub-millisecond and
    pre-1970 timestamps, arrays / maps / structs, control characters, DEL, non-BMP text
    (NaN and infinities echoed as the strings "NaN", "Infinity", "-Infinity")."""
    awkward = {"ratio": 1e300, "f": 0.1, "amount": "12.50", "day": "2026-01-02",
               "tags": ["x", "é\u2028\"\\"], "attrs": {"k": 1, "z": None},
               "inner": {"a": 1, "b": "\u007f\u0001\U0001f600"}}
    land(tmp_path / "in", [
        [{"team": "a", "score": 1, "et": "2026-01-01T00:00:01Z", **awkward},
         {"team": "b\U0001f600", "score": 2, "et": "2026-01-01T00:00:02.5Z", "ratio": 1e-7},
         "garbage{ \"é\"",
         {"team": None, "score": 1, "et": "2026-01-01T00:00:01Z", "ratio": 1e16, **{
             k: v for k, v in awkward.items() if k != "ratio"}},
         {"team": "c", "score": 1, "et": None, "ratio": float("nan"), "f": -0.0}],
        [{"team": "a", "score": 5, "et": "2026-01-01T00:00:22Z", "ratio": 1e15}],
        # wm 22s: [0,10s) expired, [5s,15s) late: a@7s is accepted late in [5s,15s) under the
        # window basis and dropped from [0,10s); before_watermark under the event basis
        [{"team": "a", "score": 7, "et": "2026-01-01T00:00:07.000999Z", **awkward},
         {"team": "b\U0001f600", "score": 3, "et": "2026-01-01T00:00:13Z", "ratio": 123.0},
         {"team": "z", "score": 3, "et": "1969-12-31T23:59:59.999Z", "ratio": -2.5e-5},
         {"team": "z", "score": 4, "et": "2026-01-01T00:00:03Z", "ratio": float("-inf"),
          "f": float("inf")},
         {"team": "a", "score": 1, "et": "2026-01-01T00:00:40Z"}],
    ])
    lines: dict[str, dict[str, list[str]]] = {}
    for gate in ("python", "jvm"):
        _use_gate(monkeypatch, gate)
        defn = load_definition({
            "name": f"g_{gate}_{basis}",
            "source": {"kind": "files", "path": str(tmp_path / "in"), "format": "json",
                       "schema": "team STRING, score INT, ratio DOUBLE, f FLOAT, "
                                 "amount DECIMAL(10,2), day DATE, et TIMESTAMP, "
                                 "tags ARRAY<STRING>, attrs MAP<STRING,INT>, "
                                 "inner STRUCT<a: INT, b: STRING>"},
            "key": "team", "event_time": "et",
            "window": {"type": "hopping", "size": "10s", "step": "5s"},
            "allowed_lateness": "5s", "lateness_basis": basis,
            "aggregations": [{"name": "total", "fn": "sum", "of": "score"}],
        })
        ctx = JobContext.create(defn, settings)
        assert ctx.plan.native
        runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
        assert runner.run() == "idle"
        assert runner.gate_kind == gate
        lines[gate] = {k: [ln.replace(ctx.store, "STORE").replace(ctx.job, "JOB") for ln in v]
                       for k, v in _side_files(Path(ctx.output_root)).items()}
        reports = {r.batch_id: r for r in runner.reports}
        assert reports[0].dead_letters == 3
        assert reports[2].late_dropped >= 1
    assert lines["jvm"] == lines["python"]
    echoed = "".join(ln for v in lines["jvm"].values() for ln in v)
    assert '\\"ratio\\":\\"-Infinity\\"' in echoed and '\\"ratio\\":\\"NaN\\"' in echoed
    def strict(text: str) -> Any:
        raise ValueError(f"bare {text} in a side file")

    for ln in (ln for v in lines["jvm"].values() for ln in v):  # strict JSON, record text too
        record = json.loads(ln, parse_constant=strict).get("record")
        if record is not None and not record.startswith("garbage"):
            json.loads(record, parse_constant=strict)
    assert {k.split("/")[0] for k in lines["jvm"]} == {"dead_letters", "late", "late_counts"}


@pytest.mark.parametrize("gate", ["python", "jvm"])
def test_a_restarted_batch_keeps_no_side_file_of_its_earlier_attempt(
    spark: Any, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch, gate: str,
) -> None:
    """A batch that runs again after a crash may give a partition index other records than
    its first attempt did (Kafka's partitions may come in another order when a batch is
    replayed from the offset log), or none to write: the JVM gate writes only where a record
    is malformed or late. So the restart clears the unfinished batch's side files first. Here
    the run's last batch is made unfinished (its commit removed) and given a dead letter, a
    late record and a late count as its first attempt might have left them; after the
    restart only the first batch's dead letter remains."""
    land(tmp_path / "in", [
        [{"team": "a", "score": 1, "et": "2026-01-01T00:00:01Z"}, "garbage"],
        [{"team": "a", "score": 2, "et": "2026-01-01T00:00:02Z"}],
    ])
    _use_gate(monkeypatch, gate)
    defn = load_definition({
        "name": f"rerun_{gate}",
        "source": {"kind": "files", "path": str(tmp_path / "in"), "format": "json",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "key": "team", "event_time": "et", "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"}],
    })
    ctx = JobContext.create(defn, settings)
    assert ctx.plan.native
    first = JobRunner(spark, ctx, RunOptions(until_idle=True))
    assert first.run() == "idle"
    last = max(r.batch_id for r in first.reports)
    assert last >= 1
    for name in (str(last), f".{last}.crc"):  # the commit and its checksum, as a crash leaves
        (Path(ctx.checkpoint) / "commits" / name).unlink(missing_ok=True)
    earlier = {  # one line of each kind, as an earlier attempt of the last batch wrote them
        "dead_letters": {"job": ctx.job, "version": 1, "store": ctx.store,
                         "reason": "unparsable record", "record": "earlier"},
        "late": {"job": ctx.job, "version": 1, "store": ctx.store, "key": '"a"',
                 "event_time": T0, "window_start": T0, "window_end": T0 + 10_000,
                 "reason": "expired", "record": "{}"},
        "late_counts": {"key": '"a"', "window_start": T0, "window_end": T0 + 10_000,
                        "accepted": 0, "dropped": 1}}
    for kind, line in earlier.items():
        f = Path(ctx.output_root) / kind / f"batch_id={last}" / "part-00000.jsonl"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(line) + "\n", encoding="utf-8")
    again = JobRunner(spark, ctx, RunOptions(until_idle=True))
    assert again.run() == "idle"
    assert again.gate_kind == gate
    assert [(r.batch_id, r.dead_letters, r.late_dropped) for r in again.reports] == [
        (last, 0, 0)]
    out = Path(ctx.output_root)
    assert [x["record"] for x in read_jsonl_dir(out / "dead_letters")] == ["garbage"]
    assert read_jsonl_dir(out / "late") == [] and read_jsonl_dir(out / "late_counts") == []


@pytest.mark.parametrize(("window", "limited"), [
    ({"type": "tumbling", "size": "10s"}, False),
    ({"type": "hopping", "size": "10s", "step": "5s"}, True),
])
def test_only_hopping_windows_carry_the_per_window_limit(
        spark: Any, tmp_path: Path, settings: Settings, window: dict[str, str],
        limited: bool) -> None:
    """A tumbling window's record has one window, which the gate already judged, so its plan
    carries no per-window limit (``__wlim``: a watermark lookup per record); a hopping
    window's record may have an expired and a live window, so its plan filters by the limit.
    Analysis only: the query is built, not started."""
    (tmp_path / "in").mkdir()
    defn = _defn(tmp_path, window=window, allowed_lateness="5s")
    runner = JobRunner(spark, JobContext.create(defn, settings), RunOptions(until_idle=True))
    writer = runner.build()
    assert runner.gate_kind == "jvm"
    plan = spark._jvm.PythonSQLUtils.explainString(writer._df._jdf.queryExecution(), "simple")
    assert ("__wlim" in plan) is limited, plan
