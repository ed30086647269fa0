"""The gate: one vectorized pass over every micro-batch before the windowing.

It runs in the executors (``mapInArrow``, one call per Arrow batch, never per record) and
1. splits off malformed records (unparsable line, key or event time null / not evaluating,
   event time outside the representable instants) as dead letters with the reason;
2. judges lateness exactly as docs/semantics.md says, against the watermark as it
   stood before this micro-batch (one micro-batch = one arrival instant): a (record, window) pair
   whose window has expired (watermark >= end + allowed_lateness) is dropped and written to the
   late sink with reason ``expired``; under ``lateness_basis: event`` a record with t <
   watermark joins no window (reason ``before_watermark``, one line per window it would have
   joined); pairs whose window is late but not expired are accepted and counted.

Why not let Spark judge lateness: Spark judges late rows against the *previous* batch's
watermark (one micro-batch more lenient than docs/semantics.md), measured in docs/spark.md.
The gate is stricter, so Spark's own filter never fires after it.

The watermark comes from the offsets log entry of the running batch (``streaming.sql.batchId``
is a task-local property), which Spark writes before the batch and reuses when the batch is
re-run after a crash: the gate's decisions, and so its side files, are deterministic per batch.
Side files are written per (batch, input partition) with an atomic rename, so a re-run or a
task retry overwrites instead of duplicating.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jobs.definition.windows import FixedStarts
from jobs.engine.extract import instant_problem, reach_problem
from jobs.engine.records import non_finite_text
from jobs.spark.extract import EVENT_TIME_OUT
from jobs.storage import join, storage_for
from jobs.storage.manifest import read_batch_info
from jobs.timeutil import datetime_to_ms

LONG_MIN = -(2**63)
WLIM = "__wlim"
KEY_REASON = "key is null or did not evaluate"
ET_REASON = "event time is null or did not evaluate"
"""Dead-letter reasons (the engine path and the JVM gate write the same text)."""


def range_reason(ms: int) -> str:
    """The dead-letter reason of an event time the projection put in ``__etx``: outside the
    representable instants, or (when it is inside them) its windows pass ±2^62 ms. Replay's
    words (``jobs.engine.extract``); ``range_reason_column`` in gate_jvm.py is its SQL twin for
    the JVM gate."""
    return f"event_time: {instant_problem(ms) or reach_problem(ms)}"

KEY_TEXT = "__ktext"
"""The key's JSON text beside a raw ``__key`` (native path's Python gate, ``key_raw``)."""


@dataclass(frozen=True)
class GateConfig:
    """Everything the gate needs; picklable (it travels to the executors)."""

    job: str
    version: int
    store: str
    checkpoint: str
    side_root: str
    """Directory holding ``dead_letters/``, ``late/``, ``late_counts/`` per batch."""
    has_key: bool
    size: int
    step: int
    align_to: int
    allowed_lateness: int
    event_basis: bool
    shift: int
    """Spark's watermark = max(0, max(et + shift) - delay - allowed_lateness) (see native.py)."""
    out_columns: tuple[str, ...]
    """Columns the gate keeps: __key, __et, __a<i>... (and adds __wlim)."""
    source_columns: tuple[str, ...]
    corrupt_column: str
    judge_lateness: bool = True
    """False on the engine path: the engine judges lateness itself; the gate only splits off
    dead letters."""
    key_raw: bool = False
    """``__key`` holds the raw key value; its JSON text (for late records and counts) is in
    ``__ktext`` (Python gate) or computed where needed (JVM gate)."""

    def our_watermark(self, spark_watermark: int) -> int | None:
        """Our watermark (docs/semantics.md) before a batch, from Spark's batch watermark
        (None = none yet)."""
        if spark_watermark <= 0:
            return None
        return spark_watermark - self.shift + self.allowed_lateness


_WATERMARKS: dict[tuple[str, int], int] = {}


def _batch_watermark(cfg: GateConfig, batch_id: int) -> int:
    cache_key = (cfg.checkpoint, batch_id)
    if cache_key not in _WATERMARKS:
        _WATERMARKS.clear()
        _WATERMARKS[cache_key] = read_batch_info(cfg.checkpoint, batch_id).watermark_ms
    return _WATERMARKS[cache_key]


def window_starts(t: np.ndarray, size: int, step: int, align_to: int) -> list[np.ndarray]:
    """For each j, the start of the j-th most recent window containing t (the window kinds'
    :class:`~jobs.definition.windows.FixedStarts`; the caller masks starts whose window does
    not contain t: start + size <= t)."""
    starts, _ = FixedStarts(size, step, align_to).starts_array(np.asarray(t, dtype=np.int64))
    return list(starts.T)


def _jsonable(value: Any) -> Any:
    """A source value as the echoed record holds it: non-finite floats as the strings of
    ``jobs.engine.records.NON_FINITE_TEXT`` (the output rule), never bare NaN / Infinity."""
    from datetime import date, datetime

    if isinstance(value, float) and not math.isfinite(value):
        return non_finite_text(value)
    if isinstance(value, datetime):
        return datetime_to_ms(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _write_lines(path: str, lines: list[str]) -> None:
    """Replace one side file (through the storage layer: the side root may be a Hadoop URI);
    no lines removes it, so a re-run never keeps what an earlier attempt wrote."""
    st = storage_for(path)
    if not lines:
        st.delete(path)
        return
    st.write_text(path, "".join(line + "\n" for line in lines))


def make_gate(cfg: GateConfig) -> Any:
    """The ``mapInArrow`` function for ``cfg``."""

    def gate(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark import TaskContext

        ctx = TaskContext.get()
        batch_prop = ctx.getLocalProperty("streaming.sql.batchId") if ctx else None
        batch_id = int(batch_prop) if batch_prop is not None else None
        partition = ctx.partitionId() if ctx else 0
        wm = cfg.our_watermark(_batch_watermark(cfg, batch_id)) if batch_id is not None else None
        dead: list[str] = []
        late: list[str] = []
        max_arrival: int | None = None
        counts: dict[tuple[str, int, int], list[int]] = {}
        ident = {"job": cfg.job, "version": cfg.version, "store": cfg.store}

        def record_of(rb: Any, rows: np.ndarray) -> list[str]:
            table = rb.select(list(cfg.source_columns)).take(pa.array(rows, type=pa.int64()))
            return [
                json.dumps(_jsonable(r), separators=(",", ":"), ensure_ascii=False, default=str)
                for r in table.to_pylist()
            ]

        for rb in batches:
            n = rb.num_rows
            corrupt = rb.column(cfg.corrupt_column)
            corrupt_mask = np.asarray(pc.is_valid(corrupt).to_numpy(zero_copy_only=False))
            key_null = np.asarray(pc.is_null(rb.column("__key")).to_numpy(zero_copy_only=False))
            et_col = rb.column("__et")
            et_null = np.asarray(pc.is_null(et_col).to_numpy(zero_copy_only=False))
            bad = corrupt_mask | (key_null if cfg.has_key else np.zeros(n, dtype=bool)) | et_null
            if bad.any():
                idx = np.flatnonzero(bad)
                texts = record_of(rb, idx)
                raw = corrupt.to_pylist() if corrupt_mask.any() else None
                outside = (rb.column(EVENT_TIME_OUT).to_pylist()
                           if et_null.any() and EVENT_TIME_OUT in rb.schema.names else None)
                for pos, i in enumerate(idx.tolist()):
                    if corrupt_mask[i]:
                        reason, rec = "unparsable record", (raw[i] if raw else texts[pos])
                    elif cfg.has_key and key_null[i]:
                        reason, rec = KEY_REASON, texts[pos]
                    elif outside is not None and outside[i] is not None:
                        reason, rec = range_reason(outside[i]), texts[pos]
                    else:
                        reason, rec = ET_REASON, texts[pos]
                    dead.append(json.dumps({**ident, "reason": reason, "record": rec}))
            good = ~bad
            t = np.asarray(pc.fill_null(et_col, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
            keep = good.copy()
            wlim = np.full(n, LONG_MIN, dtype=np.int64)
            if cfg.judge_lateness and wm is not None and good.any():
                starts = window_starts(t, cfg.size, cfg.step, cfg.align_to)
                member = [good & (s + cfg.size > t) for s in starts]
                if cfg.event_basis:
                    dropped_rec = good & (t < wm)
                    keep &= ~dropped_rec
                    drop_pairs = [m & dropped_rec for m in member]
                    accept_pairs = [np.zeros(n, dtype=bool) for _ in member]
                    reason = "before_watermark"
                else:
                    drop_pairs = [m & (wm >= s + cfg.size + cfg.allowed_lateness) for s, m in zip(starts, member, strict=True)]
                    accept_pairs = [m & ~d & (wm >= s + cfg.size) for s, m, d in zip(starts, member, drop_pairs, strict=True)]
                    any_kept = np.zeros(n, dtype=bool)
                    for m, d in zip(member, drop_pairs, strict=True):
                        any_kept |= m & ~d
                    keep &= any_kept
                    wlim[:] = wm - cfg.allowed_lateness - cfg.size
                    reason = "expired"
                any_drop = np.zeros(n, dtype=bool)
                for d in drop_pairs:
                    any_drop |= d
                any_accept = np.zeros(n, dtype=bool)
                for a in accept_pairs:
                    any_accept |= a
                if any_drop.any() or any_accept.any():
                    keys = rb.column(KEY_TEXT if cfg.key_raw else "__key").to_pylist()
                    drop_rows = np.flatnonzero(any_drop)
                    rec_text = dict(zip(drop_rows.tolist(), record_of(rb, drop_rows), strict=True))
                    for s, d, a in zip(starts, drop_pairs, accept_pairs, strict=True):
                        for i in np.flatnonzero(d | a).tolist():
                            start = int(s[i])
                            ck = (keys[i], start, start + cfg.size)
                            c = counts.setdefault(ck, [0, 0])
                            if d[i]:
                                c[1] += 1
                                late.append(json.dumps({
                                    **ident, "key": keys[i], "event_time": int(t[i]),
                                    "window_start": start, "window_end": start + cfg.size,
                                    "reason": reason, "record": rec_text[i],
                                }))
                            else:
                                c[0] += 1
            if "__arrival" in cfg.out_columns and n:
                a = pc.max(rb.column("__arrival")).as_py()
                if a is not None:
                    max_arrival = a if max_arrival is None else max(max_arrival, a)
            out = rb.select(list(cfg.out_columns)).filter(pa.array(keep))
            yield out.append_column(WLIM, pa.array(wlim[keep], type=pa.int64()))
        if batch_id is not None:
            part = f"part-{partition:05d}.jsonl"
            root = cfg.side_root
            bdir = f"batch_id={batch_id}"
            _write_lines(join(root, "dead_letters", bdir, part), dead)
            _write_lines(join(root, "late", bdir, part), late)
            if "__arrival" in cfg.out_columns:
                _write_lines(join(root, "arrival", bdir, part),
                             [] if max_arrival is None else [str(max_arrival)])
            _write_lines(
                join(root, "late_counts", bdir, part),
                [
                    json.dumps({"key": k, "window_start": s, "window_end": e,
                                "accepted": c[0], "dropped": c[1]})
                    for (k, s, e), c in sorted(counts.items())
                ],
            )

    return gate
