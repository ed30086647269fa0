"""The stateful processor Spark calls once per bucket and micro-batch (RocksDB state).

Watermark (global scope): Spark computes it over all partitions (``withWatermark`` on the
shifted event time, see ``plan.SHIFT_FLOOR``) and hands it to each call; the engine runs in
``external`` mode. The watermarked column is projected away before the operator, so Spark does
not drop late rows itself: the engine judges lateness by docs/semantics.md. Every bucket keeps one
timer (``time_mode``: at ``watermark + 1`` or at ``now + 1``), so a bucket that received no
records is still woken and its windows fire. Per-key watermarks (``scope: key``) and the
processing clock need no global view: those engines run in ``internal`` mode.

Order inside one call, chosen so that panes equal replay's: first advance the watermark to the
batch's (firing windows that earlier batches' records closed, with the processing time of the
batch that advanced it, as replay does), then ingest the batch's records.

Panes leave as output rows (``output``). Late records, late counts, dead letters and the test
mode's arrival mark are written by the task itself in ``close()``, one file per (kind, batch,
partition) with an atomic rename, as the gate writes its own: the driver's batch writer is then
one Spark job (no cache of the output, no collect of side rows). The cyclic GC is paused during
a call.

This module imports pyspark when it is imported: only the stream builder and Spark's Python
workers import it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from jobs.engine import make_engine
from jobs.engine.protocol import WindowingEngine
from jobs.spark.engine_path.batch_input import LazyRecords, record_batch
from jobs.spark.engine_path.config import ARRIVAL, DEAD, STATE_NAME, HostConfig, engine_mode
from jobs.spark.engine_path.dead_letters import dead_letter_lines
from jobs.spark.engine_path.engine_cache import cache_key, remember, take_cached
from jobs.spark.engine_path.engine_calls import (
    Output,
    advance_watermark,
    ingest,
    output_frame,
    split_output,
)
from jobs.spark.engine_path.input_table import FrameOnce, arrival_order, engine_frame
from jobs.spark.engine_path.packing import unpack_table
from jobs.spark.engine_path.processor_shell import STATE_SCHEMA
from jobs.spark.engine_path.profiling import phase, task_profile
from jobs.spark.engine_path.state_blob import blob_token, encode_engine, restore_engine

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")


class EngineProcessor(StatefulProcessor):
    """One instance per task (a partition of one micro-batch); grouping key = the bucket.

    Pickled to the workers by reference to this module, with its ``cfg`` by value."""

    def __init__(self, cfg: HostConfig) -> None:
        self.cfg = cfg

    def init(self, handle: Any) -> None:
        self.attach(handle, handle.getValueState(STATE_NAME, STATE_SCHEMA))

    def attach(self, handle: Any, state: Any) -> None:
        """Start a task with Spark's processor handle and the bucket's value state (``init``
        registers it; :class:`~jobs.spark.engine_path.processor_shell.ProcessorShell` does it
        for the processor it loads on a task's first call)."""
        self.side: dict[str, list[str]] = {}
        """Side lines of this task (one partition of one micro-batch), written by close()."""
        self.arrival: int | None = None
        self.handle = handle
        self.state = state
        self.mode = engine_mode(self.cfg.defn)
        self.prof = task_profile()

    # ------------------------------------------------------------ state

    def _load(self, key: Any) -> WindowingEngine:
        """The bucket's engine: the one this worker kept after its last save when the store
        still holds exactly that save (same token), else restored from the blob. The cache
        entry is taken out first, so a call that fails half way can never leave a
        half-updated engine behind for the next one."""
        cached = take_cached(cache_key(self.cfg.checkpoint, key))
        with phase(self.prof, "state_get"):
            # one call to the state server: ``get`` is None for a bucket without state
            value = self.state.get()
            if value is None:
                return make_engine(self.cfg.defn, None, self.mode)
            blob = value[0]
        if cached is not None and cached[0] == blob_token(blob):
            return cached[1]
        with phase(self.prof, "state_restore"):
            return restore_engine(self.cfg.defn, blob, self.mode)

    def _save(self, eng: WindowingEngine, key: Any) -> None:
        with phase(self.prof, "state_encode"):
            blob, token = encode_engine(eng)
        with phase(self.prof, "state_update"):
            self.state.update((blob,))
        if token is not None:
            remember(cache_key(self.cfg.checkpoint, key), token, eng)

    # ------------------------------------------------------------ time

    def _watermark(self, timer_values: Any) -> int | None:
        wm = int(timer_values.getCurrentWatermarkInMs())
        return wm - self.cfg.shift if wm > 0 else None

    def _catch_up(self, eng: WindowingEngine, timer_values: Any) -> list[Output]:
        """Bring the engine to where the previous batch left the job: its processing time,
        then the watermark it established (fires what that closed, as replay does)."""
        cfg = self.cfg
        out: list[Output] = []
        wm = self._watermark(timer_values)
        if cfg.time_mode == "ProcessingTime":
            # the clock matters on its own (timers, idle advance, the processing clock):
            # always catch up with the previous batch's time, then with its watermark
            prev = previous_batch_time(cfg)
            if prev is not None:
                out.append(eng.advance_processing_time(prev))
            if self.mode == "external" and wm is not None:
                out.append(advance_watermark(eng, wm))
            return out
        current = eng.watermark
        if self.mode != "external" or wm is None or (current is not None and wm <= current):
            return out
        prev = previous_batch_time(cfg)
        if prev is not None:
            out.append(eng.advance_processing_time(prev))
        out.append(advance_watermark(eng, wm))
        return out

    def _rearm(self, timer_values: Any) -> None:
        """One timer per bucket: at watermark+1 (event time: the next watermark advance wakes
        the bucket) or at now+1 (processing time: the next micro-batch does)."""
        for t in list(self.handle.listTimers()):
            self.handle.deleteTimer(t)
        if self.cfg.time_mode == "ProcessingTime":
            now = int(timer_values.getCurrentProcessingTimeInMs())
        else:
            now = max(int(timer_values.getCurrentWatermarkInMs()), 0)
        self.handle.registerTimer(now + 1)

    # ------------------------------------------------------------ calls

    def _finish(self, parts: list[Output], eng: WindowingEngine, key: Any,
                timer_values: Any) -> pd.DataFrame | None:
        """Drain late counts (before saving: the deltas must not be restored and counted again
        next batch), save the state, re-arm the timer; the output rows (panes only: late
        records and late counts become side lines, see close())."""
        from jobs.spark.sinks import engine_side_line

        ident = self.cfg.ident
        prof = self.prof
        with phase(prof, "side_lines"):
            segments, side = split_output(parts)
            for e in side:
                self._add_side(engine_side_line(ident, e.to_json()))
            for c in eng.drain_late_counts():
                self._add_side(engine_side_line(ident, {**c, "type": "late_count"}))
        with phase(prof, "pane_rows"):
            frame = output_frame(segments)
        self._save(eng, key)
        with phase(prof, "timers"):
            self._rearm(timer_values)
        return frame

    def _add_side(self, kind_line: tuple[str, str] | None) -> None:
        if kind_line is not None:
            self.side.setdefault(kind_line[0], []).append(kind_line[1])

    def _input_rows(self, key: Any, rows: Any, timer_values: Any) -> pd.DataFrame | None:
        import pandas as pd

        cfg = self.cfg
        prof = self.prof
        with phase(prof, "input_frames"):
            table = unpack_table(rows)
        if cfg.order_columns:
            # the shuffle does not keep the batch's arrival order: restore it (files:
            # modification time, path, position; docs/semantics.md, "Spark")
            with phase(prof, "arrival_order"):
                table = arrival_order(table, cfg)
        with phase(prof, "input_frames"):
            # only the columns the engine reads leave Arrow; the whole frame (the source
            # columns a late record or dead letter echoes) is built only when one is asked for
            frame = engine_frame(table, cfg)
        records: LazyRecords | None = None
        whole = FrameOnce(table, cfg)
        if cfg.source_kinds is not None:  # dead letters are split off here, not by the gate
            if cfg.arrival:  # the gate's arrival mark: max over all records, dead too
                a = frame[ARRIVAL].max()
                if pd.notna(a):
                    self.arrival = int(a) if self.arrival is None else max(self.arrival, int(a))
            dead = frame[DEAD].notna().to_numpy()
            if dead.any():
                self.side.setdefault("dead_letters", []).extend(
                    dead_letter_lines(whole()[dead], cfg))
                frame = frame[~dead].reset_index(drop=True)
                if frame.empty:  # nothing for the engine: state and timer untouched, as
                    return None  # if the gate had dropped them
                whole = whole.without(dead)
        records = LazyRecords(whole, cfg.source_columns, len(frame))
        eng = self._load(key)
        with phase(prof, "catch_up"):
            out = self._catch_up(eng, timer_values)
        if cfg.arrival:
            pt = int(frame[ARRIVAL].max())
        else:
            pt = int(timer_values.getCurrentProcessingTimeInMs())
        with phase(prof, "record_batch"):
            batch = record_batch(frame, cfg, pt, records)
        with phase(prof, "ingest"):
            out.append(ingest(eng, batch))
        return self._finish(out, eng, key, timer_values)

    def _expired_timer(self, key: Any, timer_values: Any) -> pd.DataFrame | None:
        eng = self._load(key)
        with phase(self.prof, "catch_up"):
            out = self._catch_up(eng, timer_values)
        if not self.cfg.arrival:
            out.append(eng.advance_processing_time(
                int(timer_values.getCurrentProcessingTimeInMs())))
        return self._finish(out, eng, key, timer_values)

    def handleInputRows(self, key: Any, rows: Any, timerValues: Any  # noqa: N803
                        ) -> Iterator[pd.DataFrame]:
        frame = without_gc(self._input_rows, key, rows, timerValues)
        if frame is not None:
            yield frame

    def handleExpiredTimer(self, key: Any, timerValues: Any,  # noqa: N803
                           expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:  # noqa: N803
        frame = without_gc(self._expired_timer, key, timerValues)
        if frame is not None:
            yield frame

    def close(self) -> None:
        """Write this task's side files (called once per task, after its timers), one per
        (kind, batch, partition) with an atomic rename, like the gate's: a re-run batch or a
        retried task produces the same lines and replaces the files. Nothing on the driver
        (its pre-init instance has no batch)."""
        from pyspark import TaskContext

        from jobs.spark.sinks import write_engine_side

        ctx = TaskContext.get()
        prop = ctx.getLocalProperty("streaming.sql.batchId") if ctx else None
        if ctx is None or prop is None:
            return
        if self.prof is not None:
            self.prof.write(int(prop), ctx.partitionId())
        kinds = ["late", "late_counts"]
        if self.cfg.source_kinds is not None:
            kinds.append("dead_letters")
            if self.cfg.arrival:
                kinds.append("arrival")
                self.side["arrival"] = [] if self.arrival is None else [str(self.arrival)]
        write_engine_side(self.cfg.side_root, int(prop), ctx.partitionId(),
                          {k: self.side.get(k, []) for k in kinds})


def previous_batch_time(cfg: HostConfig) -> int | None:
    """Processing time of the micro-batch before the running one: the time at which the
    watermark this batch runs with was established (replay fires the windows it closes then).
    Live: that batch's timestamp (offsets log); test mode: the max arrival the gate saw in it."""
    from pyspark import TaskContext

    from jobs.storage import join, storage_for
    from jobs.storage.manifest import read_batch_info

    ctx = TaskContext.get()
    prop = ctx.getLocalProperty("streaming.sql.batchId") if ctx else None
    if prop is None or int(prop) == 0:
        return None
    prev = int(prop) - 1
    if not cfg.arrival:
        try:
            return read_batch_info(cfg.checkpoint, prev).timestamp_ms
        except Exception:
            return None
    # a batch without records (a no-data batch of the ProcessingTime mode) has no arrival
    # mark: its time is that of the last batch that had records
    st = storage_for(cfg.side_root)
    for bid in range(prev, -1, -1):
        d = join(cfg.side_root, "arrival", f"batch_id={bid}")
        values: list[int] = []
        for n in st.list(d):
            if n.startswith("part-") and n.endswith(".jsonl"):
                values.extend(int(x) for x in st.read_text(join(d, n)).split())
        if values:
            return max(values)
    return None


def without_gc(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with the cyclic GC paused: one call builds and drops hundreds of thousands
    of small containers (the restored state, panes, output columns), none of them in a cycle,
    and every collection they would trigger re-scans the whole live state."""
    was = gc.isenabled()
    gc.disable()
    try:
        return fn(*args)
    finally:
        if was:
            gc.enable()
