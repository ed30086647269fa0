"""The engine path: the pure engine hosted in Spark's state store, once per bucket.

Records are grouped by ``bucket = pmod(xxhash64(key), buckets)``; Spark calls the stateful
processor (``transformWithStateInPandas``, RocksDB) once per bucket and micro-batch with all of
that bucket's records as columnar pandas frames. The processor restores one engine (all keys of
the bucket) from the bucket's state blob, feeds it the batch as ONE arrival instant, and saves
the blob back: one Python call and one state round trip per bucket, never per key.

Watermark (global scope): Spark computes it over all partitions (``withWatermark`` on the
shifted event time, see plan.SHIFT_FLOOR) and hands it to each call; the engine runs in
``external`` mode. The watermarked column is projected away before the operator, so Spark does
not drop late rows itself: the engine judges lateness by the spec. Every bucket keeps one
event-time timer at ``watermark + 1``, so a watermark advance wakes the buckets that received
no records, and their windows fire. Per-key watermarks (``scope: key``) need no global view:
those engines run in ``internal`` mode.

Order inside one call, chosen so that panes equal replay's: first advance the watermark to the
batch's (firing windows that earlier batches' records closed, with the processing time of the
batch that advanced it, as replay does), then ingest the batch's records.

State blob: the engine's JSON snapshot, zlib-compressed, in a ValueState ``engine``. Emissions
leave as rows ``kind`` = pane / late / late_count.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from jobs.definition.model import Definition
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.extract import EVENT_TIME, KEY, agg_column
from jobs.spark.plan import SHIFT_FLOOR

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

BUCKET = "__bucket"
ARRIVAL = "__arrival"
STATE_NAME = "engine"
OUTPUT_DDL = (
    "kind STRING, seq BIGINT, key STRING, window_start BIGINT, window_end BIGINT, "
    "first_event_time BIGINT, last_event_time BIGINT, timing STRING, pane_index INT, "
    "is_first BOOLEAN, is_last BOOLEAN, retraction BOOLEAN, `values` STRING, emitted_at BIGINT, "
    "watermark BIGINT, payload STRING"
)
OUT_COLUMNS = [
    "kind", "seq", "key", "window_start", "window_end", "first_event_time", "last_event_time",
    "timing", "pane_index", "is_first", "is_last", "retraction", "values", "emitted_at",
    "watermark", "payload",
]


def unsupported(defn: Definition) -> list[str]:
    """What the engine path cannot run yet on Spark (named, so the launch fails clearly)."""
    out = []
    if defn.uses_processing_time:
        out.append("event_time: processing (the processing-time clock)")
    if defn.watermark.idle_advance:
        out.append("watermark.idle_advance")
    return out


def engine_mode(defn: Definition) -> Literal["internal", "external"]:
    return "external" if defn.watermark.scope == "global" else "internal"


@dataclass(frozen=True)
class HostConfig:
    defn: Definition
    agg_names: tuple[str, ...]
    agg_has_input: tuple[bool, ...]
    agg_integral: tuple[bool, ...]
    """Whether aggregation i's input is an integer type (pandas turns nullable ints into
    floats; they must reach the engine as ints, or a sum of ints would print as 5.0)."""
    source_columns: tuple[str, ...]
    input_columns: tuple[str, ...]
    """Names of the operator's input columns, in order (bucket first)."""
    checkpoint: str
    side_root: str
    arrival: bool
    """Test mode: processing time = max of the ``__arrival`` column (replay parity)."""


class _LazyRecords(Sequence[dict[str, Any]]):
    """The original records, built only for the few the engine echoes as late output."""

    def __init__(self, frame: pd.DataFrame, columns: Sequence[str]) -> None:
        self._frame = frame
        self._columns = list(columns)

    def __len__(self) -> int:
        return len(self._frame)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        row = self._frame.iloc[int(i)]
        return {c: _plain(row[c]) for c in self._columns}


def _plain(v: Any) -> Any:
    import numpy as np
    import pandas as pd

    if v is None or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, pd.Timestamp):
        return int(v.value // 1_000_000)
    if isinstance(v, np.generic):
        return v.item()
    return v


def _column(series: pd.Series, integral: bool) -> Any:
    """An aggregation input column for the engine: a NumPy array when it has no nulls (fast
    path), else a list with None for nulls; integer inputs stay integers."""
    import numpy as np

    values = series.to_numpy()
    if values.dtype.kind in "iub":
        return values.astype(np.int64) if values.dtype.kind != "b" else values
    if values.dtype.kind == "f":
        mask = np.isnan(values)
        if not mask.any():
            return values.astype(np.int64) if integral else values
        if integral:
            return [None if m else int(v) for v, m in zip(values.tolist(), mask.tolist(), strict=True)]
        return [None if m else v for v, m in zip(values.tolist(), mask.tolist(), strict=True)]
    return [_plain(v) for v in values.tolist()]


def _emission_rows(emissions: list[Any], late_counts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from jobs.engine.records import key_json

    rows: list[dict[str, Any]] = []
    empty = dict.fromkeys(OUT_COLUMNS)
    for seq, e in enumerate(emissions):
        obj = e.to_json()
        if obj["type"] == "pane":
            rows.append({
                **empty, "kind": "pane", "seq": seq, "key": key_json(obj["key"]),
                "window_start": obj["window_start"], "window_end": obj["window_end"],
                "first_event_time": obj.get("first_event_time"),
                "last_event_time": obj.get("last_event_time"), "timing": obj["timing"],
                "pane_index": obj["pane_index"], "is_first": obj["is_first"],
                "is_last": obj["is_last"], "retraction": obj["retraction"],
                "values": json.dumps(obj["values"], separators=(",", ":"), ensure_ascii=False),
                "emitted_at": obj["emitted_at"], "watermark": obj["watermark"],
            })
        else:
            rows.append({**empty, "kind": obj["type"], "seq": seq,
                         "payload": json.dumps(obj, ensure_ascii=False, default=str)})
    for c in late_counts:
        rows.append({**empty, "kind": "late_count", "seq": len(rows),
                     "payload": json.dumps(c, ensure_ascii=False, default=str)})
    return rows


def previous_batch_time(cfg: HostConfig) -> int | None:
    """Processing time of the micro-batch before the running one: the time at which the
    watermark this batch runs with was established (replay fires the windows it closes then).
    Live: that batch's timestamp (offsets log); test mode: the max arrival the gate saw in it."""
    from pathlib import Path

    from pyspark import TaskContext

    from jobs.spark.checkpoint import read_batch_info

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
    values: list[int] = []
    for f in (Path(cfg.side_root) / "arrival" / f"batch_id={prev}").glob("part-*.jsonl"):
        values.extend(int(x) for x in f.read_text().split())
    return max(values) if values else None


def _restore(state_cls: Any, snap: dict[str, Any]) -> Any:
    """Restore without the defensive copy where the engine offers it (the dict was just
    parsed from the blob and is used for nothing else)."""
    try:
        return state_cls.restore(snap, copy_data=False)
    except TypeError:
        return state_cls.restore(snap)


def make_processor(cfg: HostConfig, shift: int) -> Any:
    """A StatefulProcessor class instance for ``cfg`` (built lazily: pyspark import)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    class EngineProcessor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.state = handle.getValueState(
                STATE_NAME, StructType([StructField("blob", BinaryType(), True)])
            )
            self.mode = engine_mode(cfg.defn)

        def _load(self) -> Any:
            from jobs.engine import make_engine

            eng = make_engine(cfg.defn, None, self.mode)
            if self.state.exists():
                blob = self.state.get()[0]
                snap = json.loads(zlib.decompress(bytes(blob)))
                eng = make_engine(cfg.defn, _restore(type(eng.state), snap), self.mode)
            return eng

        def _save(self, eng: Any) -> None:
            blob = zlib.compress(
                json.dumps(eng.state.snapshot(), separators=(",", ":")).encode(), 1
            )
            self.state.update((blob,))

        def _watermark(self, timer_values: Any) -> int | None:
            wm = int(timer_values.getCurrentWatermarkInMs())
            return wm - shift if wm > 0 else None

        def _catch_up(self, eng: Any, timer_values: Any) -> list[Any]:
            """Bring the engine to where the previous batch left the job: its processing time,
            then the watermark it established (fires what that closed, as replay does)."""
            out: list[Any] = []
            wm = self._watermark(timer_values)
            current = eng.watermark
            if self.mode != "external" or wm is None or (current is not None and wm <= current):
                return out
            prev = previous_batch_time(cfg)
            if prev is not None:
                out.extend(eng.advance_processing_time(prev))
            out.extend(eng.advance_watermark(wm))
            return out

        def _rearm(self, timer_values: Any) -> None:
            for t in list(self.handle.listTimers()):
                self.handle.deleteTimer(t)
            self.handle.registerTimer(max(int(timer_values.getCurrentWatermarkInMs()), 0) + 1)

        def _finish(self, emissions: list[Any], eng: Any, timer_values: Any
                    ) -> Iterator[pd.DataFrame]:
            """Drain late counts (before saving: the deltas must not be restored and counted
            again next batch), save the state, re-arm the timer, then emit."""
            import pandas as pd

            rows = _emission_rows(emissions, eng.drain_late_counts())
            self._save(eng)
            self._rearm(timer_values)
            if rows:
                yield pd.DataFrame(rows, columns=OUT_COLUMNS)

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:  # noqa: N803
            import numpy as np
            import pandas as pd

            from jobs.engine.records import RecordBatch

            eng = self._load()
            out = self._catch_up(eng, timerValues)
            frame = pd.concat(list(rows), ignore_index=True)
            # pyspark renames columns that start with "__" (to "_<position>"): go by position
            frame.columns = list(cfg.input_columns)
            if cfg.arrival:
                pt = int(frame[ARRIVAL].max())
            else:
                pt = int(timerValues.getCurrentProcessingTimeInMs())
            columns: dict[str, Any] = {}
            for i, (name, has) in enumerate(zip(cfg.agg_names, cfg.agg_has_input, strict=True)):
                if has:
                    columns[name] = _column(frame[agg_column(i)], cfg.agg_integral[i])
            key_text = frame[KEY]
            uniques = {k: json.loads(k) for k in key_text.unique().tolist()}
            batch = RecordBatch(
                keys=[uniques[k] for k in key_text.tolist()],
                event_times=frame[EVENT_TIME].to_numpy(dtype=np.int64),
                columns=columns,
                records=_LazyRecords(frame, cfg.source_columns),  # type: ignore[arg-type]
                processing_time=pt,
            )
            out.extend(eng.ingest(batch))
            yield from self._finish(out, eng, timerValues)

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:  # noqa: N803
            eng = self._load()
            out = self._catch_up(eng, timerValues)
            if not cfg.arrival:
                out.extend(eng.advance_processing_time(
                    int(timerValues.getCurrentProcessingTimeInMs())))
            yield from self._finish(out, eng, timerValues)

        def close(self) -> None:
            pass

    return EngineProcessor()


def build_engine_stream(
    gated: DataFrame, defn: Definition, source_columns: Sequence[str], buckets: int,
    arrival: bool, checkpoint: str, side_root: str,
) -> DataFrame:
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    integral_types = (ByteType, ShortType, IntegerType, LongType)
    types = {f.name: f.dataType for f in gated.schema.fields}
    """The engine-hosting stateful stream over the gate's output."""
    from pyspark.sql import functions as F

    problems = unsupported(defn)
    if problems:
        raise SparkRuntimeError(
            "not supported by the Spark runtime yet: " + ", ".join(problems), "event_time"
        )
    cfg = HostConfig(
        defn=defn,
        agg_names=tuple(a.name for a in defn.aggregations),
        agg_has_input=tuple(a.of is not None for a in defn.aggregations),
        agg_integral=tuple(isinstance(types[agg_column(i)], integral_types)
                           for i in range(len(defn.aggregations))),
        source_columns=tuple(source_columns),
        input_columns=(BUCKET, KEY, EVENT_TIME,
                       *[agg_column(i) for i in range(len(defn.aggregations))],
                       *source_columns, *((ARRIVAL,) if arrival else ())),
        checkpoint=checkpoint,
        side_root=side_root,
        arrival=arrival,
    )
    shift = SHIFT_FLOOR
    keep = [KEY, EVENT_TIME, *[agg_column(i) for i in range(len(defn.aggregations))],
            *[f"`{c}`" for c in source_columns]]
    if arrival:
        keep.append(ARRIVAL)
    stream = (
        gated.withColumn("__ts", F.timestamp_millis(F.col(EVENT_TIME) + F.lit(shift)))
        .withWatermark("__ts", f"{defn.watermark.delay} milliseconds")
        .select(F.pmod(F.xxhash64(KEY), F.lit(buckets)).alias(BUCKET), *keep)
    )
    return stream.groupBy(BUCKET).transformWithStateInPandas(
        statefulProcessor=make_processor(cfg, shift),
        outputStructType=OUTPUT_DDL,
        outputMode="Append",
        timeMode="EventTime",
    )
