"""Which files hold a job's committed panes, and which writer a checkpoint's panes use.

Two writers produce the same ``panes/batch_id=N/*.parquet`` layout:
- ``file``: Spark's own file sink, inside the streaming query (the native path with the JVM
  functions). Exactly once through the sink's log, ``panes/_spark_metadata/``: a batch's files
  count once that log lists them, and a batch re-run after a crash whose log entry exists is
  skipped. Files of an attempt that died before its log entry are *not* panes; Spark's readers
  (``spark.read.parquet(panes)``) ignore them, :func:`pane_files` does too, and the runner
  deletes them before it restarts the query (:func:`remove_uncommitted`). Why this writer:
  measured ~10% faster over the benchmark than a ``foreachBatch`` round trip into Python
  per batch (docs/performance.md, session 11).
- ``batch``: ``foreachBatch`` replaces ``panes/batch_id=N/`` as a whole (sinks.py); every file
  under a ``batch_id=`` directory is a pane file. The engine path, the Python-gate fallback and
  every checkpoint that ran before the file sink existed.

A checkpoint keeps the writer it started with (``tidemark_pane_sink.json`` in its root): the
file sink's log in a directory that already holds ``foreachBatch`` output would hide that
output from Spark's readers.

Pure file handling: no pyspark, so the UI reads results with it too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from jobs.spark.checkpoint import has_run, local_root, write_marker

PaneSink = Literal["file", "batch"]
SINK_FILE = "tidemark_pane_sink.json"
SINK_LOG = "_spark_metadata"


def choose_pane_sink(checkpoint: str, file_possible: bool) -> PaneSink:
    """The writer to run with: the checkpoint's own if it has one; ``batch`` for a checkpoint
    that already ran without the file, or is not local; else ``file`` when possible. A new
    choice is written to the checkpoint before the query starts."""
    root = local_root(checkpoint)
    if root is None:
        return "batch"
    marker = root / SINK_FILE
    if marker.exists():
        value = json.loads(marker.read_text(encoding="utf-8")).get("panes")
        return "file" if value == "file" else "batch"
    sink: PaneSink = "file" if file_possible and not has_run(root) else "batch"
    write_marker(root, SINK_FILE, {"panes": sink})
    return sink


def _local(uri: str) -> Path:
    """A sink-log path (``file:/...`` or ``file:///...``, percent-encoded) as a local path."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.path if parsed.scheme else uri))


def _log_batches(log: Path) -> list[tuple[int, Path]]:
    out = []
    for entry in os.listdir(log):
        stem = entry[: -len(".compact")] if entry.endswith(".compact") else entry
        if stem.isdigit():
            out.append((int(stem), log / entry))
    return sorted(out)


def committed_files(panes: Path) -> set[Path] | None:
    """The files the file sink's log lists under ``panes`` (None: no log, the ``batch``
    layout). The log is Spark's ``FileStreamSinkLog``: one file per batch, every tenth a
    ``.compact`` file holding all entries so far (older files may be deleted); each file is a
    version line followed by one JSON object per file with ``path`` and ``action``."""
    log = panes / SINK_LOG
    if not log.is_dir():
        return None
    batches = _log_batches(log)
    start = 0
    for i, (_bid, path) in enumerate(batches):
        if path.name.endswith(".compact"):
            start = i  # the newest compact file holds everything before it
    files: set[Path] = set()
    for _bid, path in batches[start:]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for line in lines[1:]:
            if not line.strip():
                continue
            entry = json.loads(line)
            target = _local(entry["path"]).absolute()
            if entry.get("action", "add") == "delete":
                files.discard(target)
            else:
                files.add(target)
    return files


def _batch_files(panes: Path) -> list[Path]:
    return sorted(p.absolute() for p in panes.glob("batch_id=*/*.parquet")
                  if not p.name.startswith((".", "_")))


def pane_files(panes: Path) -> list[Path]:
    """The Parquet files holding ``panes``' committed panes, each pane in exactly one."""
    files = _batch_files(panes)
    committed = committed_files(panes)
    if committed is None:
        return files
    return [f for f in files if f in committed]


def remove_uncommitted(panes: Path) -> list[Path]:
    """Delete the file sink's files that its log does not list (an attempt killed before it
    committed) with their checksum files; returns what was deleted. Only while no query writes
    here: the runner calls it before it starts one."""
    committed = committed_files(panes)
    if committed is None:
        return []
    removed = []
    for f in _batch_files(panes):
        if f not in committed:
            f.unlink()
            removed.append(f)
            crc = f.with_name(f".{f.name}.crc")
            if crc.exists():
                crc.unlink()
    for d in panes.glob("batch_id=*"):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return removed


def committed_rows(panes: Path, batch_id: int) -> int:
    """Panes in batch ``batch_id``'s committed files, from their Parquet footers."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in pane_files(panes)
               if batch_of(f) == batch_id)


def batch_of(path: Path) -> int | None:
    """The batch id of a pane file (its ``batch_id=N`` directory)."""
    name = path.parent.name
    if name.startswith("batch_id=") and name[len("batch_id="):].lstrip("-").isdigit():
        return int(name[len("batch_id="):])
    return None
