"""The native path's state-row count, kept by tidemark instead of by RocksDB's read-before-write.

Why: Spark's RocksDB store keeps its key count (``numRowsTotal``, the catalog's state rows) by
reading every key before it writes or deletes it
(``spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows``, on by default): a second
point lookup for every group a micro-batch touches, on top of the one the aggregation already
makes to restore the group's state (docs/performance.md, "What limits each number"). The
native path switches that off and counts the live (window, key) groups itself from operator
metrics Spark collects anyway (``StateMetrics.java`` reads them from the batch's executed plan):

- the restore operator outputs the stored row next to every input row whose group is stored:
  ``restored = restore output - restore input``;
- every restore input row is either written back or dropped as late by the save operator:
  ``restore input = written + dropped``;
- so ``new groups = written - restored = 2 * written + dropped - restore output``, and
  ``rows after batch N = rows after batch N-1 + new groups - evicted``.

The count before and after the batch goes to ``tidemark_state_rows.json`` in the checkpoint
inside the batch's sink call, i.e. before the batch commits: a batch re-run after a crash reads
the same input from the same state, so it starts from the same base (``prev``) and writes the
same numbers. A checkpoint whose file does not reach its last committed batch (written before
this file existed, or by a run that kept Spark's count) runs with Spark's own count once, whose
per-batch total is written to the same file, so the next start counts for itself. The file
and that rule (``choose_counting``, ``rows_after``) belong to the checkpoint manifest
(``jobs/storage/manifest.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobs.spark.errors import SparkRuntimeError
from jobs.spark.jvm import static_method
from jobs.storage.manifest import (
    COUNT_FILE,
    Counting,
    choose_counting,
    forget_state_rows,
    read_state_rows,
    rows_after,
    write_state_rows,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = [
    "COUNT_FILE", "BatchCounts", "Counting", "StateRowCounter", "batch_counts", "choose_counting",
    "read_counts", "rows_after",
]

TRACK_CONF = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"
METRICS_CLASS = "tidemark.spark.StateMetrics"


@dataclass(frozen=True)
class BatchCounts:
    """What the state operators of one executed micro-batch did (summed over operators)."""

    restored_output: int
    updated: int
    removed: int
    dropped: int
    total: int
    """RocksDB's own count (negative when it does not track one)."""
    operators: int
    save_output: int
    """Rows the save operators emitted: in append mode, one per expired (window, key) group,
    i.e. the batch's panes on the native path."""

    @property
    def new_groups(self) -> int:
        return 2 * self.updated + self.dropped - self.restored_output


def read_counts(checkpoint: str) -> dict[str, int] | None:
    return read_state_rows(checkpoint)


class StateRowCounter:
    """Counts the state's rows batch by batch for one query (``counting`` fixed at start)."""

    def __init__(self, checkpoint: str, counting: Counting) -> None:
        self.checkpoint = checkpoint
        self.counting = counting
        self._last: dict[str, int] | None = read_counts(checkpoint)
        self.failed = False
        """The count could not be kept (see ``after_batch``); the rest of the run reports none."""

    def _base(self, batch_id: int) -> int:
        """The rows before ``batch_id``: after the batch before it, or, for a batch re-run
        after a crash, the "before" its first run recorded."""
        if self._last is None and batch_id == 0:
            return 0
        base = rows_after(self._last, batch_id - 1)
        if base is None:
            raise SparkRuntimeError(
                f"state rows before batch {batch_id} are unknown ({COUNT_FILE}: {self._last})")
        return base

    def after_batch(self, spark: SparkSession, query: StreamingQuery, batch_id: int,
                    counts: BatchCounts | None = None) -> int | None:
        """The state's rows after ``batch_id`` (called in its sink call, after the write;
        ``counts``: the batch's metrics when the caller has read them already).

        A metric must never stop a job: if the count cannot be kept (an unknown base, metrics
        Spark no longer exposes), it logs why, deletes the count file (the next start keeps
        Spark's own count, which rebuilds it) and returns None for the rest of the run, whose
        reports then carry Spark's ``numRowsTotal`` (0 while RocksDB's own count is off)."""
        if self.failed:
            return None
        try:
            return self._count(spark, query, batch_id, counts)
        except Exception as exc:  # any failure here is a failure of the metric only
            import logging

            logging.getLogger(__name__).warning(
                "state rows not counted from batch %s on (%s); the next start keeps Spark's "
                "own count", batch_id, exc)
            self.failed = True
            forget_state_rows(self.checkpoint)
            return None

    def _count(self, spark: SparkSession, query: StreamingQuery, batch_id: int,
               counts: BatchCounts | None) -> int:
        if counts is None:
            counts = batch_counts(spark, query)
        if counts.operators == 0:
            raise SparkRuntimeError("no streaming aggregation in the batch's executed plan")
        if self.counting == "spark":
            rows = max(counts.total, 0)
            base = rows - counts.new_groups + counts.removed
        else:
            base = self._base(batch_id)
            rows = base + counts.new_groups - counts.removed
        record = {"batch": batch_id, "rows": rows, "prev": base}
        write_state_rows(self.checkpoint, record)
        self._last = record
        return rows


def batch_counts(spark: SparkSession, query: StreamingQuery) -> BatchCounts:
    """The state operators' metrics of ``query``'s running micro-batch (its last execution),
    in one py4j call (``StateMetrics.ofQuery``)."""
    of_query = static_method(spark, METRICS_CLASS, "ofQuery")
    if of_query is None:
        raise SparkRuntimeError("the session's JVM has no tidemark jar (StateMetrics)")
    text = of_query(query._jsq)
    if text is None:
        raise SparkRuntimeError("the query has not executed a micro-batch yet")
    v = [int(x) for x in str(text).split(",")]
    return BatchCounts(restored_output=v[0], updated=v[1], removed=v[2], dropped=v[3],
                       total=v[4], operators=v[5], save_output=v[6])
