"""A micro-batch's records cross into the stateful operator packed: one row per (bucket, Arrow
batch of the input), its records as an Arrow IPC stream.

pyspark's ``transformWithStateInPandas`` worker regroups its input row by row (``itertuples``
over every record, then a pandas frame built again from the tuples), which costs Python time per
record and per column. Packed, the operator sees a few rows per bucket; the processor reads the
records back with Arrow and converts them to pandas once, with pyspark's own converter (same
values as before), so nothing per record runs in Python on the way in. The packing runs in
the JVM before the shuffle (:func:`pack_stream`, ``jvm/src/tidemark/spark/Pack.java``): no
Python worker, no Arrow round trip into Python and back. :func:`pack_by_bucket` is the same
packing as a ``mapInArrow`` stage, for a session whose JVM has no tidemark jar.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from jobs.spark.engine_path.config import BUCKET
from jobs.spark.engine_path.profiling import mark_role

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame

PACKED = "__records"
"""The packed column: an Arrow IPC stream of one bucket's records from one chunk of the input."""


def pack_stream(stream: DataFrame) -> DataFrame | None:
    """``stream`` packed in the JVM: one row per (bucket, chunk of a partition's records) of
    columns (:data:`BUCKET`, :data:`PACKED`), the Arrow types, time zone and chunk size of
    :func:`pack_by_bucket` under ``mapInArrow``; None when the session's JVM cannot load
    tidemark's classes (no jar on its class path)."""
    from py4j.java_gateway import JavaClass
    from pyspark.sql.classic.dataframe import DataFrame

    spark = stream.sparkSession
    conf = spark.conf
    timezone = str(conf.get("spark.sql.session.timeZone") or "UTC")
    large = str(conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")).lower()
    chunk = int(str(conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")))
    jvm: Any = spark._jvm
    pack = jvm.tidemark.spark.Pack
    if not isinstance(pack, JavaClass):  # a py4j package: the JVM started without the jar
        return None
    # pyspark reads a non-positive maxRecordsPerBatch as "no limit"
    packed = pack.byBucket(stream._jdf, BUCKET, PACKED, timezone, large == "true",
                           chunk if chunk > 0 else 2**31 - 1)
    return DataFrame(packed, spark)


def pack_by_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: every input batch as one row per bucket (column 0) holding that
    bucket's records, in their order, as an Arrow IPC stream."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mark_role("packing")
    for batch in batches:
        if batch.num_rows == 0:
            continue
        buckets = batch.column(0)
        values = pc.unique(buckets)
        out_buckets: list[Any] = []
        out_blobs: list[bytes] = []
        for v in values.to_pylist():
            if len(values) == 1:
                part = batch
            elif v is None:
                part = batch.filter(pc.is_null(buckets))
            else:
                part = batch.filter(pc.fill_null(pc.equal(buckets, pa.scalar(v, buckets.type)),
                                                 False))
            out_buckets.append(v)
            out_blobs.append(ipc_bytes(part))
        yield pa.RecordBatch.from_arrays(
            [pa.array(out_buckets, type=buckets.type), pa.array(out_blobs, type=pa.binary())],
            names=[BUCKET, PACKED])


def ipc_bytes(batch: pa.RecordBatch) -> bytes:
    """``batch`` as an Arrow IPC stream."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def unpack_frame(chunks: Iterator[pd.DataFrame], timezone: str) -> pd.DataFrame:
    """The records of a bucket's packed rows (the pandas chunks pyspark hands the processor,
    last column: :data:`PACKED`) as one pandas frame, in their order, with the dtypes pyspark's
    unpacked path gave: pyspark's Arrow-to-pandas conversion, then integers as int64 and
    floats as float64 (pyspark rebuilt its frames from Python values, which widened both)."""
    return table_frame(unpack_table(chunks), timezone)


def unpack_table(chunks: Iterator[pd.DataFrame]) -> pa.Table:
    """The records of a bucket's packed rows as one Arrow table (one chunk), in their order."""
    import pyarrow as pa

    tables = []
    for chunk in chunks:
        for blob in chunk.iloc[:, -1].tolist():
            tables.append(pa.ipc.open_stream(pa.py_buffer(blob)).read_all())
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return table.combine_chunks()


def table_frame(table: pa.Table, timezone: str) -> pd.DataFrame:
    """``table`` as the pandas frame :func:`unpack_frame` gives (columns numbered). Each column
    is converted on its own, so the frame of some of a table's columns holds exactly those
    columns of the whole table's frame."""
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql.conversion import ArrowBatchTransformer

    batch = table.to_batches()
    data = (batch[0] if len(batch) == 1
            else pa.Table.from_batches(batch, schema=table.schema).combine_chunks())
    series = [_widened(s) for s in ArrowBatchTransformer.to_pandas(data, timezone=timezone)]
    return pd.concat(series, axis=1, ignore_index=True)


def _widened(s: Any) -> Any:
    kind = s.dtype.kind
    if kind in "iu" and s.dtype != "int64":
        return s.astype("int64")
    if kind == "f" and s.dtype != "float64":
        return s.astype("float64")
    return s
