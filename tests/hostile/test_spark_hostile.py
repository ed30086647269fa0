"""The Spark side of the hostile-input rules, on a real local Spark session: names resolve to
the columns Spark reads (a name that is none is refused at launch, naming the field), and the
non-finite output rule is what Spark's own JSON writer does and reads back."""

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
    from jobs.spark.extract import EVENT_TIME, build_projection
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
    got = [r[EVENT_TIME] for r in frame.select(*projection.columns).collect()]
    assert got == [1000, None, None, None, -62_135_596_800_000, 253_402_300_799_999]
