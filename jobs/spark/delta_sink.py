"""The ``delta`` sink: panes appended to a Delta Lake table, each batch exactly once.

Written with ``deltalake`` (delta-rs) from the driver, not with Delta's Spark jars: delta-spark
4.4.0, the newest on Maven Central, is built for Spark 4.2 and fails on pyspark 4.3.0 inside its
first write (``NoSuchMethodError: LogicalRDD.<init>``, docs/storage.md), and no release fits
Spark 4.3 yet.

Every batch with panes is one Delta commit carrying an application transaction (Delta's ``txn`` action):
application id = the store name, version = the batch id, in the same commit as the rows. Before
writing, the table's recorded version for the store is read; a batch whose id is not above it
was committed already (a batch re-run after a crash: same panes, since the offsets log fixes its
input) and is skipped, so nothing is written twice. The table lives at ``<output root>/panes``
(the results root or ``sink.path``, then the job and store: ``JobContext.panes_path``); late
records and dead letters stay side files beside it, as for Parquet.

The table's columns are the Parquet sink's (``jobs.spark.schema.PANE_DDL``) plus ``batch_id``.
The current result of every window: :func:`current_panes_sql` (docs/storage.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.spark.context import JobContext
from jobs.spark.errors import SparkRuntimeError
from jobs.storage import is_local, local_path
from jobs.storage.s3options import S3Options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def table_uri(location: str) -> str:
    """The table's URI for delta-rs: a local path as a plain path; ``s3a://`` as ``s3://``
    (delta-rs's name for it); other URIs as they are."""
    if is_local(location):
        return local_path(location)
    if location.startswith("s3a://"):
        return "s3://" + location[len("s3a://"):]
    return location


def storage_options(location: str, s3: S3Options | None) -> dict[str, str] | None:
    """delta-rs's options for the table: the S3 endpoint and credentials of an ``s3a://``
    location (``Settings.s3``), none elsewhere."""
    return s3.delta_options() if s3 is not None and location.startswith("s3a://") else None


def committed_version(uri: str, app_id: str,
                      options: dict[str, str] | None = None) -> int | None:
    """The last batch id the table recorded for ``app_id`` (None: none, or no table yet)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        version = DeltaTable(uri, storage_options=options).transaction_version(app_id)
    except TableNotFoundError:
        return None
    return None if version is None else int(version)


def write_delta(ctx: JobContext, panes: DataFrame, batch_id: int) -> int:
    """Append batch ``batch_id``'s panes to the job's Delta table, once; returns the number of
    panes (also for a batch found already committed, which is not written again)."""
    import pyarrow as pa
    from deltalake import CommitProperties, Transaction, write_deltalake
    from pyspark.sql import functions as F

    uri = table_uri(ctx.panes_path)
    options = storage_options(ctx.panes_path, ctx.s3)
    table: pa.Table = panes.withColumn("batch_id", F.lit(batch_id).cast("bigint")).toArrow()
    if table.num_rows == 0:
        return 0  # no commit for a batch without panes (a re-run of it writes nothing either)
    done = committed_version(uri, ctx.store, options)
    if done is not None and batch_id <= done:
        return table.num_rows
    try:
        write_deltalake(uri, table, mode="append", storage_options=options,
                        commit_properties=CommitProperties(
            app_transactions=[Transaction(app_id=ctx.store, version=batch_id)]))
    except Exception as exc:  # delta-rs raises its own types; one message naming the table
        raise SparkRuntimeError(f"delta table {uri}: batch {batch_id} not written ({exc})",
                                "sink") from exc
    return table.num_rows


def read_table(location: str, s3: S3Options | None = None) -> Any:
    """The table's current rows as a pyarrow Table (no Spark); ``s3`` reaches an ``s3a://``
    table."""
    from deltalake import DeltaTable

    return DeltaTable(table_uri(location),
                      storage_options=storage_options(location, s3)).to_pyarrow_table()


def current_panes_sql(table: str) -> str:
    """Spark SQL over the pane table ``table`` (a view or table name) giving each window's
    current result: per (store, key, window) its latest pane, unless that is a retraction.

    A retraction carries the pane index of the pane it withdraws and comes after it, so the
    latest is the highest pane index, then the latest batch, then the retraction. A window
    whose latest pane is a retraction was replaced (sessions that merged) and has no result."""
    return f"""
SELECT job, version, store, key, window_start, window_end, timing, pane_index, is_last,
       `values`, emitted_at, watermark, batch_id
FROM (
  SELECT *, row_number() OVER (
      PARTITION BY store, key, window_start, window_end
      ORDER BY pane_index DESC, batch_id DESC, retraction DESC) AS rn
  FROM {table}
)
WHERE rn = 1 AND NOT retraction
""".strip()


def current_panes(spark: SparkSession, ctx: JobContext) -> DataFrame:
    """The current result of every window of ``ctx``'s Delta table (:func:`current_panes_sql`),
    the table read with delta-rs into a temporary view ``tidemark_panes_<store>``."""
    view = f"tidemark_panes_{ctx.store}"
    spark.createDataFrame(read_table(ctx.panes_path, ctx.s3)).createOrReplaceTempView(view)
    return spark.sql(current_panes_sql(f"`{view}`"))
