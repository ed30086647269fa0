"""Reading Spark's own checkpoint logs (plain files, no Spark needed).

The offsets log entry of batch N is written *before* batch N runs and is reused verbatim when
the batch is re-run after a crash; so its watermark and timestamp are the deterministic facts a
batch may depend on (emitted_at of panes, the watermark the gate judges lateness against).
Layout (Spark 4.3): ``offsets/N`` = ``v1`` line, one JSON line of batch metadata
(``batchWatermarkMs``, ``batchTimestampMs``, ``conf``), then one line per source offset;
``commits/N`` marks batch N committed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.spark.errors import SparkRuntimeError


@dataclass(frozen=True)
class BatchInfo:
    batch_id: int
    watermark_ms: int
    """Spark's watermark for the batch (0 until the first event time arrives)."""
    timestamp_ms: int
    source_offsets: list[Any]


def strip_scheme(location: str) -> str:
    return location[len("file:") :] if location.startswith("file:") else location


def read_batch_info(checkpoint: str, batch_id: int) -> BatchInfo:
    path = Path(strip_scheme(checkpoint)) / "offsets" / str(batch_id)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SparkRuntimeError(f"offsets log of batch {batch_id} unreadable: {exc}") from exc
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


def local_root(checkpoint: str) -> Path | None:
    """The checkpoint's directory, or None when it is not a local path (hdfs://, s3a://)."""
    if "://" in checkpoint and not checkpoint.startswith("file:"):
        return None
    return Path(strip_scheme(checkpoint))


def has_run(root: Path) -> bool:
    """Whether a query already ran on this checkpoint (an offsets log entry exists)."""
    offsets = root / "offsets"
    return offsets.is_dir() and any(n.isdigit() for n in os.listdir(offsets))


def write_marker(root: Path, name: str, content: dict[str, Any]) -> None:
    """Write one of tidemark's own JSON files beside Spark's logs, atomically."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / (name + ".tmp")
    tmp.write_text(json.dumps(content), encoding="utf-8")
    tmp.replace(root / name)


def committed_batches(checkpoint: str) -> list[int]:
    """Ids of committed batches, ascending."""
    commits = Path(strip_scheme(checkpoint)) / "commits"
    if not commits.is_dir():
        return []
    return sorted(int(n) for n in os.listdir(commits) if n.isdigit())


def state_size_bytes(checkpoint: str) -> int:
    """Bytes under ``state/`` (all versions kept for recovery; an upper bound of live state)."""
    root = Path(strip_scheme(checkpoint)) / "state"
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                continue
    return total
