"""The native path groups by the key's raw value where that groups exactly as its JSON text.

What a user checks: the panes (and their ``key`` column) equal replay's for every key type, the
open windows ``tidemark state`` lists carry the key as replay prints it, and a checkpoint
written before the layout file existed keeps running (its state holds the key's JSON text)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.spark.context import JobContext
from jobs.spark.key_layout import LAYOUT_FILE, read_key_layout
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import land
from .parity import canon, definition, replay_output, spark_panes

pytestmark = pytest.mark.spark


def _instants(keys: list[Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    """Two records per key in window [0,10s), one per key in [10s,20s), then a record that
    moves the watermark past both windows."""
    first = [{"k": k, "v": i + 1, "et": 1000 + i} for i, k in enumerate(keys)]
    second = [{"k": k, "v": 10 * (i + 1), "et": 12000 + i} for i, k in enumerate(keys)]
    return [(1000, first + first), (2000, second), (3000, [{"k": keys[0], "v": 0, "et": 40000}])]


@pytest.mark.parametrize(("ddl", "keys", "layout"), [
    ("k STRING", ["a", "A", "1", "é\U0001f600\"\\", ""], "raw"),
    ("k BIGINT", [1, -1, 0, 9007199254740993], "raw"),
    ("k BOOLEAN", [True, False], "raw"),
    # -0.0 and 0.0 are one group to Spark's raw grouping but two keys to docs/semantics.md: JSON text
    ("k DOUBLE", [0.0, -0.0, 1.5, 1e300], "json"),
    ("k DATE", ["2026-01-02", "1969-12-31"], "json"),
])
def test_panes_equal_replay_for_every_key_type(spark: Any, tmp_path: Path, settings: Settings,
                                               ddl: str, keys: list[Any], layout: str) -> None:
    from .parity import spark_run

    defn = definition(tmp_path, {
        "key": "k", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}, {"name": "n", "fn": "count"}],
    }, f"{ddl}, v INT, et BIGINT")
    instants = _instants(keys)
    _runner, ctx = spark_run(spark, tmp_path, defn, instants, settings)
    assert ctx.plan.native
    assert read_key_layout(ctx.checkpoint) == layout
    got = canon(spark_panes(spark, ctx), drop=("emitted_at",))
    assert len(got) == 2 * len(keys)
    assert got == canon(replay_output(defn, instants), drop=("emitted_at",))


def test_state_lists_raw_keys_as_replay_prints_them(spark: Any, tmp_path: Path,
                                                    settings: Settings) -> None:
    from jobs.spark.inspect import open_windows

    from .parity import spark_run

    defn = definition(tmp_path, {
        "key": "k", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}],
    }, "k INT, v INT, et BIGINT")
    _runner, ctx = spark_run(spark, tmp_path, defn, [(1000, [
        {"k": 7, "v": 2, "et": 1000}, {"k": -3, "v": 5, "et": 2000}])], settings)
    assert read_key_layout(ctx.checkpoint) == "raw"
    _bid, windows = open_windows(spark, ctx)
    assert [(w["key"], w["window_start"], w["window_end"]) for w in windows] == [
        (-3, 0, 10000), (7, 0, 10000)]


def test_checkpoint_from_before_the_layout_file_keeps_the_json_key(
        spark: Any, tmp_path: Path, settings: Settings) -> None:
    """A checkpoint whose state holds the key's JSON text (written before layout files
    existed) must not be restarted with a raw key: Spark would refuse the changed state
    schema. The run after the upgrade keeps the JSON key and finishes the open windows."""
    from .parity import spark_run

    defn = definition(tmp_path, {
        "key": "k", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}],
    }, "k STRING, v INT, et BIGINT")
    first = [(1000, [{"k": "a", "v": 1, "et": 1000}, {"k": "b", "v": 2, "et": 2000}])]
    ctx = JobContext.create(defn, settings)
    root = Path(ctx.checkpoint)
    root.mkdir(parents=True)
    (root / LAYOUT_FILE).write_text(json.dumps({"key": "json"}), encoding="utf-8")
    spark_run(spark, tmp_path, defn, first, settings)
    (root / LAYOUT_FILE).unlink()  # as the previous release left it: state, no layout file
    assert not spark_panes(spark, ctx)  # the window is still open in the state store

    later = [(2000, [{"k": "a", "v": 4, "et": 3000}]), (3000, [{"k": "b", "v": 0, "et": 30000}])]
    land(tmp_path / "in", [[{**r, "arrival": t} for r in recs] for t, recs in later], start=1)
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True, arrival_column="arrival"))
    assert runner.run() == "idle"
    assert read_key_layout(ctx.checkpoint) == "json"
    panes = {(p["key"], p["window_start"]): p["values"] for p in spark_panes(spark, ctx)}
    assert panes == {("a", 0): {"s": 5}, ("b", 0): {"s": 2}}


def test_pane_text_without_to_json_is_byte_identical(spark: Any, tmp_path: Path) -> None:
    """For integer and boolean keys and aggregates the pane's key and values are written by
    casts instead of ``to_json``; the text must be exactly what ``to_json`` writes, for nulls,
    negative numbers, the long range's ends and booleans."""
    from pyspark.sql import functions as F

    from jobs.spark.extract import KEY, Projection, key_json_column
    from jobs.spark.native import _key_text, _values_text

    defn = definition(tmp_path, {
        "key": "k", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}, {"name": "lo", "fn": "min", "of": "w"},
                         {"name": "any_b", "fn": "max", "of": "b"}, {"name": "n", "fn": "count"}],
    }, "k BIGINT, v BIGINT, w INT, b BOOLEAN, et BIGINT")
    projection = Projection(columns=[], agg_types={"s": "bigint", "lo": "int", "any_b": "boolean",
                                                   "n": "int"},
                            source_columns=[], key_raw=True, key_type="bigint")
    big, small = 2**63 - 1, -(2**63)
    rows = [(big, small, -5, True, 0), (small, None, None, None, 3), (0, big, 2**31 - 1, False, 1),
            (None, -1, -(2**31), None, big)]
    df = spark.createDataFrame(rows, f"{KEY} BIGINT, s BIGINT, lo INT, any_b BOOLEAN, n BIGINT")
    expected_values = F.to_json(F.struct("s", "lo", "any_b", "n"), {"ignoreNullFields": "false"})
    got = df.select(_key_text(projection).alias("k"), key_json_column(F.col(KEY)).alias("k_json"),
                    _values_text(defn, projection).alias("v"), expected_values.alias("v_json"))
    out = got.collect()
    assert [r["k"] for r in out] == [r["k_json"] for r in out]
    assert [r["v"] for r in out] == [r["v_json"] for r in out]
    assert out[1]["v"] == '{"s":null,"lo":null,"any_b":null,"n":3}'


def test_string_key_text_is_jacksons(spark: Any) -> None:
    """A string key's pane text skips Jackson unless the string holds a character Jackson
    escapes or bytes that are not UTF-8; every string must still read exactly as ``to_json``
    writes it (control characters, quotes, backslashes, brackets, non-ASCII, invalid UTF-8,
    the empty string, null), both from tidemark's JVM function and from the SQL form a session
    without tidemark's jar uses."""
    from pyspark.sql import functions as F

    from jobs.spark.extract import KEY, Projection, key_json_column, sql_string_json
    from jobs.spark.native import _key_text

    projection = Projection(columns=[], agg_types={}, source_columns=[], key_raw=True,
                            key_type="string")
    texts = ["a", "", "é\U0001f600", 'say "hi"', "back\\slash", "line\nbreak", "tab\t",
             "\x00", "\x1f", "\x7f", "\u2028", "/", "[", "]", "[a]", '"]', "</script>", None]
    df = spark.createDataFrame([(t,) for t in texts], f"{KEY} STRING")
    invalid = spark.range(1).select(F.unhex(F.lit("61C328FF")).cast("string").alias(KEY))
    df = df.unionByName(invalid)
    reference = F.to_json(F.array(F.col(KEY)))  # "[<text>]", as Jackson writes it
    out = df.select(
        _key_text(projection).alias("fast"), key_json_column(F.col(KEY)).alias("trimmed"),
        sql_string_json(F.col(KEY)).alias("sql"),  # the form for a session without the jar
        reference.alias("ref"), F.col(KEY).isNull().alias("is_null"),
        F.is_valid_utf8(F.col(KEY)).alias("utf8"),
    ).select(
        "fast", "ref", "is_null", "utf8",
        (F.col("fast") == F.substring(F.col("ref"), 2, F.length(F.col("ref")) - 2)).alias("same"),
        (F.col("trimmed") == F.col("fast")).alias("same_trimmed"),
        (F.col("sql") == F.col("fast")).alias("same_sql"),
    ).collect()
    assert len(out) == len(texts) + 1
    # the session has tidemark's jar: the text comes from its one JVM call (JsonText.java)
    plan = df.select(_key_text(projection))._jdf.queryExecution().executedPlan().toString()
    assert "JsonText" in plan and "rlike" not in plan.lower(), plan
    for row in out:
        if row["is_null"]:
            assert row["fast"] is None
            continue
        assert row["same"] and row["same_trimmed"] and row["same_sql"], row
    assert [r["fast"] for r in out[:3]] == ['"a"', '""', '"é\U0001f600"']
    assert out[5]["fast"] == '"line\\nbreak"'
    assert not out[-1]["utf8"]  # the invalid bytes took Jackson's path (U+FFFD)


@pytest.mark.parametrize(("ddl", "values"), [
    ("ARRAY<INT>", [[1, 2], [], [None], None]),
    ("ARRAY<STRING>", [["a]"], ["[", "x"]]),
    ("STRUCT<a: ARRAY<INT>, b: STRING>", [{"a": [1], "b": "]"}, {"a": None, "b": None}]),
    ("MAP<STRING, INT>", [{"k": 1}, {}]),
    ("DOUBLE", [0.0, -0.0, 1.5, None]),
    ("DATE", ["2026-01-02", None]),
    ("BOOLEAN", [True, False]),
    ("STRING", ["plain", 'q"uote', "[x]", None]),
])
def test_key_text_of_every_type_is_jacksons(spark: Any, ddl: str, values: list[Any]) -> None:
    """The JSON-key layout (and the engine path) compute a key's text for every record: it must
    be exactly the text inside ``to_json(array(k))``'s outer brackets for every type, an array
    keeping its own brackets."""
    import datetime

    from pyspark.sql import functions as F

    from jobs.spark.extract import KEY, key_text

    rows = [(datetime.date.fromisoformat(v) if ddl == "DATE" and v else v,) for v in values]
    df = spark.createDataFrame(rows, f"{KEY} {ddl}")
    dtype = df.schema[KEY].dataType
    ref = F.to_json(F.array(F.col(KEY)))
    out = df.select(
        key_text(F.col(KEY), dtype).alias("got"),
        F.when(F.col(KEY).isNull(), None).otherwise(
            F.substring(ref, 2, F.length(ref) - 2)).alias("want"),
    ).collect()
    assert len(out) == len(values)
    assert [r["got"] for r in out] == [r["want"] for r in out]
    if ddl == "ARRAY<INT>":
        assert out[0]["got"] == "[1,2]"
