"""The engine path's packed input: what the processor reads back from the packed rows equals,
value for value and dtype for dtype, the frame pyspark's row-by-row regrouping built before."""

from __future__ import annotations

import datetime as dt
import decimal

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.testing import assert_frame_equal
from pyspark.sql.conversion import ArrowBatchTransformer

from jobs.spark.engine_path.packing import pack_by_bucket, unpack_frame

TZ = "UTC"


def awkward_batch(offset: int) -> pa.RecordBatch:
    n = 7
    return pa.RecordBatch.from_arrays([
        pa.array([offset + i % 3 for i in range(n)], pa.int64()),
        pa.array(['"a"', '"b"', None, '"é"', '"a"', '"c"', '"\\u2028"']),
        pa.array([5, 1, 3, 2, 2, 9, 0], pa.int64()),
        pa.array([1.5, None, float("nan"), -0.0, 2.0, float("inf"), 3.25], pa.float64()),
        pa.array([1, None, 3, 4, 5, 6, 7], pa.int32()),
        pa.array([1, 2, 3, 4, 5, 6, 7], pa.int16()),
        pa.array([1.5, 2.5, None, 4.0, 5.0, 6.0, 7.0], pa.float32()),
        pa.array([True, None, False, True, True, False, True]),
        pa.array([dt.datetime(2026, 1, 1, 0, 0, i) for i in range(6)] + [None],
                 pa.timestamp("us", tz="UTC")),
        pa.array([dt.date(2026, 1, i + 1) for i in range(n)]),
        pa.array([decimal.Decimal("1.10")] * 6 + [None], pa.decimal128(5, 2)),
        pa.array([None] * n, pa.string()),
    ], names=["__bucket", "__key", "__et", "f", "i32", "i16", "f32", "b", "ts", "d", "dec", "nul"])


def before(batches: list[pa.RecordBatch]) -> dict[int, pd.DataFrame]:
    """What pyspark's transformWithStateInPandas worker handed the processor, per bucket, when
    a shuffle partition holds one bucket (the layout of ``buckets``): the bucket's rows arrive
    in Arrow batches (of 3 rows here), each converted to pandas, ``itertuples`` over every
    row, one frame rebuilt from the tuples."""
    table = pa.Table.from_batches(batches)
    out: dict[int, pd.DataFrame] = {}
    for b in sorted(set(table.column(0).to_pylist())):
        part = table.filter(pc.equal(table.column(0), b)).combine_chunks()
        rows = []
        for chunk in part.to_batches(max_chunksize=3):
            frame = pd.concat(ArrowBatchTransformer.to_pandas(chunk, timezone=TZ), axis=1)
            rows.extend(frame.itertuples(index=False))
        out[b] = pd.DataFrame(rows)
    return out


def after(batches: list[pa.RecordBatch]) -> dict[int, pd.DataFrame]:
    """The packed rows per bucket, read back as the processor reads them."""
    packed: dict[int, list[bytes]] = {}
    for out in pack_by_bucket(iter(batches)):
        for b, blob in zip(out.column(0).to_pylist(), out.column(1).to_pylist(), strict=True):
            packed.setdefault(b, []).append(blob)
    chunks = {b: [pd.DataFrame({"bucket": [b] * len(v), "records": v})]
              for b, v in packed.items()}
    return {b: unpack_frame(iter(c), TZ) for b, c in chunks.items()}


def test_unpacked_frames_equal_pysparks_regrouped_frames() -> None:
    batches = [awkward_batch(0), awkward_batch(1)]
    old, new = before(batches), after(batches)
    assert sorted(old) == sorted(new) == [0, 1, 2, 3]
    for b in old:
        o, n = old[b], new[b]
        o.columns = n.columns = range(len(n.columns))
        assert_frame_equal(n, o, check_exact=True)
        # the records keep their order within the bucket (arrival order)
        assert n[2].tolist() == o[2].tolist()


def test_one_bucket_batch_is_one_row() -> None:
    one = awkward_batch(0).filter(pa.array([True, False, False, True, False, False, True]))
    out = list(pack_by_bucket(iter([one, one.slice(0, 0)])))
    assert len(out) == 1 and out[0].num_rows == 1 and out[0].column(0).to_pylist() == [0]
