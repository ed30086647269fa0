"""Building and running one job's streaming query.

``JobRunner(spark, ctx).run()`` starts the query for the job's execution path, then loops:
every half second it reports newly committed batches (progress, snapshot, late counts) and
checks for a stop request. Stopping is graceful: it waits until the running micro-batch has
committed (no trigger active), then stops the query, so a SIGTERM never leaves a half-written
batch behind (and if it did, the idempotent sinks would make the re-run harmless anyway).
``until_idle`` uses Spark's ``availableNow`` trigger: process what is there, then end.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.spark.bookkeeping import BatchReport, Reporter, build_report
from jobs.spark.checkpoint import unfinished_batches
from jobs.spark.context import JobContext
from jobs.spark.engine_path.config import ARRIVAL
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.extract import (
    EVENT_TIME,
    KEY,
    agg_column,
    build_projection,
    key_json_column,
    raw_key_possible,
)
from jobs.spark.gate import KEY_TEXT, WLIM, GateConfig, make_gate
from jobs.spark.gate_jvm import batch_facts, build_jvm_gate
from jobs.spark.jvm import register as register_jvm_functions
from jobs.spark.key_layout import choose_key_layout
from jobs.spark.path_guard import claim_path
from jobs.spark.plan import SHIFT_FLOOR, shift_for, window_step
from jobs.spark.schema import CORRUPT_COLUMN
from jobs.spark.sinks import (
    FLOAT_TYPES,
    PANE_COLUMNS,
    clear_side_files,
    pane_frame,
    pane_projection,
    write_panes,
)
from jobs.spark.sources import ORDER_COLUMNS, arrival_order_columns, read_stream
from jobs.spark.state_rows import (
    TRACK_CONF,
    BatchCounts,
    StateRowCounter,
    batch_counts,
    choose_counting,
    read_counts,
    rows_after,
)
from jobs.storage.manifest import committed_batches, is_committed

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from jobs.spark.engine_path.config import TimeMode

log = logging.getLogger(__name__)

CatalogPaneWriter = Callable[[int, list[dict[str, Any]]], None]

STOP_POLL_SECONDS = 0.005
"""How often a stop under way looks for the running batch's commit: a batch that starts after
the commit and before the next look is abandoned and re-run on restart, so look often (only
while stopping, never on the hot path)."""


@dataclass
class RunOptions:
    until_idle: bool = False
    trigger_interval: str = "1 second"
    source_options: dict[str, str] = field(default_factory=dict)
    poll_seconds: float = 0.5
    heartbeat_seconds: float = 10.0
    buckets: int | None = None
    """Engine path: buckets (one engine, one state blob, one Python call per micro-batch each);
    default = spark.sql.shuffle.partitions."""
    arrival_column: str | None = None
    """Test mode (engine path): processing time of a batch = max of this epoch-ms column."""
    stop_timeout_seconds: float = 120.0


class JobRunner:
    def __init__(
        self,
        spark: SparkSession,
        ctx: JobContext,
        options: RunOptions | None = None,
        reporter: Reporter | None = None,
        catalog_writer: CatalogPaneWriter | None = None,
    ) -> None:
        self.spark = spark
        self.ctx = ctx
        self.options = options or RunOptions()
        self.reporter = reporter
        self.catalog_writer = catalog_writer
        self.stop_requested = threading.Event()
        self.reports: list[BatchReport] = []
        self._reported: set[int] = set()
        self._highest_reported: int | None = None
        """The newest batch ``drain_progress`` reported (backfilled ones do not count)."""
        self._last_seen: tuple[Any, Any] | None = None
        """(batch id, timestamp) of the newest progress event already drained."""
        self._panes: dict[int, int] = {}
        self._state_rows: dict[int, int] = {}
        self.state_counter: StateRowCounter | None = None
        """Native path with tidemark's JVM functions: counts the state's rows itself, so that
        RocksDB need not read before every write (jobs/spark/state_rows.py)."""
        self._query_ready = threading.Event()
        self._to_ours: Callable[[int], int | None] = lambda wm: wm if wm > 0 else None
        self.query: StreamingQuery | None = None
        self.gate_kind: str | None = None
        """Which gate the query runs: ``jvm`` (native path, JVM functions available) or
        ``python`` (mapInArrow; the engine path's dead-letter split, or the fallback)."""
        self._gate_cfg: GateConfig | None = None
        self.on_poll: Callable[[], object] | None = None
        """Called every ``heartbeat_seconds`` while the query runs (the run's heartbeat)."""
        self.time_mode: TimeMode = "EventTime"
        """The engine path's stateful time mode. Under ``ProcessingTime`` Spark runs a no-data
        batch at every trigger (timers are due), so ``availableNow`` never ends by itself:
        ``run`` ends it after the first no-data batch (all input processed, every bucket
        caught up with the last batch's time and watermark)."""

    # ------------------------------------------------------------ building

    def build(self) -> Any:
        """Analyse the definition and return the configured DataStreamWriter (not started)."""
        ctx = self.ctx
        defn = ctx.defn
        if defn.watermark.strategy == "source":
            raise SparkRuntimeError(
                f"the {defn.source.kind} source carries no watermarks; use bounded",
                "watermark.strategy",
            )
        ctx.prepare_storage(self.spark)  # a bad or unreachable location fails before any batch
        claim_path(ctx.checkpoint, ctx.plan.path, job=ctx.job, version=ctx.version,
                   reasons=ctx.plan.reasons)
        src = read_stream(self.spark, defn, self.options.source_options)
        # expressions are analysed on the stream itself: analysis starts nothing, and an empty
        # batch DataFrame cost ~0.5 s of every job start (createDataFrame's first call)
        raw_key = False
        if ctx.plan.native:
            raw_key = choose_key_layout(
                ctx.checkpoint, raw_key_possible(defn, src)) == "raw"
        projection = build_projection(defn, src.schema, src, raw_key=raw_key)
        if not ctx.plan.native:
            # the engine path restores each batch's arrival order after the shuffle
            projected = src.select(*projection.columns, *arrival_order_columns(src, defn))
            return self._engine_writer(projected, projection)
        projected = src.select(*projection.columns)
        if not ctx.plan.native:
            return self._engine_writer(projected, projection)
        return self._native_writer(projected, projection)

    def _gate(self, projected: DataFrame, projection: Any, native: bool) -> DataFrame:
        """Dead letters split off (and, on the native path, lateness judged) in one pass."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import LongType, StructField, StructType

        ctx, defn = self.ctx, self.ctx.defn
        size, step = window_step(defn) if native else (1, 1)
        extra: tuple[str, ...] = ()
        if not native:
            extra = tuple(projection.source_columns) + tuple(
                c for c in ORDER_COLUMNS if c in projected.columns)
            if self.options.arrival_column:
                projected = projected.withColumn(
                    ARRIVAL, F.col(f"`{self.options.arrival_column}`").cast("bigint"))
                extra = (*extra, ARRIVAL)
        out_cols = (KEY, EVENT_TIME, *[agg_column(i) for i in range(len(defn.aggregations))],
                    *extra)
        cfg = GateConfig(
            job=ctx.job, version=ctx.version, store=ctx.store, checkpoint=ctx.checkpoint,
            side_root=ctx.output_root, has_key=defn.key is not None, size=size, step=step,
            align_to=defn.window.align_to, allowed_lateness=defn.allowed_lateness,
            event_basis=defn.lateness_basis == "event", shift=shift_for(step),
            out_columns=out_cols, source_columns=tuple(projection.source_columns),
            corrupt_column=CORRUPT_COLUMN, judge_lateness=native, key_raw=projection.key_raw,
        )
        self._to_ours = cfg.our_watermark
        self._gate_cfg = cfg
        by_name = {f.name: f for f in projected.schema.fields}
        gate_schema = StructType(
            [by_name[c] for c in out_cols] + [StructField(WLIM, LongType(), False)]
        )
        if native and register_jvm_functions(self.spark):
            self.gate_kind = "jvm"
            return build_jvm_gate(projected, cfg)
        self.gate_kind = "python"
        if cfg.key_raw:  # the Python gate writes late records with the key's JSON text
            projected = projected.withColumn(KEY_TEXT, key_json_column(F.col(KEY)))
        return projected.mapInArrow(make_gate(cfg), gate_schema)

    def _native_writer(self, projected: DataFrame, projection: Any) -> Any:
        from jobs.spark.native import build_native, native_pane_columns

        ctx, defn = self.ctx, self.ctx.defn
        aggregated = build_native(self._gate(projected, projection, native=True), defn)
        columns = native_pane_columns(defn, projection)
        to_ours = self._to_ours

        if self.gate_kind == "jvm" and self._gate_cfg is not None:
            # pane rows built inside the streaming query, batch facts from the JVM's batch
            # functions: Spark compiles the projection once instead of every batch (measured:
            # docs/performance.md, "What limits each number"), and the driver only writes
            emitted_at, watermark = batch_facts(self.spark, self._gate_cfg)
            aggregated = pane_projection(ctx, aggregated, columns, emitted_at, watermark,
                                         bare_key=projection.key_type in FLOAT_TYPES)
            counter = self.state_counter = StateRowCounter(
                ctx.checkpoint, choose_counting(ctx.checkpoint))

            def write_batch(batch: DataFrame, batch_id: int) -> None:
                # the handle is set as soon as start() returns; without it this batch's state
                # rows go uncounted (and, without tidemark's jar, its panes are counted by an
                # observed metric), and the next batch finds no base and falls back
                # (state_rows.py)
                query = self.query if self._query_ready.wait(60) else None
                read: list[BatchCounts] = []

                def written() -> int | None:
                    """The panes just written when Spark's own writer wrote them (without
                    tidemark's jar): what the save operator emitted (one metrics read after
                    the write serves the state-row count too)."""
                    assert query is not None
                    try:
                        read.append(batch_counts(self.spark, query))
                    except Exception as exc:  # a metric must never stop a job
                        log.warning("batch %s: panes not counted from metrics (%s)",
                                    batch_id, exc)
                        return None
                    return read[0].save_output if read[0].operators else None

                self._panes[batch_id] = write_panes(
                    ctx, batch, batch_id, self.catalog_writer,
                    written if query is not None else None)
                if query is not None:
                    rows = counter.after_batch(self.spark, query, batch_id,
                                               read[0] if read else None)
                    if rows is not None:
                        self._state_rows[batch_id] = rows
        else:
            def write_batch(batch: DataFrame, batch_id: int) -> None:
                from jobs.storage.manifest import read_batch_info

                wm = to_ours(read_batch_info(ctx.checkpoint, batch_id).watermark_ms)
                panes = pane_frame(ctx, batch, columns, batch_id, wm)
                self._panes[batch_id] = write_panes(ctx, panes, batch_id, self.catalog_writer)

        return (
            aggregated.writeStream.outputMode("append")
            .foreachBatch(write_batch)
            .option("checkpointLocation", ctx.checkpoint)
        )

    def _engine_writer(self, projected: DataFrame, projection: Any) -> Any:
        from pyspark.sql import functions as F

        from jobs.spark.engine_path.dead_letters import dead_letter_kinds
        from jobs.spark.engine_path.stream import EngineStreamSpec, build_engine_stream
        from jobs.spark.engine_path.time_mode import time_mode

        ctx, defn = self.ctx, self.ctx.defn
        # Dead letters: marked in SQL and split off inside the stateful processor, so every
        # record crosses into Python once; only a source schema whose dead-letter text cannot
        # be rebuilt exactly from pandas (nested, binary...) still runs the gate first.
        kinds = dead_letter_kinds(projected.schema, projection.source_columns)
        if kinds is None:
            staged = self._gate(projected, projection, native=False)
        else:
            staged = projected
            if self.options.arrival_column:
                staged = staged.withColumn(
                    ARRIVAL, F.col(f"`{self.options.arrival_column}`").cast("bigint"))
        self._to_ours = lambda wm: wm - SHIFT_FLOOR if wm > 0 else None
        buckets = self.options.buckets or int(
            self.spark.conf.get("spark.sql.shuffle.partitions") or "4")
        self.time_mode = time_mode(defn, ctx.checkpoint)
        out = build_engine_stream(staged, EngineStreamSpec(
            defn=defn, source_columns=projection.source_columns, buckets=buckets,
            checkpoint=ctx.checkpoint, side_root=ctx.output_root,
            arrival=bool(self.options.arrival_column), dead_kinds=kinds,
            corrupt_column=CORRUPT_COLUMN, ident=(ctx.job, ctx.version, ctx.store),
            time_mode=self.time_mode,
            order=tuple(c for c in ORDER_COLUMNS if c in staged.columns)))
        # built once: every Column made in Python is a py4j round trip and a call-site capture
        is_pane = F.col("kind") == "pane"
        pane_cols = [
            F.lit(ctx.job).alias("job"), F.lit(ctx.version).cast("int").alias("version"),
            F.lit(ctx.store).alias("store"), *(F.col(f"`{c}`") for c in PANE_COLUMNS)]

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            # The operator emits panes only (its tasks write late records, late counts and
            # dead letters as side files themselves): one Spark job, no cache, no collect.
            panes = batch.where(is_pane).select(*pane_cols)
            self._panes[batch_id] = write_panes(ctx, panes, batch_id, self.catalog_writer)

        return (
            out.writeStream.outputMode("append")
            .foreachBatch(write_batch)
            .option("checkpointLocation", ctx.checkpoint)
        )

    def start(self) -> StreamingQuery:
        writer = self.build()
        for batch_id in unfinished_batches(self.ctx.checkpoint):  # runs again: starts clean
            clear_side_files(self.ctx.output_root, batch_id)
        if self.options.until_idle:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=self.options.trigger_interval)
        name = f"tidemark_{self.ctx.store}_{int(time.time() * 1000)}"
        counter = self.state_counter
        if counter is not None and counter.counting == "tidemark":
            # the query copies the session's configuration when it starts: RocksDB skips its
            # read-before-write for this query only (the session keeps what it had)
            before = self.spark.conf.get(TRACK_CONF, None)
            self.spark.conf.set(TRACK_CONF, "false")
            try:
                self.query = writer.queryName(name).start()
            finally:
                if before is None:
                    self.spark.conf.unset(TRACK_CONF)
                else:
                    self.spark.conf.set(TRACK_CONF, before)
        else:
            self.query = writer.queryName(name).start()
        self._query_ready.set()
        return self.query

    # ------------------------------------------------------------ running

    def run(self) -> str:
        """Run until the query ends (``until_idle``) or a stop is requested; returns the exit
        reason (``idle`` / ``stopped``). Raises the query's exception if it failed."""
        q = self.query or self.start()
        self.backfill()
        reason = "idle"
        last_beat = 0.0
        while True:
            if self.on_poll is not None and time.monotonic() - last_beat >= self.options.heartbeat_seconds:
                self.on_poll()
                last_beat = time.monotonic()
            if q.awaitTermination(self.options.poll_seconds):  # type: ignore[arg-type]
                break
            self.drain_progress()
            if self.stop_requested.is_set():
                self._graceful_stop(q)
                reason = "stopped"
                break
            if self._idle_reached(q):
                # availableNow under ProcessingTime runs no-data batches back to back: catch
                # the gap between two (fine polling), else stop inside one — it commits
                # nothing, and a restart re-runs it with the same batch time
                self._graceful_stop(q, timeout=1.0)
                break
        self.drain_progress()
        exc = q.exception()
        if exc is not None:
            raise SparkRuntimeError(f"the streaming query failed: {exc}")
        return reason

    def _idle_reached(self, q: StreamingQuery) -> bool:
        """``until_idle`` under the ProcessingTime mode: a batch that read nothing (every
        source's start offset equals its end offset) has completed. ``availableNow`` runs
        every data batch first, so all input available at the start has been processed."""
        if not (self.options.until_idle and self.time_mode == "ProcessingTime"):
            return False
        last = q.lastProgress
        if last is None:
            return False
        sources = _progress_dict(last).get("sources") or []
        return bool(sources) and all(
            s.get("startOffset") is not None and s.get("startOffset") == s.get("endOffset")
            for s in sources)

    def _graceful_stop(self, q: StreamingQuery, timeout: float | None = None) -> None:
        """Stop as soon as the micro-batch running now has committed (a gap between batches,
        or a newer batch in the progress events) if that happens within ``timeout`` (default:
        the options' stop timeout), else stop anyway (the running batch is not committed and
        is re-run on restart)."""
        limit = self.options.stop_timeout_seconds if timeout is None else timeout
        deadline = time.monotonic() + limit
        # batches run back to back when input is backlogged (an EventTime job catching up) or
        # a batch takes longer than the trigger interval (ProcessingTime), so there may be no
        # gap to catch: stop once the running batch has committed (the next one has then only
        # just started, commits nothing, and a restart re-runs it from the offsets log with the
        # same input and batch time). Before, a SIGTERM waited out the whole timeout.
        first = _last_batch_id(q)
        while q.isActive and q.status.get("isTriggerActive") and time.monotonic() < deadline:
            if _last_batch_id(q) != first:
                break
            time.sleep(STOP_POLL_SECONDS)
        q.stop()

    def backfill(self) -> None:
        """Report committed batches the catalog never heard of: a driver killed between a
        batch's commit and its report loses the report, not the batch. Their Spark metrics
        are gone (reported as 0); snapshot, watermark, late counts and dead letters are rebuilt
        from the checkpoint and the batch's side files."""
        if self.reporter is None or not hasattr(self.reporter, "known_batches"):
            return
        known = self.reporter.known_batches()
        for bid in committed_batches(self.ctx.checkpoint):
            if bid in known or bid in self._reported:
                continue
            report = build_report(self.ctx, {"batchId": bid, "durationMs": {}}, self._to_ours,
                                  state_rows=self._counted_rows(bid))
            self._reported.add(bid)
            self.reports.append(report)
            self.reporter.report(report)

    def drain_progress(self) -> None:
        """Report every committed batch not reported yet (oldest first).

        Called twice a second for as long as the job runs, so it first looks at the newest
        progress event's batch id and timestamp only (two fields read from the JVM's object):
        when that is the event it saw last time (and nothing was left waiting for its commit),
        there is nothing to report. Else it decodes that event; when it is the batch after that
        one, it is the only one to report. Only otherwise is the whole ``recentProgress``
        list (up to 100 events, JSON-decoded) fetched."""
        q = self.query
        if q is None:
            return
        peek = _newest_progress_id(q)
        if peek is not None and peek == self._last_seen:
            return  # nothing new: no progress event rendered to JSON, none decoded
        last = q.lastProgress
        if last is None:
            return
        newest = _progress_dict(last)
        seen = (newest.get("batchId"), newest.get("timestamp"))
        if seen == self._last_seen:
            return
        pending = False
        # the common case, one batch since the last poll: the newest event is all there is
        # to report; else the whole list (up to 100 events, each rendered to JSON by the JVM)
        one_more = (self._highest_reported is not None
                    and newest.get("batchId") == self._highest_reported + 1)
        events = [newest] if one_more else [_progress_dict(p) for p in q.recentProgress]
        for prog in events:
            bid = int(prog["batchId"])
            if bid in self._reported or "addBatch" not in (prog.get("durationMs") or {}):
                continue  # already reported, or an idle "waiting for data" event
            if not is_committed(self.ctx.checkpoint, bid):
                pending = True
                continue  # not committed yet: not a recovery point
            report = build_report(self.ctx, prog, self._to_ours, self._panes.pop(bid, 0),
                                  self._state_rows.pop(bid, None))
            self._reported.add(bid)
            self._highest_reported = max(bid, self._highest_reported or bid)
            self.reports.append(report)
            if self.reporter is not None:
                self.reporter.report(report)
        if not pending:
            self._last_seen = seen

    def _counted_rows(self, batch_id: int) -> int | None:
        """The state's rows after ``batch_id`` as the native path's count file still knows
        them (a backfilled batch's Spark metrics are gone)."""
        if self.state_counter is None:
            return None
        return rows_after(read_counts(self.ctx.checkpoint), batch_id)


def _progress_dict(progress: Any) -> dict[str, Any]:
    """A progress event as a dict (pyspark hands out objects with ``.json`` or dicts)."""
    if hasattr(progress, "json"):
        return dict(json.loads(progress.json))
    return dict(progress)


def _newest_progress_id(q: StreamingQuery) -> tuple[Any, Any] | None:
    """(batch id, timestamp) of the newest progress event, read field by field from the JVM's
    object (pyspark's ``lastProgress`` renders the whole event to JSON and decodes it); None
    when there is none yet or the query has no JVM handle (then the caller reads the event)."""
    jsq = getattr(q, "_jsq", None)
    if jsq is None:
        return None
    jprogress = jsq.lastProgress()
    if jprogress is None:
        return None
    return jprogress.batchId(), jprogress.timestamp()


def _last_batch_id(q: StreamingQuery) -> Any:
    """The id of the newest completed micro-batch (None before the first)."""
    last = q.lastProgress
    return None if last is None else _progress_dict(last).get("batchId")
