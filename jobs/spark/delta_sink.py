"""The ``delta`` sink: panes appended to a Delta Lake table, each batch exactly once.

Every batch is one Delta append with Delta's idempotent-write options: ``txnAppId`` = the
store name, ``txnVersion`` = the batch id. Delta records the pair in the same commit as the
rows, and skips a write whose version is not above the last one recorded for that application
id, so a batch re-run after a crash (same panes: the offsets log fixes its input) adds nothing
the second time. The table lives at ``<output root>/panes`` (the results root or
``sink.path``, then the job and store: ``jobs.spark.context.JobContext.panes_path``); late
records and dead letters stay side files beside it, as for Parquet.

The table's columns are the Parquet sink's (``jobs.spark.schema.PANE_DDL``) plus ``batch_id``.
The current result of every window is the view :func:`current_panes_sql` gives (docs/storage.md).

Delta's jars (bundle ``delta``: delta-spark 4.4.0 and delta-storage, fetched by ``make install``)
must be on the session's classpath when it starts: :func:`session_conf`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.spark.context import JobContext

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BUNDLE = "delta"


def session_conf() -> dict[str, str]:
    """Spark configuration a session needs to write and read Delta tables: the bundle's jars
    (a :class:`~jobs.jvmdeps.JvmDepsError` when ``make install`` has not fetched them) and
    Delta's SQL extension and catalog."""
    from jobs.jvmdeps import bundle_jars

    return {
        "spark.jars": ",".join(str(j) for j in bundle_jars(BUNDLE)),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    }


def write_delta(ctx: JobContext, panes: DataFrame, batch_id: int) -> int:
    """Append batch ``batch_id``'s panes to the job's Delta table, once; returns the number of
    panes. The batch is cached for the count and the write (one computation of the stateful
    stage): with idempotent writes Delta may skip the write, so the count cannot ride on it."""
    from pyspark.sql import functions as F

    frame = panes.withColumn("batch_id", F.lit(batch_id).cast("bigint")).persist()
    try:
        n = frame.count()
        (frame.write.format("delta").mode("append")
         .option("txnAppId", ctx.store)
         .option("txnVersion", str(batch_id))
         .save(ctx.panes_path))
    finally:
        frame.unpersist()
    return n


def current_panes_sql(table: str) -> str:
    """SQL over the pane table ``table`` (a name or ``delta.`<path>```) giving each window's
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
    """The current result of every window of ``ctx``'s Delta table (:func:`current_panes_sql`)."""
    return spark.sql(current_panes_sql(f"delta.`{ctx.panes_path}`"))
