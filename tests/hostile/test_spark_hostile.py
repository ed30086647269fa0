"""The Spark side of the hostile-input rules, on a real local Spark session: names resolve to
the columns Spark reads (a name that is none is refused at launch, naming the field), the
non-finite output rule is what Spark's own JSON writer does and reads back, and a running job
(native path with either gate, engine path) names an event time outside the representable
instants in its dead letter with replay's words and echoes NaN / Infinity as strings."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from jobs.definition import load_definition
from jobs.engine.records import Pane, jsonable


@pytest.fixture(scope="module")
def spark() -> Any:
    """The suite's Spark session (``getOrCreate``: tests/spark's when it exists; a session
    made here lives until the test process ends, so stopping it cannot pull it from under
    tests/spark)."""
    from jobs.config import Settings
    from jobs.spark.session import build_session

    settings = Settings.from_env({**os.environ, "TIDEMARK_SPARK_MASTER": "local[2]"})
    return build_session(settings, app_name="tidemark-tests", shuffle_partitions=2)


def test_a_declared_name_that_the_source_lacks_is_refused_at_launch_not_read_as_a_function(
        spark: Any, tmp_path: Path) -> None:
    from jobs.spark.errors import SparkRuntimeError
    from jobs.spark.extract import build_projection

    spark.createDataFrame([("a", 1, 1000)], "team STRING, score INT, et BIGINT").write.parquet(
        str(tmp_path / "in"))
    frame = spark.read.parquet(str(tmp_path / "in"))
    defn = load_definition({
        "name": "typo",
        "source": {"kind": "files", "path": str(tmp_path / "in"), "format": "json",
                   "schema": "user STRING, team STRING, score INT, et BIGINT"},
        "key": "user", "event_time": "et", "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "n", "fn": "count"}],
    })
    with pytest.raises(SparkRuntimeError) as caught:
        build_projection(defn, frame.schema, frame)
    assert caught.value.field == "key"
    assert "'user' is not a column of the source" in str(caught.value)


def test_non_finite_output_is_what_spark_writes_and_reads_back(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    pane = Pane(key=float("nan"), window_start=0, window_end=60_000, timing="ON_TIME",
                pane_index=0, is_first=True, is_last=True, retraction=False,
                values={"s": float("inf"), "m": float("-inf"), "x": float("nan"), "ok": 1.5},
                emitted_at=0, watermark=None)
    line = json.dumps(pane.to_json(), separators=(",", ":"))
    assert '"values":{"s":"Infinity","m":"-Infinity","x":"NaN","ok":1.5}' in line
    assert '"key":"NaN"' in line
    # Spark's own JSON writer writes the same texts
    written = spark.range(1).select(F.to_json(F.struct(
        F.lit(float("inf")).alias("s"), F.lit(float("-inf")).alias("m"),
        F.lit(float("nan")).alias("x"), F.lit(1.5).alias("ok")))).first()[0]
    assert written == json.dumps(jsonable(pane.values), separators=(",", ":"))
    # and Spark's JSON reader (its defaults, failing on any malformed record) reads them back
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "part.jsonl").write_text(line + "\n", encoding="utf-8")
    row = (spark.read.schema("values STRUCT<s: DOUBLE, m: DOUBLE, x: DOUBLE, ok: DOUBLE>")
           .option("mode", "FAILFAST")
           .json(str(tmp_path / "out")).first())
    values = row["values"]
    assert values["s"] == float("inf") and values["m"] == float("-inf")
    assert values["x"] != values["x"] and values["ok"] == 1.5


def test_an_event_time_outside_the_representable_range_is_null_so_a_dead_letter(
        spark: Any) -> None:
    """The projection every Spark path reads: a null ``__et`` is a dead letter (gate and
    engine host alike), never window arithmetic that overflows."""
    from jobs.spark.extract import EVENT_TIME, EVENT_TIME_OUT, build_projection
    from jobs.spark.schema import CORRUPT_COLUMN

    times = [1000, 2**63 - 1, 253_402_300_800_000, -62_135_596_800_001, -62_135_596_800_000,
             253_402_300_799_999]
    frame = spark.createDataFrame([("a", 1, t, None) for t in times],
                                  f"team STRING, score INT, et BIGINT, {CORRUPT_COLUMN} STRING")
    defn = load_definition({
        "name": "range", "source": {"kind": "files", "path": "in", "format": "json",
                                    "schema": "team STRING, score INT, et BIGINT"},
        "key": "team", "event_time": "et", "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "n", "fn": "count"}],
    })
    projection = build_projection(defn, frame.schema, frame)
    rows = frame.select(*projection.columns).collect()
    assert [r[EVENT_TIME] for r in rows] == [
        1000, None, None, None, -62_135_596_800_000, 253_402_300_799_999]
    # the out-of-range ones are kept beside it, for the dead letter's reason
    assert [r[EVENT_TIME_OUT] for r in rows] == [
        None, 2**63 - 1, 253_402_300_800_000, -62_135_596_800_001, None, None]


def _land(directory: Path, files: list[list[dict[str, Any]]]) -> None:
    """One JSON-lines file per micro-batch (increasing modification times: Spark's file
    source orders by them); ``json.dumps`` writes NaN / Infinity bare, as hostile input may."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(files):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


def _side_lines(root: Path) -> list[dict[str, Any]]:
    """Every side-file line under ``root``, each parsed by a strict JSON reader (bare NaN /
    Infinity are refused)."""
    def strict(text: str) -> Any:
        raise ValueError(f"bare {text} in a side file")

    return [json.loads(line, parse_constant=strict)
            for f in sorted(root.glob("batch_id=*/part-*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", ["native-jvm", "native-python", "engine"])
def test_a_running_job_names_an_out_of_range_event_time_and_echoes_non_finite_as_strings(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    from jobs.config import Settings
    from jobs.engine.extract import instant_problem
    from jobs.spark.context import JobContext
    from jobs.spark.runner import JobRunner, RunOptions

    if path == "native-python":
        monkeypatch.setenv("TIDEMARK_GATE", "python")
    else:
        monkeypatch.delenv("TIDEMARK_GATE", raising=False)
    too_late, too_early = 253_402_300_800_000, -(2**63)
    _land(tmp_path / "in", [
        [{"team": "a", "score": 1, "ratio": 1.5, "et": 1000},
         {"team": "a", "score": 2, "ratio": float("nan"), "et": too_late},
         {"team": "b", "score": 3, "ratio": float("-inf"), "et": too_early},
         {"team": "c", "score": 4, "ratio": float("inf"), "et": None},
         {"team": "a", "score": 5, "ratio": 0.0, "et": 30_000}],
        # behind the watermark the first batch set (30 s): its window [0, 10 s) has expired
        [{"team": "a", "score": 6, "ratio": float("inf"), "et": 2000}],
    ])
    defn = load_definition({
        "name": f"range_{path.replace('-', '_')}",
        "source": {"kind": "files", "path": str(tmp_path / "in"), "format": "json",
                   "schema": "team STRING, score INT, ratio DOUBLE, et BIGINT"},
        "key": "team", "event_time": "et", "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"}],
    })
    settings = Settings.from_env({"TIDEMARK_HOME": str(tmp_path / "home"),
                                  "TIDEMARK_SPARK_MASTER": "local[2]"})
    ctx = JobContext.create(defn, settings, force_engine=path == "engine")
    assert ctx.plan.native == (path != "engine")
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
    assert runner.run() == "idle"
    if path.startswith("native"):
        assert runner.gate_kind == path.removeprefix("native-")

    dead = {(d["reason"], d["record"]) for d in _side_lines(Path(ctx.dead_letter_path))}
    assert dead == {
        (f"event_time: {instant_problem(too_late)}",
         '{"team":"a","score":2,"ratio":"NaN","et":253402300800000}'),
        (f"event_time: {instant_problem(too_early)}",
         '{"team":"b","score":3,"ratio":"-Infinity","et":-9223372036854775808}'),
        ("event time is null or did not evaluate",
         '{"team":"c","score":4,"ratio":"Infinity","et":null}'),
    }
    assert ("event_time: 253402300800000 ms is outside the representable range of instants "
            "(-62135596800000 to 253402300799999 ms: 0001-01-01 to 9999-12-31 UTC)") in {
        r for r, _ in dead}
    late = _side_lines(Path(ctx.late_path))
    # the engine path's late line holds the record as an object, the gates' as its JSON text
    records = [x["record"] if isinstance(x["record"], dict) else json.loads(x["record"])
               for x in late]
    assert [(x["event_time"], x["reason"]) for x in late] == [(2000, "expired")]
    assert [r["ratio"] for r in records] == ["Infinity"]


def test_the_spark_reason_is_replays_for_both_kinds_of_unusable_event_time(spark: Any) -> None:
    """Out of the representable instants, or windows past ±2^62 ms: the projection keeps the
    event time in ``__etx``, and the reason both gates write (Python text, SQL text for the
    JVM gate) is the one replay writes for the same record."""
    from pyspark.sql import functions as F

    from jobs.engine.extract import RecordExtractor
    from jobs.spark.extract import EVENT_TIME, EVENT_TIME_OUT, build_projection
    from jobs.spark.gate import range_reason
    from jobs.spark.gate_jvm import range_reason_column
    from jobs.spark.schema import CORRUPT_COLUMN

    defn = load_definition({
        "name": "reach", "source": {"kind": "files", "path": "in", "format": "json",
                                    "schema": "team STRING, et BIGINT"},
        "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": f"{2**62 - 1000}ms"},
        "aggregations": [{"name": "n", "fn": "count"}],
    })
    times = [1000, -1000, 1001, -1001, 253_402_300_800_000]
    frame = spark.createDataFrame([("a", t, None) for t in times],
                                  f"team STRING, et BIGINT, {CORRUPT_COLUMN} STRING")
    projection = build_projection(defn, frame.schema, frame)
    rows = (frame.select(*projection.columns)
            .withColumn("sql_reason", range_reason_column(F.col(EVENT_TIME_OUT))).collect())
    assert [r[EVENT_TIME] for r in rows] == [1000, -1000, None, None, None]
    _, dead = RecordExtractor(defn).extract([{"team": "a", "et": t} for t in times], None)
    replay = [d.reason for d in dead]
    assert len(replay) == 3 and "reach past" in replay[0] and "representable range of instants" in replay[2]
    assert [range_reason(r[EVENT_TIME_OUT]) for r in rows[2:]] == replay
    assert [r["sql_reason"] for r in rows] == [None, None, *replay]
