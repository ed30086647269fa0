"""A ``files`` source of JSON lines is read through ``FastJsonFileFormat`` (tidemark's
plain-case parser in front of Spark's): every file gives exactly the rows Spark's own JSON
source gives, in every mode, for every line (blank lines, top-level arrays, invalid UTF-8,
CRLF endings, a byte-order mark included) and for any subset of the columns."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spark.json_values import CORRUPT, SCHEMA, one_change_texts, values

ODD_LINES = [b"", b"   ", b'[{"s":"a","i":1},{"s":"b","i":2}]', b"[]", b'[{"s":"a"}, 3]',
             b'\xef\xbb\xbf{"s":"bom","i":1}', b'{"s":"a\xff","i":1}', b'{"s":"caf\xc3\xa9"}',
             b'{"i":1}x', b"null", b"7", b'"text"', b'{"s":"a","s":"b"}', b"{}"]


def _read(spark: Any, path: Path, fmt: str, mode: str, columns: list[str] | None) -> list[str]:
    df = (spark.read.schema(f"{SCHEMA}, {CORRUPT} STRING").format(fmt)
          .option("mode", mode).option("columnNameOfCorruptRecord", CORRUPT).load(str(path)))
    if columns is not None:
        df = df.select(*columns)
    return [repr(tuple(r)) for r in df.collect()]


def _same(spark: Any, path: Path, mode: str = "PERMISSIVE",
          columns: list[str] | None = None) -> list[str]:
    from jobs.spark.fast_json import FAST_JSON_FILE_FORMAT

    ours = _read(spark, path, FAST_JSON_FILE_FORMAT, mode, columns)
    assert ours == _read(spark, path, "json", mode, columns)
    return ours


@pytest.mark.spark
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.lists(values(), min_size=1, max_size=200), st.sampled_from([b"\n", b"\r\n"]),
       st.sampled_from(["PERMISSIVE", "DROPMALFORMED"]),
       st.sampled_from([None, ["i", CORRUPT], ["l", "s"], ["d"]]))
def test_a_file_reads_as_spark_reads_it(spark: Any, lines: list[bytes | None], sep: bytes,
                                        mode: str, columns: list[str] | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "part.json"
        path.write_bytes(sep.join(b"" if v is None else v for v in lines) + sep)
        _same(spark, path, mode, columns)


@pytest.mark.spark
def test_edge_lines_read_as_spark_reads_them(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "part.json"
    path.write_bytes(b"\n".join([*ODD_LINES, *(t.encode() for t in one_change_texts())]) + b"\n")
    rows = _same(spark, path)
    assert len(rows) > len(one_change_texts())  # the arrays give a row per element
    assert _same(spark, path, "DROPMALFORMED")
    _same(spark, path, columns=["b", CORRUPT])


@pytest.mark.spark
def test_a_files_source_of_json_lines_uses_it(spark: Any, tmp_path: Path) -> None:
    """The job's reader picks tidemark's format, and its rows carry the file metadata the
    engine path orders arrival by."""
    from jobs.definition import load_definition
    from jobs.spark.fast_json import FAST_JSON_FILE_FORMAT, json_file_format
    from jobs.spark.sources import read_stream

    assert json_file_format(spark) == FAST_JSON_FILE_FORMAT
    (tmp_path / "in").mkdir()
    defn = load_definition({
        "name": "fj", "source": {"kind": "files", "path": str(tmp_path / "in"), "format": "json",
                                 "schema": "team STRING, score INT, et BIGINT"},
        "key": "team", "event_time": "et", "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "n", "fn": "count"}],
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
    })
    df = read_stream(spark, defn)
    plan = df._jdf.queryExecution().logical().toString()
    assert "FastJsonFileFormat" in plan or "tidemark.spark" in plan


@pytest.mark.spark
def test_the_switch_leaves_parsing_to_spark(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from jobs.spark.fast_json import json_file_format, parse_json

    monkeypatch.setenv("TIDEMARK_JSON_PARSER", "spark")
    assert json_file_format(spark) == "json"
    df = spark.createDataFrame([(b'{"s":"a"}',)], "value BINARY")
    parsed = parse_json(spark, F.col("value").cast("string"), StructType.fromDDL(SCHEMA),
                        CORRUPT, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
    plan = df.select(parsed.alias("v"))._jdf.queryExecution().analyzed().toString().lower()
    assert "coalesce" not in plan and "from_json" in plan
