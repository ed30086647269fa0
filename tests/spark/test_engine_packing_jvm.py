"""The engine path's packing in the JVM (``Pack.java``) against the Python ``mapInArrow``
stage it replaces: the same packed rows, bucket for bucket and chunk for chunk, which the
processor reads back as the same Arrow schema and the same pandas frames."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pandas.testing import assert_frame_equal

from jobs.config import Settings
from jobs.spark.engine_path.config import BUCKET
from jobs.spark.engine_path.packing import (
    PACKED,
    pack_by_bucket,
    pack_stream,
    unpack_frame,
    unpack_table,
)

pytestmark = pytest.mark.spark

SCHEMA = (f"{BUCKET} INT, __key STRING, __et BIGINT, f DOUBLE, i32 INT, i16 SMALLINT, "
          "f32 FLOAT, b BOOLEAN, ts TIMESTAMP, d DATE, dec DECIMAL(5,2), nul STRING, "
          "arr ARRAY<INT>, st STRUCT<x: STRING, y: BIGINT>, bin BINARY")


def awkward_rows(n: int) -> list[tuple[Any, ...]]:
    floats = [1.5, None, float("nan"), -0.0, float("inf"), 3.25]
    keys = ['"a"', '"b"', None, '"é"', '"\\u2028"']
    return [(
        None if i % 11 == 10 else i % 3, keys[i % 5], 1000 * (n - i), floats[i % 6],
        None if i % 4 == 1 else i, i % 7, None if i % 5 == 2 else i / 4, [True, None, False][i % 3],
        None if i % 6 == 5 else dt.datetime(2026, 3, 29, 0, 59, i % 60),
        dt.date(2026, 1, 1 + i % 28), None if i % 7 == 6 else decimal.Decimal(f"{i % 100}.25"),
        None, None if i % 3 == 0 else [i, None], (f"x{i}", None if i % 2 else i),
        bytes([i % 256]) * (i % 3),
    ) for i in range(n)]


@contextmanager
def conf(spark: Any, **values: str) -> Iterator[None]:
    old = {k: spark.conf.get(k) for k in values}
    for k, v in values.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)


def chunks(blobs: list[bytes]) -> Iterator[pd.DataFrame]:
    """A bucket's packed rows as pyspark hands them to the processor."""
    return iter([pd.DataFrame({"bucket": [0] * len(blobs), "records": blobs})])


def packed_rows(frame: Any) -> dict[Any, list[bytes]]:
    """Blobs per bucket, in the order of the partitions and of the chunks within each."""
    out: dict[Any, list[bytes]] = {}
    for row in frame.collect():
        out.setdefault(row[0], []).append(bytes(row[1]))
    return out


@pytest.mark.parametrize(("timezone", "chunk"), [("UTC", "4"), ("Europe/Paris", "10000")])
def test_jvm_packing_equals_the_python_stage(spark: Any, timezone: str, chunk: str) -> None:
    with conf(spark, **{"spark.sql.session.timeZone": timezone,
                        "spark.sql.execution.arrow.maxRecordsPerBatch": chunk}):
        rows = awkward_rows(40)
        source = spark.createDataFrame(rows, SCHEMA).repartition(3)
        jvm = pack_stream(source)
        assert jvm is not None  # the test session's JVM has tidemark's jar
        assert jvm.schema.simpleString() == f"struct<{BUCKET}:int,{PACKED}:binary>"
        python = source.mapInArrow(pack_by_bucket, f"{BUCKET} int, {PACKED} binary")
        new, old = packed_rows(jvm), packed_rows(python)
    assert sorted(new, key=str) == sorted(old, key=str) == [0, 1, 2, None]
    for bucket, blobs in old.items():
        assert len(new[bucket]) == len(blobs)
        for a, b in zip(new[bucket], blobs, strict=True):
            ta = pa.ipc.open_stream(pa.py_buffer(a)).read_all()
            tb = pa.ipc.open_stream(pa.py_buffer(b)).read_all()
            assert ta.schema.equals(tb.schema, check_metadata=True)
            assert ta.num_rows == tb.num_rows > 0

        assert unpack_table(chunks(new[bucket])).schema == unpack_table(chunks(blobs)).schema
        got, want = unpack_frame(chunks(new[bucket]), timezone), unpack_frame(chunks(blobs),
                                                                              timezone)
        assert_frame_equal(got, want, check_exact=True)
        # every record of the bucket
        assert len(got) == sum(1 for r in rows if r[0] == bucket)


def test_jvm_packing_of_an_empty_partition_is_no_row(spark: Any) -> None:
    empty = spark.createDataFrame([], SCHEMA)
    packed = pack_stream(empty)
    assert packed is not None and packed.count() == 0


def test_a_checkpoint_of_the_python_stage_resumes_with_the_jvm_packing(
        spark: Any, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The packing is stateless and the operator's state does not depend on its input: a
    checkpoint written while the Python stage packed resumes with the JVM packing, and the
    panes of both runs equal replay's over all the input."""
    from jobs.spark.context import JobContext
    from jobs.spark.engine_path import stream
    from jobs.spark.runner import JobRunner, RunOptions

    from .conftest import land
    from .parity import canon, definition, replay_output, spark_panes

    defn = definition(tmp_path, {
        "key": "team", "event_time": "et", "window": {"type": "tumbling", "size": "10s"},
        "allowed_lateness": "5s",
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
    }, "team STRING, score INT, et BIGINT")
    instants = [
        (1000, [{"team": "a", "score": 1, "et": 1000}, {"team": "b", "score": 2, "et": 2000}]),
        (2000, [{"team": "a", "score": 5, "et": 12000}, {"team": "b", "score": 3, "et": 5000}]),
        (3000, [{"team": "a", "score": 7, "et": 40000}, {"team": "b", "score": 1, "et": 41000}]),
        (4000, [{"team": "a", "score": 1, "et": 52000}, {"team": "b", "score": 4, "et": 38000}]),
        (5000, [{"team": "a", "score": 1, "et": 90000}]),
    ]
    files = [[{**r, "arrival": t} for r in recs] for t, recs in instants]

    def run() -> JobContext:
        ctx = JobContext.create(defn, settings, force_engine=True)
        JobRunner(spark, ctx, RunOptions(until_idle=True, arrival_column="arrival",
                                         buckets=2)).run()
        return ctx

    land(tmp_path / "in", files[:2])
    with monkeypatch.context() as m:
        m.setattr(stream, "pack_stream", lambda _frame: None)  # the Python stage packs
        ctx = run()
    # windows of the first run's records close in the second: their sums need its state
    land(tmp_path / "in", files[2:], start=2)
    ctx = run()
    assert not ctx.plan.native
    expected = replay_output(defn, instants)
    assert canon(spark_panes(spark, ctx), ("watermark",)) == canon(expected, ("watermark",))
