"""The engine path: the pure engine hosted in Spark's state store, once per bucket.

Records are grouped by ``bucket = pmod(xxhash64(key), buckets)``; Spark calls the stateful
processor (``transformWithStateInPandas``, RocksDB) once per bucket and micro-batch with all of
that bucket's records as columnar pandas frames. The processor restores one engine (all keys of
the bucket) from the bucket's state blob, feeds it the batch as ONE arrival unit (its records
in arrival order, restored after the shuffle from the source's order columns), and saves
the blob back: one Python call and one state round trip per bucket, never per key. Spark
places a grouping value on shuffle partition ``pmod(hash(value), partitions)``, so the value of
bucket ``i`` is chosen to land on partition ``i % partitions`` (``spread_bucket_keys``; the
plain values 0 and 1 both land on partition 1 of 2); the bucket count and values are fixed per
checkpoint by its layout file (``bucket_layout``). The cyclic GC is paused during a call.

Watermark (global scope): Spark computes it over all partitions (``withWatermark`` on the
shifted event time, see plan.SHIFT_FLOOR) and hands it to each call; the engine runs in
``external`` mode. The watermarked column is projected away before the operator, so Spark does
not drop late rows itself: the engine judges lateness by the spec. Every bucket keeps one
event-time timer at ``watermark + 1``, so a watermark advance wakes the buckets that received
no records, and their windows fire. Per-key watermarks (``scope: key``) need no global view:
those engines run in ``internal`` mode.

The clock (:func:`~jobs.definition.execution.needs_clock`: processing clock, idle advance, ``after``/``every``
triggers): the operator runs in Spark's ``ProcessingTime`` mode, where Spark runs a batch at
every trigger even without input, and each bucket's one timer is at ``now + 1``: every bucket
is called at every micro-batch, so windows close on the wall clock without new records. Fixed
per checkpoint (:func:`time_mode`).

Order inside one call, chosen so that panes equal replay's: first advance the watermark to the
batch's (firing windows that earlier batches' records closed, with the processing time of the
batch that advanced it, as replay does), then ingest the batch's records.

State blob, in a ValueState ``engine`` (see :func:`encode_state` / :func:`decode_state`): a
tag byte, a 16-byte token (unique per save), then MessagePack of the general engine's packed
state (``EngineState.pack``, tag 1) or of any other engine's JSON snapshot (tag 2). Blobs
written before these tags (zlib-compressed JSON snapshots, first byte 0x78) still restore, and
state MessagePack cannot hold (integers beyond 64 bits, unpaired surrogates) is still written
that way. RocksDB compresses the store itself, so the blob is not compressed again.

Dead letters: marked in SQL (``__dead``, null for a usable record) and split off here, so a
record crosses into Python once (no gate ``mapInArrow`` before the operator); their text is the
gate's, rebuilt from pandas for flat column types (``dead_letter_kinds``; other schemas keep the
gate). A marked record does not move the watermark and never reaches the engine.

Panes leave as output rows (``kind`` = pane). Late records, late counts, dead letters and the
test mode's arrival mark are written by the task itself in ``close()``, one file per (kind,
batch, partition) with an atomic rename, as the gate writes its own: the driver's batch writer
is then one Spark job (no cache of the output, no collect of side rows).

A worker keeps each bucket's engine after saving it (``_ENGINES``) and reuses it when the store
still holds that very save (the blob's token), else restores from the blob.
"""

from __future__ import annotations

import gc
import json
import json.encoder
import math
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal

from jobs.definition.execution import needs_clock
from jobs.definition.model import Definition
from jobs.engine.records import Pane, jsonable, key_json
from jobs.spark.extract import EVENT_TIME, EVENT_TIME_OUT, KEY, agg_column
from jobs.spark.gate import ET_REASON, KEY_REASON, range_reason
from jobs.spark.plan import SHIFT_FLOOR
from jobs.storage.manifest import BUCKETS_FILE, engine_buckets, engine_time_mode
from jobs.storage.manifest import TIME_FILE as MANIFEST_TIME_FILE

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

BUCKET = "__bucket"
ARRIVAL = "__arrival"
DEAD = "__dead"
"""Dead-letter column (see :func:`dead_letter_column`): null for a usable record."""
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


TimeMode = Literal["EventTime", "ProcessingTime"]


def engine_mode(defn: Definition) -> Literal["internal", "external"]:
    """``external`` (Spark's global watermark drives the engine) for an event-time clock with
    a global watermark; ``internal`` for per-key watermarks and the processing clock (whose
    watermark is "now": every bucket computes it alone)."""
    if defn.uses_processing_time:
        return "internal"
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
    timezone: str = "UTC"
    """Spark's session time zone (pandas gets TIMESTAMP values as wall times in it)."""
    ident: tuple[str, int, str] = ("", 0, "")
    """(job, version, store): the identity every side record carries."""
    source_kinds: tuple[str, ...] | None = None
    """How to rebuild each source column's value for a dead letter (:func:`dead_letter_kinds`);
    ``None``: the gate split dead letters off before the operator (no ``__dead`` column)."""
    time_mode: TimeMode = "EventTime"
    """``ProcessingTime``: every bucket is woken at every micro-batch, data or not (see
    :func:`~jobs.definition.execution.needs_clock`); ``EventTime``: by records and watermark advances only."""
    order_columns: tuple[str, ...] = ()
    """Columns that sort a batch's records into arrival order (``sources.ORDER_COLUMNS``)."""


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


_JSON_CONST = {True: "true", False: "false"}
_encode_str = json.encoder.encode_basestring
"""JSON text of a str with non-ASCII kept: what json.dumps(s, ensure_ascii=False) returns."""


def _values_text(values: dict[str, Any], prefixes: dict[str, str]) -> str:
    """``json.dumps(jsonable(values), separators=(",", ":"), ensure_ascii=False)``, exactly,
    without the encoder for the common case (plain ints, finite floats, strings, nulls)."""
    parts = []
    for name, v in values.items():
        pre = prefixes.get(name)
        if pre is None:
            pre = prefixes[name] = (_encode_str(name) if type(name) is str
                                    else json.dumps(name, ensure_ascii=False)) + ":"
        t = type(v)
        if t is int:
            parts.append(pre + int.__repr__(v))
        elif t is float and math.isfinite(v):
            parts.append(pre + float.__repr__(v))
        elif v is None:
            parts.append(pre + "null")
        elif t is bool:
            parts.append(pre + _JSON_CONST[v])
        elif t is str:
            parts.append(pre + _encode_str(v))
        else:
            return json.dumps(jsonable(values), separators=(",", ":"), ensure_ascii=False)
    return "{" + ",".join(parts) + "}"


_PANE_FIELDS = (
    ("window_start", "window_start"), ("window_end", "window_end"), ("timing", "timing"),
    ("pane_index", "pane_index"), ("is_first", "is_first"), ("is_last", "is_last"),
    ("retraction", "retraction"), ("emitted_at", "emitted_at"), ("watermark", "watermark"),
)
"""(output column, Pane field) copied as they are."""


def _key_texts(keys: list[Any]) -> list[str]:
    """``key_json(jsonable(k))`` of each key, computed once per distinct key."""
    if set(map(type, keys)) == {str}:
        texts = {k: key_json(k) for k in set(keys)}
        return list(map(texts.__getitem__, keys))
    cache: dict[tuple[type, Any], str] = {}
    out = []
    for k in keys:
        t = cache.get((type(k), k))
        if t is None:
            t = cache[(type(k), k)] = key_json(jsonable(k))
        out.append(t)
    return out


def _emission_columns(emissions: list[Any], late_counts: list[dict[str, Any]]
                      ) -> dict[str, list[Any]]:
    """The output rows as columns (``OUT_COLUMNS``), built from the emissions' fields: a pane
    row holds exactly what its ``to_json()`` holds (key and values as canonical JSON text),
    other rows their ``to_json()`` as ``payload``."""
    n = len(emissions) + len(late_counts)
    cols: dict[str, list[Any]] = {}
    prefixes: dict[str, str] = {}
    if set(map(type, emissions)) <= {Pane}:  # panes only (the common case): column by column
        panes = emissions
        m = len(panes)
        pad = [None] * len(late_counts)
        cols["kind"] = ["pane"] * m + ["late_count"] * len(late_counts)
        cols["seq"] = list(range(n))
        cols["key"] = _key_texts(list(map(attrgetter("key"), panes))) + pad
        for col, name in _PANE_FIELDS:
            cols[col] = list(map(attrgetter(name), panes)) + pad
        fet = list(map(attrgetter("first_event_time"), panes))
        if fet.count(None) == m:
            cols["first_event_time"] = [None] * n
            cols["last_event_time"] = [None] * n
        else:  # to_json() has last_event_time only with first_event_time
            cols["first_event_time"] = fet + pad
            cols["last_event_time"] = [
                None if f is None else p.last_event_time for f, p in zip(fet, panes, strict=True)
            ] + pad
        cols["values"] = [_values_text(p.values, prefixes) for p in panes] + pad
        cols["payload"] = [None] * m + [
            json.dumps(c, ensure_ascii=False, default=str) for c in late_counts]
        return {c: cols[c] for c in OUT_COLUMNS}
    cols = {c: [None] * n for c in OUT_COLUMNS}
    kind, seq, key, ws, we = cols["kind"], cols["seq"], cols["key"], cols["window_start"], cols["window_end"]
    fet, let, timing, pidx = (cols["first_event_time"], cols["last_event_time"], cols["timing"],
                              cols["pane_index"])
    first, last, retr, vals = cols["is_first"], cols["is_last"], cols["retraction"], cols["values"]
    emitted, wmk, payload = cols["emitted_at"], cols["watermark"], cols["payload"]
    keys: dict[tuple[type, Any], str] = {}
    for i, e in enumerate(emissions):
        seq[i] = i
        if type(e) is Pane:
            kind[i] = "pane"
            k = e.key
            kt = keys.get((type(k), k))
            if kt is None:
                kt = keys[(type(k), k)] = key_json(jsonable(k))
            key[i] = kt
            ws[i] = e.window_start
            we[i] = e.window_end
            if e.first_event_time is not None:
                fet[i] = e.first_event_time
                let[i] = e.last_event_time
            timing[i] = e.timing
            pidx[i] = e.pane_index
            first[i] = e.is_first
            last[i] = e.is_last
            retr[i] = e.retraction
            vals[i] = _values_text(e.values, prefixes)
            emitted[i] = e.emitted_at
            wmk[i] = e.watermark
        else:
            obj = e.to_json()
            kind[i] = obj["type"]
            payload[i] = json.dumps(obj, ensure_ascii=False, default=str)
    for j, c in enumerate(late_counts, start=len(emissions)):
        kind[j] = "late_count"
        seq[j] = j
        payload[j] = json.dumps(c, ensure_ascii=False, default=str)
    return cols


def _typed(values: list[Any]) -> Any:
    """A column for pandas: a NumPy array when it holds only ints or only bools (what pandas
    would infer from the list, without its per-element inference), else the list itself."""
    import numpy as np

    if not values or None in values:
        return values
    types = set(map(type, values))
    if types == {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return values
    if types == {bool}:
        return np.array(values, dtype=bool)
    if types == {str}:
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    return values


def _emission_frame(emissions: list[Any], late_counts: list[dict[str, Any]]
                    ) -> pd.DataFrame | None:
    import pandas as pd

    if not emissions and not late_counts:
        return None
    cols = _emission_columns(emissions, late_counts)
    return pd.DataFrame({c: _typed(cols[c]) for c in OUT_COLUMNS}, columns=OUT_COLUMNS)


# ------------------------------------------------------------------ dead letters

def dead_letter_kinds(schema: Any, source_columns: Sequence[str]) -> tuple[str, ...] | None:
    """Per source column, how a dead letter's value is rebuilt from the pandas frame the
    processor gets, so that its record text equals the gate's (which reads Arrow); ``None``
    when a column's type has no exact rebuild (nested, binary, intervals...): such definitions
    keep the gate before the operator. Flat types are exact: integers arrive as floats when
    the column has nulls (made ints again), timestamps as wall times in the session zone, and
    which values are null comes from the ``__dead`` column (a float NaN is not a null)."""
    from pyspark.sql import types as T

    by_name = {f.name: f.dataType for f in schema.fields}
    kinds: list[str] = []
    for c in source_columns:
        t = by_name.get(c)
        if isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            kinds.append("int")
        elif isinstance(t, (T.FloatType, T.DoubleType)):
            kinds.append("float")
        elif isinstance(t, T.BooleanType):
            kinds.append("bool")
        elif type(t) is T.StringType:
            kinds.append("str")
        elif isinstance(t, T.DecimalType):
            kinds.append("decimal")
        elif isinstance(t, T.DateType):
            kinds.append("date")
        elif isinstance(t, T.TimestampType):
            kinds.append("ts")
        elif isinstance(t, T.TimestampNTZType):
            kinds.append("ts_ntz")
        else:
            return None
    return tuple(kinds)


def dead_letter_column(has_key: bool, source_columns: Sequence[str], corrupt_column: str) -> Any:
    """``__dead``: null for a usable record; else a reason letter and what the processor needs
    to write the dead letter exactly as the gate does: ``u`` + the raw line (unparsable), or
    ``k`` (key) / ``e`` (event time) + one ``0``/``1`` per source column (1 = null), or ``r``
    (event time outside the representable instants) + those digits + the event time in ms
    (``__etx``). Computed in
    the JVM, so usable records cross into Python once (the processor) instead of twice (gate,
    then processor); the column is null, and so almost free, for every usable record."""
    from pyspark.sql import functions as F

    nulls = (F.concat(*[F.when(F.col(f"`{c}`").isNull(), F.lit("1")).otherwise(F.lit("0"))
                        for c in source_columns]) if source_columns else F.lit(""))
    dead = F.when(F.col(f"`{corrupt_column}`").isNotNull(),
                  F.concat(F.lit("u"), F.col(f"`{corrupt_column}`")))
    if has_key:
        dead = dead.when(F.col(KEY).isNull(), F.concat(F.lit("k"), nulls))
    dead = dead.when(F.col(EVENT_TIME_OUT).isNotNull(),
                     F.concat(F.lit("r"), nulls, F.col(EVENT_TIME_OUT).cast("string")))
    return dead.when(F.col(EVENT_TIME).isNull(), F.concat(F.lit("e"), nulls))


def _source_value(v: Any, kind: str, tz: str) -> Any:
    """A non-null source value from pandas as the gate's ``to_pylist()`` has it (timestamps
    already as epoch ms, which is what the gate's ``_jsonable`` makes of them)."""
    import datetime as dt

    import numpy as np
    import pandas as pd

    if kind == "int":
        return int(v)
    if kind == "float":
        return float(v)
    if kind == "bool":
        return bool(v)
    if kind in ("ts", "ts_ntz"):
        ts = pd.Timestamp(v)
        if kind == "ts" and ts.tzinfo is None:
            ts = ts.tz_localize(tz)
        return int(ts.value // 1_000_000)
    if kind == "date" and isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _dead_letter_lines(frame: pd.DataFrame, cfg: HostConfig) -> list[str]:
    """The dead-letter line of each row of ``frame`` (rows whose ``__dead`` is set): exactly
    the line the gate writes (jobs.spark.gate)."""
    from jobs.spark.gate import _jsonable

    kinds = cfg.source_kinds or ()
    columns = {c: frame[c].tolist() for c in cfg.source_columns}
    job, version, store = cfg.ident
    out: list[str] = []
    for i, code in enumerate(frame[DEAD].tolist()):
        tag, rest = code[0], code[1:]
        if tag == "u":
            reason, rec = "unparsable record", rest
        else:
            reason = KEY_REASON if tag == "k" else ET_REASON
            if tag == "r":
                reason = range_reason(int(rest[len(kinds):]))
                rest = rest[:len(kinds)]
            values = {
                c: None if rest[j] == "1" else _source_value(columns[c][i], kind, cfg.timezone)
                for j, (c, kind) in enumerate(zip(cfg.source_columns, kinds, strict=True))
            }
            rec = json.dumps(_jsonable(values), separators=(",", ":"), ensure_ascii=False,
                             default=str)
        out.append(json.dumps({"job": job, "version": version, "store": store,
                                "reason": reason, "record": rec}))
    return out


# ------------------------------------------------------------------ state blob

BLOB_PACKED = 1
"""Tag: MessagePack of ``EngineState.pack()`` (the general engine)."""
BLOB_SNAPSHOT = 2
"""Tag: MessagePack of ``state.snapshot()`` (any other engine state)."""
TOKEN_BYTES = 16


def encode_state(state: Any) -> tuple[bytes, bytes | None]:
    """The blob for ``state`` and its token (``None`` for the legacy zlib-JSON fallback)."""
    import msgspec

    from jobs.engine.state import EngineState

    token = os.urandom(TOKEN_BYTES)
    try:
        if isinstance(state, EngineState):
            body = msgspec.msgpack.encode(state.pack())
            tag = BLOB_PACKED
        else:
            body = msgspec.msgpack.encode(state.snapshot())
            tag = BLOB_SNAPSHOT
    except (OverflowError, UnicodeEncodeError, TypeError):
        # not representable in MessagePack: the JSON snapshot (exact for any JSON data)
        return zlib.compress(json.dumps(state.snapshot(), separators=(",", ":")).encode(), 1), None
    return bytes((tag,)) + token + body, token


def blob_token(blob: bytes) -> bytes | None:
    """The token a tagged blob carries (``None`` for a legacy blob)."""
    if blob[:1] in (b"\x01", b"\x02"):
        return bytes(blob[1:1 + TOKEN_BYTES])
    return None


def decode_state(blob: bytes, state_cls: Any) -> Any:
    """The engine state a blob holds, for ``make_engine``: an ``EngineState`` for a tag-1 blob
    (the general engine's, also after a vectorized engine handed over to it), else restored
    by ``state_cls`` (the state class of the engine ``make_engine`` picks for the definition),
    as before the tags."""
    import msgspec

    from jobs.engine.errors import EngineError
    from jobs.engine.state import EngineState

    blob = bytes(blob)
    tag = blob[0] if blob else None
    if tag == BLOB_PACKED:
        return EngineState.unpack(msgspec.msgpack.decode(blob[1 + TOKEN_BYTES:]))
    if tag == BLOB_SNAPSHOT:
        return _restore(state_cls, msgspec.msgpack.decode(blob[1 + TOKEN_BYTES:]))
    try:
        snap = json.loads(zlib.decompress(blob))
    except (zlib.error, ValueError) as exc:
        raise EngineError(f"engine state blob is not readable (first byte {tag!r})") from exc
    return _restore(state_cls, snap)


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


def _restore(state_cls: Any, snap: dict[str, Any]) -> Any:
    """Restore without the defensive copy where the engine offers it (the dict was just
    parsed from the blob and is used for nothing else)."""
    if snap.get("engine") == "vectorized" and state_cls.__name__ != "VectorizedState":
        # a store written by the vectorized engine for a definition that no longer picks it
        # (``scope: key``): it is restored as it is, and the engine hands over by itself
        from jobs.engine.vectorized.engine import VectorizedState

        state_cls = VectorizedState
    try:
        return state_cls.restore(snap, copy_data=False)
    except TypeError:
        return state_cls.restore(snap)


def _without_gc(fn: Any, *args: Any) -> Any:
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


_ENGINES: dict[tuple[str, str], tuple[bytes, Any]] = {}
"""Python-worker-local cache: (checkpoint, bucket) -> (token of the blob saved last, the engine
that blob was made from). Restoring a bucket's engine from its blob is the biggest fixed cost
of a call, and Python workers are reused across micro-batches, so a worker that gets the same
bucket again continues with its engine object. The token is checked against the blob the
store holds: after a crash, a task retry or a re-run batch the store holds an older save (a
different token) and the engine is restored from the blob, exactly as without the cache."""
ENGINE_CACHE_SIZE = 64
"""At most this many engines per worker (buckets of every query the worker served)."""


def _cache_key(cfg: HostConfig, key: Any) -> tuple[str, str]:
    return (cfg.checkpoint, repr(tuple(_plain(k) for k in key)))


def _take_cached(ck: tuple[str, str]) -> tuple[bytes, Any] | None:
    """Remove and return the cache entry. A module-level function on purpose: the processor
    class is pickled by value and would carry a copy of ``_ENGINES``; functions of this module
    are pickled by reference, so they reach the worker's one real cache."""
    return _ENGINES.pop(ck, None)


def _remember(ck: tuple[str, str], token: bytes, eng: Any) -> None:
    _ENGINES.pop(ck, None)
    while len(_ENGINES) >= ENGINE_CACHE_SIZE:
        del _ENGINES[next(iter(_ENGINES))]
    _ENGINES[ck] = (token, eng)


def _add_side(side: dict[str, list[str]], kind_line: tuple[str, str] | None) -> None:
    if kind_line is not None:
        side.setdefault(kind_line[0], []).append(kind_line[1])


def make_processor(cfg: HostConfig, shift: int) -> Any:
    """A StatefulProcessor class instance for ``cfg`` (built lazily: pyspark import)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    class EngineProcessor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.side: dict[str, list[str]] = {}
            """Side lines of this task (one partition of one micro-batch), written by close()."""
            self.arrival: int | None = None
            self.handle = handle
            self.state = handle.getValueState(
                STATE_NAME, StructType([StructField("blob", BinaryType(), True)])
            )
            self.mode = engine_mode(cfg.defn)

        def _load(self, key: Any) -> Any:
            """The bucket's engine: the one this worker kept after its last save when the
            store still holds exactly that save (same token), else restored from the blob.
            The cache entry is taken out first, so a call that fails half way can never leave
            a half-updated engine behind for the next one."""
            from jobs.engine import make_engine

            cached = _take_cached(_cache_key(cfg, key))
            if not self.state.exists():
                return make_engine(cfg.defn, None, self.mode)
            blob = self.state.get()[0]
            if cached is not None and cached[0] == blob_token(blob):
                return cached[1]
            probe = make_engine(cfg.defn, None, self.mode)
            return make_engine(cfg.defn, decode_state(blob, type(probe.state)), self.mode)

        def _save(self, eng: Any, key: Any) -> None:
            blob, token = encode_state(eng.state)
            self.state.update((blob,))
            if token is not None:
                _remember(_cache_key(cfg, key), token, eng)

        def _watermark(self, timer_values: Any) -> int | None:
            wm = int(timer_values.getCurrentWatermarkInMs())
            return wm - shift if wm > 0 else None

        def _catch_up(self, eng: Any, timer_values: Any) -> list[Any]:
            """Bring the engine to where the previous batch left the job: its processing time,
            then the watermark it established (fires what that closed, as replay does)."""
            out: list[Any] = []
            wm = self._watermark(timer_values)
            if cfg.time_mode == "ProcessingTime":
                # the clock matters on its own (timers, idle advance, the processing clock):
                # always catch up with the previous batch's time, then with its watermark
                prev = previous_batch_time(cfg)
                if prev is not None:
                    out.extend(eng.advance_processing_time(prev))
                if self.mode == "external" and wm is not None:
                    out.extend(eng.advance_watermark(wm))
                return out
            current = eng.watermark
            if self.mode != "external" or wm is None or (current is not None and wm <= current):
                return out
            prev = previous_batch_time(cfg)
            if prev is not None:
                out.extend(eng.advance_processing_time(prev))
            out.extend(eng.advance_watermark(wm))
            return out

        def _rearm(self, timer_values: Any) -> None:
            """One timer per bucket: at watermark+1 (event time: the next watermark advance
            wakes the bucket) or at now+1 (processing time: the next micro-batch does)."""
            for t in list(self.handle.listTimers()):
                self.handle.deleteTimer(t)
            if cfg.time_mode == "ProcessingTime":
                now = int(timer_values.getCurrentProcessingTimeInMs())
            else:
                now = max(int(timer_values.getCurrentWatermarkInMs()), 0)
            self.handle.registerTimer(now + 1)

        def _finish(self, emissions: list[Any], eng: Any, key: Any, timer_values: Any
                    ) -> pd.DataFrame | None:
            """Drain late counts (before saving: the deltas must not be restored and counted
            again next batch), save the state, re-arm the timer; the output rows (panes
            only: late records and late counts become side lines, see close())."""
            from jobs.spark.sinks import engine_side_line

            panes = [e for e in emissions if type(e) is Pane]
            if len(panes) != len(emissions):
                for e in emissions:
                    if type(e) is not Pane:
                        _add_side(self.side, engine_side_line(cfg.ident, e.to_json()))
            for c in eng.drain_late_counts():
                _add_side(self.side, engine_side_line(cfg.ident, {**c, "type": "late_count"}))
            frame = _emission_frame(panes, [])
            self._save(eng, key)
            self._rearm(timer_values)
            return frame

        def _input_rows(self, key: Any, rows: Any, timer_values: Any) -> pd.DataFrame | None:
            import numpy as np
            import pandas as pd

            from jobs.engine.records import RecordBatch

            frame = pd.concat(list(rows), ignore_index=True)
            # pyspark renames columns that start with "__" (to "_<position>"): go by position
            frame.columns = list(cfg.input_columns)
            if cfg.order_columns:
                # the shuffle does not keep the batch's arrival order: restore it (files:
                # modification time, path, position; docs/semantics.md, "Spark")
                frame = frame.sort_values(list(cfg.order_columns), kind="stable",
                                          ignore_index=True)
            if cfg.source_kinds is not None:  # dead letters are split off here, not by the gate
                if cfg.arrival:  # the gate's arrival mark: max over all records, dead too
                    a = frame[ARRIVAL].max()
                    if pd.notna(a):
                        self.arrival = int(a) if self.arrival is None else max(self.arrival, int(a))
                dead = frame[DEAD].notna().to_numpy()
                if dead.any():
                    self.side.setdefault("dead_letters", []).extend(
                        _dead_letter_lines(frame[dead], cfg))
                    frame = frame[~dead].reset_index(drop=True)
                    if frame.empty:  # nothing for the engine: state and timer untouched, as
                        return None  # if the gate had dropped them
            eng = self._load(key)
            out = self._catch_up(eng, timer_values)
            if cfg.arrival:
                pt = int(frame[ARRIVAL].max())
            else:
                pt = int(timer_values.getCurrentProcessingTimeInMs())
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
            return self._finish(out, eng, key, timer_values)

        def _expired_timer(self, key: Any, timer_values: Any) -> pd.DataFrame | None:
            eng = self._load(key)
            out = self._catch_up(eng, timer_values)
            if not cfg.arrival:
                out.extend(eng.advance_processing_time(
                    int(timer_values.getCurrentProcessingTimeInMs())))
            return self._finish(out, eng, key, timer_values)

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:  # noqa: N803
            frame = _without_gc(self._input_rows, key, rows, timerValues)
            if frame is not None:
                yield frame

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:  # noqa: N803
            frame = _without_gc(self._expired_timer, key, timerValues)
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
            kinds = ["late", "late_counts"]
            if cfg.source_kinds is not None:
                kinds.append("dead_letters")
                if cfg.arrival:
                    kinds.append("arrival")
                    self.side["arrival"] = [] if self.arrival is None else [str(self.arrival)]
            write_engine_side(cfg.side_root, int(prop), ctx.partitionId(),
                              {k: self.side.get(k, []) for k in kinds})

    return EngineProcessor()


# ------------------------------------------------------------------ buckets -> partitions

LAYOUT_FILE = BUCKETS_FILE
"""In the checkpoint's root: the bucket count and the grouping value of each bucket, fixed
when the checkpoint is created (a restart must group keys exactly as before)."""

_M = 0xFFFFFFFF


def _murmur3_long(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of a BIGINT (Murmur3_x86_32.hashLong, seed 42): the hash
    ``HashPartitioning`` takes ``pmod`` of to place a grouping key on a shuffle partition."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _M

    def mix(h1: int, k1: int) -> int:
        k1 = (k1 * 0xCC9E2D51) & _M
        k1 = rotl(k1, 15)
        k1 = (k1 * 0x1B873593) & _M
        h1 ^= k1
        h1 = rotl(h1, 13)
        return (h1 * 5 + 0xE6546B64) & _M

    v = value & 0xFFFFFFFFFFFFFFFF
    h = mix(mix(seed & _M, v & _M), v >> 32)
    h ^= 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def spread_bucket_keys(buckets: int, partitions: int) -> list[int]:
    """A grouping value per bucket such that bucket ``i`` lands on shuffle partition
    ``i % partitions``: the buckets share the partitions evenly. (The plain values 0..n-1 do
    not: with 2 partitions, 0 and 1 both hash to partition 1, so one task ran every bucket.)"""
    found: dict[int, list[int]] = {p: [] for p in range(partitions)}
    need = {p: len(range(p, buckets, partitions)) for p in range(partitions)}
    v = 0
    while any(len(found[p]) < need[p] for p in found):
        p = _murmur3_long(v) % partitions
        if len(found[p]) < need[p]:
            found[p].append(v)
        v += 1
    return [found[i % partitions][i // partitions] for i in range(buckets)]


def bucket_layout(spark: Any, checkpoint: str, buckets: int) -> tuple[int, list[int] | None]:
    """(bucket count, grouping value per bucket or ``None`` for the plain ``0..n-1``) of the
    checkpoint, fixed when it is created (``jobs.storage.manifest.engine_buckets``): a new
    checkpoint gets values spread over ``spark.sql.shuffle.partitions``."""

    def spread() -> tuple[list[int], int]:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
        return spread_bucket_keys(buckets, partitions), partitions

    return engine_buckets(checkpoint, buckets, spread)


TIME_FILE = MANIFEST_TIME_FILE
"""In the checkpoint's root: the stateful operator's time mode (Spark refuses to restart a
checkpoint with another one)."""


def time_mode(defn: Definition, checkpoint: str) -> TimeMode:
    """The time mode to run with, fixed per checkpoint: ``ProcessingTime`` when the definition
    needs the clock (:func:`~jobs.definition.execution.needs_clock`) and the checkpoint is new.

    The clock is state-shaping (``jobs/definition/execution.py``), so every version on one store
    wants the same mode. The checkpoint's recorded mode still wins, for checkpoints whose store
    was named before that rule (their versions may differ): one that ran in ``EventTime`` (or
    before this file existed) keeps it, and its processing-time triggers and idle advance are
    then evaluated only when a bucket is called (records, watermark advances); a warning says
    so. Spark would refuse to restart it in the other mode."""
    wanted: TimeMode = "ProcessingTime" if needs_clock(defn) else "EventTime"
    mode = engine_time_mode(checkpoint, wanted)
    if mode != wanted and wanted == "ProcessingTime":
        import logging

        logging.getLogger(__name__).warning(
            "checkpoint %s runs in EventTime mode (its store was named before the clock was "
            "state-shaping): this version's after/every triggers and idle advance fire only "
            "when a record or a watermark advance reaches the bucket, not on the wall clock; "
            "save the change as a new store to get them on time", checkpoint)
    return mode


def _bucket_column(spark: Any, checkpoint: str, buckets: int) -> Any:
    """The grouping column: the key's bucket (``pmod(xxhash64(key), n)``), as the bucket's
    grouping value of the checkpoint's layout."""
    from pyspark.sql import functions as F

    n, keys = bucket_layout(spark, checkpoint, buckets)
    bucket = F.pmod(F.xxhash64(KEY), F.lit(n))
    if keys is None:
        return bucket
    return F.element_at(F.array(*[F.lit(v).cast("bigint") for v in keys]),
                        (bucket + F.lit(1)).cast("int"))


def build_engine_stream(
    gated: DataFrame, defn: Definition, source_columns: Sequence[str], buckets: int,
    arrival: bool, checkpoint: str, side_root: str,
    dead_kinds: tuple[str, ...] | None = None, corrupt_column: str | None = None,
    ident: tuple[str, int, str] = ("", 0, ""),
    mode: TimeMode = "EventTime",
    order: tuple[str, ...] = (),
) -> DataFrame:
    """The engine-hosting stateful stream. ``gated`` is the gate's output, or, with
    ``dead_kinds`` (see :func:`dead_letter_kinds`), the projection itself (with the corrupt
    record column): dead letters are then marked in SQL and split off by the processor.
    ``mode``: the checkpoint's time mode (:func:`time_mode`, chosen once by the runner)."""
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    integral_types = (ByteType, ShortType, IntegerType, LongType)
    types = {f.name: f.dataType for f in gated.schema.fields}
    from pyspark.sql import functions as F

    # only aggregations with an input cross into Python (a count's column is a constant)
    aggs = [agg_column(i) for i, a in enumerate(defn.aggregations) if a.of is not None]
    cfg = HostConfig(
        defn=defn,
        agg_names=tuple(a.name for a in defn.aggregations),
        agg_has_input=tuple(a.of is not None for a in defn.aggregations),
        agg_integral=tuple(isinstance(types[agg_column(i)], integral_types)
                           for i in range(len(defn.aggregations))),
        source_columns=tuple(source_columns),
        input_columns=(BUCKET, KEY, EVENT_TIME,
                       *aggs,
                       *source_columns, *((ARRIVAL,) if arrival else ()),
                       *((DEAD,) if dead_kinds is not None else ()), *order),
        checkpoint=checkpoint,
        side_root=side_root,
        arrival=arrival,
        timezone=str(gated.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"),
        source_kinds=dead_kinds,
        ident=ident,
        time_mode=mode,
        order_columns=order,
    )
    shift = SHIFT_FLOOR
    keep = [KEY, EVENT_TIME, *aggs,
            *[f"`{c}`" for c in source_columns]]
    if arrival:
        keep.append(ARRIVAL)
    ts = F.timestamp_millis(F.col(EVENT_TIME) + F.lit(shift))
    if dead_kinds is not None:
        # a dead letter must not move the watermark (the gate dropped it before withWatermark)
        gated = gated.withColumn(DEAD, dead_letter_column(
            defn.key is not None, source_columns, corrupt_column or ""))
        ts = F.when(F.col(DEAD).isNull(), ts)
        keep.append(DEAD)
    keep.extend(order)
    stream = (
        gated.withColumn("__ts", ts)
        .withWatermark("__ts", f"{defn.watermark.delay} milliseconds")
        .select(_bucket_column(gated.sparkSession, checkpoint, buckets).alias(BUCKET), *keep)
    )
    return stream.groupBy(BUCKET).transformWithStateInPandas(
        statefulProcessor=make_processor(cfg, shift),
        outputStructType=OUTPUT_DDL,
        outputMode="Append",
        timeMode=mode,
    )
