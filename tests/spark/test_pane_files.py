"""A batch's panes written by tidemark's JVM writer (``PaneFiles``, through
``sinks.write_parquet``): the same Parquet files Spark's own writer makes, replacing what the
batch's directory held, with the count of rows it wrote."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest


def panes(spark: Any, rows: int, partitions: int) -> Any:
    """Rows in the results schema's types, nulls and unicode included."""
    from pyspark.sql import functions as F

    i = F.col("id")
    return spark.range(rows).select(
        F.lit("job-ü").alias("job"), F.lit(3).cast("int").alias("version"),
        F.concat(F.lit('"k'), (i % 7).cast("string"), F.lit('"')).alias("key"),
        (i * 60000).alias("window_start"),
        F.when(i % 3 == 0, F.lit(None)).otherwise(i).cast("bigint").alias("first_event_time"),
        F.when(i % 2 == 0, F.lit("EARLY")).otherwise(F.lit("ON_TIME")).alias("timing"),
        (i % 4).cast("int").alias("pane_index"), (i % 5 == 0).alias("retraction"),
        F.concat(F.lit('{"n":'), i.cast("string"), F.lit("}")).alias("values"),
    ).repartition(partitions)


def parquet_files(d: Path) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.endswith(".parquet") and not n.startswith("."))


def footer(path: Path) -> tuple[Any, Any]:
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    return meta.metadata, meta.schema.to_arrow_schema()


@pytest.fixture()
def pane_writer(spark: Any) -> Any:
    from jobs.spark.jvm import pane_files

    writer = pane_files(spark)
    if writer is None:
        pytest.fail("the session has no tidemark jar: PaneFiles is not loaded")
    return writer


def test_same_files_as_sparks_writer(spark: Any, pane_writer: Any, tmp_path: Path) -> None:
    from jobs.spark.sinks import write_parquet

    df = panes(spark, 5000, 3).cache()
    df.write.mode("overwrite").parquet(str(tmp_path / "spark"))
    n = write_parquet(df, str(tmp_path / "ours"))
    assert n == 5000
    theirs = spark.read.parquet(str(tmp_path / "spark"))
    ours = spark.read.parquet(str(tmp_path / "ours"))
    assert ours.schema == theirs.schema
    assert ours.count() == 5000
    assert ours.exceptAll(theirs).count() == 0 and theirs.exceptAll(ours).count() == 0
    ours_files, their_files = parquet_files(tmp_path / "ours"), parquet_files(tmp_path / "spark")
    assert len(ours_files) == len(their_files) == 3
    # the footer carries Spark's schema metadata, so Spark reads the files back as it wrote them
    assert footer(tmp_path / "ours" / ours_files[0]) == footer(tmp_path / "spark" / their_files[0])
    df.unpersist()


def test_rewrite_replaces_the_directory(spark: Any, pane_writer: Any, tmp_path: Path) -> None:
    """A re-run batch leaves only its own files: a bigger first attempt's files, an unrelated
    file and a crashed task's hidden in-flight file are all gone afterwards."""
    from jobs.spark.sinks import write_parquet

    d = tmp_path / "batch_id=4"
    assert write_parquet(panes(spark, 3000, 3), str(d)) == 3000
    (d / "part-00009-from-elsewhere.snappy.parquet").write_bytes(b"not parquet")
    (d / ".part-00001-c000.snappy.parquet.tmp-0").write_bytes(b"half a file")
    assert write_parquet(panes(spark, 10, 1), str(d)) == 10
    assert len(parquet_files(d)) == 1
    assert not [n for n in os.listdir(d) if ".tmp-" in n]
    assert spark.read.parquet(str(d)).count() == 10


def test_empty_batch_writes_the_schema(spark: Any, pane_writer: Any, tmp_path: Path) -> None:
    """No panes: one empty file that carries the schema, as Spark's writer leaves (a reader of
    the results directory then still finds every batch's columns)."""
    from jobs.spark.sinks import write_parquet

    df = panes(spark, 100, 2)
    assert write_parquet(df.where("false"), str(tmp_path / "empty")) == 0
    assert len(parquet_files(tmp_path / "empty")) == 1
    back = spark.read.parquet(str(tmp_path / "empty"))
    assert [(f.name, f.dataType) for f in back.schema] == [(f.name, f.dataType) for f in df.schema]
    assert back.count() == 0
