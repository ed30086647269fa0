"""The engine path's packed input: what the processor reads back from the packed rows equals,
value for value and dtype for dtype, the frame pyspark's row-by-row regrouping built before."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

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


ORDER = ("__o_mtime", "__o_file", "__o_block")


def ordered_batch() -> pa.RecordBatch:
    """Records of two files whose order columns tie, hold nulls and non-ASCII paths, with a
    source column sharing the name of an order column (by position, it is not one)."""
    n = 12
    files = ["file:///d/é.json", "file:///d/a.json", "file:///d/\u2028.json", None]
    return pa.RecordBatch.from_arrays([
        pa.array([0] * n, pa.int32()),
        pa.array([f'"k{i % 4}"' for i in range(n)]),
        pa.array([1000 * (n - i) for i in range(n)], pa.int64()),
        pa.array([i if i % 5 else None for i in range(n)], pa.int32()),
        pa.array([f"k{i % 4}" for i in range(n)]),
        pa.array([i * 2 for i in range(n)], pa.int64()),
        pa.array([None if i == 3 else "u" + "0" * (i % 2) for i in range(n)]),
        pa.array([dt.datetime(2026, 1, 1, 0, 0, i % 3) if i != 7 else None for i in range(n)],
                 pa.timestamp("us", tz="UTC")),
        pa.array([files[i % 4] for i in range(n)]),
        pa.array([i % 2 for i in range(n)], pa.int64()),
    ], names=["__bucket", "__key", "__et", "__a0", "team", "__o_block", "__dead", *ORDER])


def host_config() -> Any:
    from jobs.definition.parse import load_definition
    from jobs.spark.engine_path.config import HostConfig

    defn = load_definition({
        "name": "o", "source": {"kind": "files", "path": "/tmp/o", "format": "json",
                                "schema": "team STRING, __o_block LONG"},
        "key": "team", "event_time": "__o_block", "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "s", "fn": "sum", "of": "__o_block"}]})
    return HostConfig(defn=defn, agg_names=("s",), agg_has_input=(True,), agg_integral=(True,),
                      source_columns=("team", "__o_block"),
                      input_columns=tuple(ordered_batch().schema.names), checkpoint="c",
                      side_root="s", arrival=False, source_kinds=("string", "long"),
                      order_columns=ORDER)


def test_arrow_arrival_order_and_engine_columns_equal_the_sorted_frame() -> None:
    """The processor sorts in Arrow and converts only the engine's columns: the same rows in
    the same order, the same values and dtypes, as the whole frame sorted by pandas."""
    from jobs.spark.engine_path.input_table import FrameOnce, arrival_order, engine_frame
    from jobs.spark.engine_path.packing import ipc_bytes, unpack_table

    cfg = host_config()
    blobs = [ipc_bytes(ordered_batch().slice(i, 5)) for i in range(0, 12, 5)]

    def chunks() -> Any:
        return iter([pd.DataFrame({"bucket": [0] * len(blobs), "records": blobs})])

    want = unpack_frame(chunks(), TZ)
    want.columns = list(cfg.input_columns)
    # positions, as the processor sorted before: the source column "__o_block" is not the
    # order column of the same name (the last one)
    want = pd.concat([want.iloc[:, :7], want.iloc[:, 7:].set_axis(["m", "f", "b"], axis=1)],
                     axis=1)
    want = want.sort_values(["m", "f", "b"], kind="stable", ignore_index=True)
    want.columns = list(cfg.input_columns)
    table = arrival_order(unpack_table(chunks()), cfg)
    whole = FrameOnce(table, cfg)
    assert_frame_equal(whole(), want, check_exact=True)
    got = engine_frame(table, cfg)
    assert list(got.columns) == ["__key", "__et", "__a0", "__dead"]
    for i, c in enumerate(got.columns):
        assert_frame_equal(got.iloc[:, [i]], want.iloc[:, [list(want.columns).index(c)]],
                           check_exact=True)
    dead = got["__dead"].notna().to_numpy()
    kept = FrameOnce(table, cfg).without(dead)()
    assert_frame_equal(kept, want[~dead].reset_index(drop=True), check_exact=True)
    assert_frame_equal(whole.without(dead)(), kept, check_exact=True)
