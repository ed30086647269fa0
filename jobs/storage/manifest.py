"""Every tidemark file kept in a checkpoint, and Spark's logs tidemark reads there.

One place for the names, formats and "checkpoint from before this file existed" rules, all
read and written through :func:`jobs.storage.storage_for`, so they hold on ``hdfs://`` and
``s3a://`` checkpoints exactly as on local ones.

Spark's logs (Spark 4.3 layout): ``offsets/N`` = a ``v1`` line, one JSON line of batch
metadata (``batchWatermarkMs``, ``batchTimestampMs``, ``conf``), then one line per source
offset; it is written *before* batch N runs and reused verbatim when the batch is re-run after
a crash, so its watermark and timestamp are the deterministic facts a batch may depend on.
``commits/N`` marks batch N committed (its second line holds ``nextBatchWatermarkMs``).

tidemark's files in the checkpoint root (each one JSON object, replaced whole):

| file | holds | a checkpoint that already ran without it |
|---|---|---|
| ``tidemark_path.json`` | the execution path (``native``/``engine``) | recognised by the native key file or the engine time file; else unknown |
| ``tidemark_native_key.json`` | native path: state key as ``raw`` value or ``json`` text | ``json`` |
| ``tidemark_engine_buckets.json`` | engine path: bucket count and grouping value per bucket | the requested count, plain values ``0..n-1`` |
| ``tidemark_engine_time.json`` | engine path: the stateful operator's time mode | ``EventTime`` |
| ``tidemark_state_rows.json`` | native path: state rows before/after the last batch | Spark's own count for one run |

A file is written when a query first decides it (before the query starts, or inside a batch's
sink call for the state-row count), and from then on wins over the rule.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from jobs.storage.errors import StorageError
from jobs.storage.location import join
from jobs.storage.resolve import storage_for

PATH_FILE = "tidemark_path.json"
KEY_FILE = "tidemark_native_key.json"
BUCKETS_FILE = "tidemark_engine_buckets.json"
TIME_FILE = "tidemark_engine_time.json"
COUNT_FILE = "tidemark_state_rows.json"

KeyLayout = Literal["raw", "json"]
TimeMode = Literal["EventTime", "ProcessingTime"]
Counting = Literal["tidemark", "spark"]
"""Who counts the native state's rows: tidemark from its file, or Spark (RocksDB) for a run."""


@dataclass(frozen=True)
class BatchInfo:
    batch_id: int
    watermark_ms: int
    """Spark's watermark for the batch (0 until the first event time arrives)."""
    timestamp_ms: int
    source_offsets: list[Any]


def strip_scheme(location: str) -> str:
    """``location`` without a ``file:`` prefix (other URIs unchanged)."""
    return location[len("file:"):] if location.startswith("file:") else location


# ------------------------------------------------------------------ Spark's logs

def read_batch_info(checkpoint: str, batch_id: int) -> BatchInfo:
    """Batch ``batch_id``'s entry of the offsets log."""
    path = join(checkpoint, "offsets", str(batch_id))
    try:
        lines = storage_for(checkpoint).read_text(path).splitlines()
    except (OSError, StorageError) as exc:
        raise StorageError(f"offsets log of batch {batch_id} unreadable: {exc}") from exc
    meta = json.loads(lines[1])
    offsets: list[Any] = []
    for line in lines[2:]:
        line = line.strip()
        if not line or line == "-":
            offsets.append(None)
            continue
        try:
            offsets.append(json.loads(line))
        except json.JSONDecodeError:
            offsets.append(line)
    return BatchInfo(
        batch_id=batch_id,
        watermark_ms=int(meta.get("batchWatermarkMs", 0)),
        timestamp_ms=int(meta.get("batchTimestampMs", 0)),
        source_offsets=offsets,
    )


def _batch_ids(checkpoint: str, log: str) -> list[int]:
    return sorted(int(n) for n in storage_for(checkpoint).list(join(checkpoint, log))
                  if n.isdigit())


def has_run(checkpoint: str) -> bool:
    """Whether a query already ran on this checkpoint (an offsets log entry exists)."""
    return bool(_batch_ids(checkpoint, "offsets"))


def committed_batches(checkpoint: str) -> list[int]:
    """Ids of committed batches, ascending."""
    return _batch_ids(checkpoint, "commits")


def unfinished_batches(checkpoint: str) -> list[int]:
    """Ids the offsets log holds and the commits log does not, ascending: the batch a query
    that stopped inside it runs again when it restarts."""
    done = set(_batch_ids(checkpoint, "commits"))
    return [b for b in _batch_ids(checkpoint, "offsets") if b not in done]


def is_committed(checkpoint: str, batch_id: int) -> bool:
    return storage_for(checkpoint).exists(join(checkpoint, "commits", str(batch_id)))


def commit_watermark(checkpoint: str, batch_id: int) -> int | None:
    """Spark's watermark after batch ``batch_id`` (its commit entry), None if unreadable."""
    try:
        lines = storage_for(checkpoint).read_text(
            join(checkpoint, "commits", str(batch_id))).splitlines()
        return int(json.loads(lines[1]).get("nextBatchWatermarkMs", 0))
    except (OSError, StorageError, IndexError, ValueError):
        return None


def state_size_bytes(checkpoint: str) -> int:
    """Bytes under ``state/`` (all versions kept for recovery; an upper bound of live state)."""
    return storage_for(checkpoint).size_under(join(checkpoint, "state"))


# ------------------------------------------------------------------ tidemark's files

def _read(checkpoint: str, file: str) -> dict[str, Any] | None:
    st = storage_for(checkpoint)
    path = join(checkpoint, file)
    try:
        return dict(json.loads(st.read_text(path)))
    except FileNotFoundError:
        return None


def _write(checkpoint: str, file: str, content: dict[str, Any]) -> None:
    storage_for(checkpoint).write_text(join(checkpoint, file), json.dumps(content))


def write_marker(checkpoint: str | os.PathLike[str], file: str,
                 content: dict[str, Any]) -> None:
    """Write one of the files above (tests use it to set up a checkpoint's history)."""
    _write(os.fspath(checkpoint), file, content)


def recorded_path(checkpoint: str) -> Literal["native", "engine"] | None:
    """The execution path whose state the checkpoint holds (None: new or unknown)."""
    marker = _read(checkpoint, PATH_FILE)
    if marker is not None:
        value = marker.get("path")
        return value if value in ("native", "engine") else None
    if not has_run(checkpoint):
        return None
    st = storage_for(checkpoint)
    if st.exists(join(checkpoint, KEY_FILE)):
        return "native"
    if st.exists(join(checkpoint, TIME_FILE)):
        return "engine"
    return None


def record_path(checkpoint: str, path: Literal["native", "engine"]) -> None:
    _write(checkpoint, PATH_FILE, {"path": path})


def read_key_layout(checkpoint: str) -> KeyLayout:
    """The native state's key layout (``json`` when no file says otherwise)."""
    marker = _read(checkpoint, KEY_FILE)
    return "raw" if marker is not None and marker.get("key") == "raw" else "json"


def choose_key_layout(checkpoint: str, raw_possible: bool) -> KeyLayout:
    """The checkpoint's layout if it has one; ``json`` for a checkpoint that already ran
    without the file; else ``raw`` when the key type allows it. A new choice is written."""
    marker = _read(checkpoint, KEY_FILE)
    if marker is not None:
        return "raw" if marker.get("key") == "raw" else "json"
    layout: KeyLayout = "raw" if raw_possible and not has_run(checkpoint) else "json"
    _write(checkpoint, KEY_FILE, {"key": layout})
    return layout


def engine_buckets(checkpoint: str, buckets: int,
                   spread: Callable[[], tuple[list[int], int]]) -> tuple[int, list[int] | None]:
    """(bucket count, grouping value per bucket or None for the plain ``0..n-1``): the file's;
    for a checkpoint that already ran without it, ``buckets`` with plain values; for a new one
    ``spread()`` = (values, shuffle partitions). Written back when new."""
    marker = _read(checkpoint, BUCKETS_FILE)
    if marker is not None:
        keys = marker.get("keys")
        return int(marker["buckets"]), (None if keys is None else [int(v) for v in keys])
    values: list[int] | None
    partitions: int | None
    if has_run(checkpoint):
        values, partitions = None, None
    else:
        values, partitions = spread()
    _write(checkpoint, BUCKETS_FILE,
           {"buckets": buckets, "keys": values, "partitions": partitions})
    return buckets, values


def engine_time_mode(checkpoint: str, wanted: TimeMode) -> TimeMode:
    """The engine operator's time mode: the file's; ``EventTime`` for a checkpoint that ran
    without it; else ``wanted``. Written back when new."""
    marker = _read(checkpoint, TIME_FILE)
    if marker is not None:
        return "ProcessingTime" if marker.get("time_mode") == "ProcessingTime" else "EventTime"
    mode: TimeMode = "EventTime" if has_run(checkpoint) else wanted
    _write(checkpoint, TIME_FILE, {"time_mode": mode})
    return mode


def read_state_rows(checkpoint: str) -> dict[str, int] | None:
    """``{"batch", "rows", "prev"}`` of the native path's last counted batch, or None."""
    marker = _read(checkpoint, COUNT_FILE)
    return None if marker is None else {k: int(marker[k]) for k in ("batch", "rows", "prev")}


def rows_after(counts: dict[str, int] | None, batch_id: int) -> int | None:
    """The state's rows after ``batch_id`` as a count record knows them (it holds the rows
    before and after its own batch), or None."""
    if counts is not None and counts["batch"] == batch_id:
        return counts["rows"]
    if counts is not None and counts["batch"] == batch_id + 1:
        return counts["prev"]
    return None


def choose_counting(checkpoint: str) -> Counting:
    """``tidemark`` when the rows before the next batch are known: a new checkpoint, or one
    whose file reaches its last committed batch; else ``spark`` for this run (a checkpoint that
    ran without the file, or whose file is behind its commits)."""
    if not has_run(checkpoint):
        return "tidemark"
    committed = committed_batches(checkpoint)
    last = committed[-1] if committed else -1
    return "spark" if rows_after(read_state_rows(checkpoint), last) is None else "tidemark"


def write_state_rows(checkpoint: str, record: dict[str, int]) -> None:
    _write(checkpoint, COUNT_FILE, record)


def forget_state_rows(checkpoint: str) -> None:
    storage_for(checkpoint).delete(join(checkpoint, COUNT_FILE))
