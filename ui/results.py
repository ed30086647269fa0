"""Emitted panes of a job, wherever its sink put them.

``catalog`` sinks are read through the catalog service; ``parquet`` and ``delta`` sinks are read
from the job's results location with pyarrow and delta-rs (no Spark in the UI process), on a
local disk or a Hadoop filesystem: Parquet parts, late records and dead letters through
``jobs.storage`` (``hdfs://`` over WebHDFS, the settings' ``webhdfs_url``; ``s3a://`` with
pyarrow's S3 client, the settings' S3 endpoint and credentials), a Delta table with
delta-rs's own clients. The Spark job writes each micro-batch to
``<sink path>/panes/batch_id=N/`` and *replaces* that directory when a batch is re-run, so
reading every ``batch_id=`` directory gives each pane once. Either way the result is the
engine's pane JSON shape plus the version/store that produced it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from jobs.catalog.ports import UICatalog
from jobs.definition.model import Definition
from jobs.storage import Storage, is_local, join, local_path, storage_for, validate
from jobs.storage.s3options import S3Options


@dataclass(frozen=True)
class PaneRow:
    version: int | None
    store: str | None
    batch_id: int | None
    pane: dict[str, Any]


def catalog_panes(cat: UICatalog, job: str, *, store: str | None, limit: int) -> list[PaneRow]:
    return [
        PaneRow(p.version, p.store, p.batch_id, p.pane.to_json())
        for p in cat.panes(job, store=store, limit=limit)
    ]


def _values(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return {"value": value}
        return parsed if isinstance(parsed, dict) else {"value": parsed}
    if isinstance(value, dict):
        return value
    if isinstance(value, list):  # a Spark map read by pyarrow: [(name, value), ...]
        return {str(k): v for k, v in value}
    return {}


def _key(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def results_location(defn: Definition, results_root: str, store: str) -> str:
    """Where the Spark job writes ``store``'s results: ``<sink.path or results root/job>/
    <store>`` (``jobs.spark.context.JobContext.output_root``), a local path or a Hadoop URI,
    holding ``panes/``, ``late/`` and ``dead_letters/``."""
    base = validate(defn.sink.path) if defn.sink.path else join(results_root, defn.name)
    return join(base, store)


def parquet_panes(defn: Definition, results_root: str, *, store: str, limit: int,
                  webhdfs: str | None = None, s3: S3Options | None = None) -> list[PaneRow]:
    """Panes of a ``parquet`` sink (empty when nothing was written yet), the newest batches
    first until ``limit`` panes; ``webhdfs`` reaches an ``hdfs://`` root, ``s3`` an
    ``s3a://`` one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = join(results_location(defn, results_root, store), "panes")
    st = storage_for(root, webhdfs, s3)
    records: list[dict[str, Any]] = []
    for batch_id in _batches(st, root):
        d = join(root, f"batch_id={batch_id}")
        for part in st.list(d):
            # Spark's in-flight `_temporary` directories and `_SUCCESS` markers are not data
            if part.startswith(("_", ".")) or not part.endswith(".parquet"):
                continue
            table = pq.read_table(pa.BufferReader(st.read_bytes(join(d, part))))
            records.extend({**r, "batch_id": batch_id} for r in table.to_pylist())
        if len(records) >= limit:
            break
    return _pane_rows(records, store, limit)


def delta_panes(defn: Definition, results_root: str, *, store: str,
                limit: int, s3: S3Options | None = None) -> list[PaneRow]:
    """Panes of a ``delta`` sink: the table at ``<sink.path or results root/job>/<store>/
    panes`` (jobs/spark/delta_sink.py), read with delta-rs (no Spark), which reaches local
    paths, ``hdfs://`` (its own HDFS client) and S3."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    table = join(results_location(defn, results_root, store), "panes")
    if is_local(table):
        uri = local_path(table)
    elif table.startswith("s3a://"):
        uri = "s3://" + table[len("s3a://"):]  # delta-rs's name for S3
    else:
        uri = table
    try:
        options = s3.delta_options() if s3 is not None and table.startswith("s3a://") else None
        records = DeltaTable(uri, storage_options=options).to_pyarrow_table().to_pylist()
    except TableNotFoundError:
        return []
    return _pane_rows(records, store, limit)


SIDE_KINDS = ("late", "dead_letters")


def side_records(defn: Definition, results_root: str, *, store: str, kind: str, limit: int,
                 webhdfs: str | None = None, s3: S3Options | None = None
                 ) -> list[dict[str, Any]]:
    """The newest ``limit`` late records or dead letters (``kind``) the job's gate wrote beside
    its panes (``<store>/<kind>/batch_id=N/part-*.jsonl``, for every sink kind), newest batch
    first, each with its ``batch_id``."""
    if kind not in SIDE_KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(SIDE_KINDS)}")
    root = join(results_location(defn, results_root, store), kind)
    st = storage_for(root, webhdfs, s3)
    out: list[dict[str, Any]] = []
    for batch_id in _batches(st, root):
        d = join(root, f"batch_id={batch_id}")
        for part in st.list(d):
            if part.startswith("part-") and part.endswith(".jsonl"):
                out.extend({"batch_id": batch_id, **json.loads(line)}
                           for line in st.read_text(join(d, part)).splitlines() if line.strip())
        if len(out) >= limit:
            break
    return out[:limit]


def _batches(st: Storage, root: str) -> list[int]:
    """The ``batch_id=N`` directories under ``root``, newest first ([] when none)."""
    ids = [int(n.split("=", 1)[1]) for n in st.list(root)
           if n.startswith("batch_id=") and n.split("=", 1)[1].isdigit()]
    return sorted(ids, reverse=True)


def _pane_rows(records: list[dict[str, Any]], store: str, limit: int) -> list[PaneRow]:
    rows: list[PaneRow] = []
    for r in records:
        pane = {
            "type": "pane",
            "key": _key(r.get("key")),
            "window_start": r.get("window_start"),
            "window_end": r.get("window_end"),
            "timing": r.get("timing"),
            "pane_index": r.get("pane_index"),
            "is_first": r.get("is_first"),
            "is_last": r.get("is_last"),
            "retraction": bool(r.get("retraction")),
            "values": _values(r.get("values")),
            "emitted_at": r.get("emitted_at"),
            "watermark": r.get("watermark"),
        }
        if r.get("first_event_time") is not None:
            pane["first_event_time"] = r.get("first_event_time")
            pane["last_event_time"] = r.get("last_event_time")
        rows.append(PaneRow(r.get("version"), r.get("store") or store, r.get("batch_id"), pane))
    rows.sort(key=lambda p: (p.batch_id or 0, p.pane.get("emitted_at") or 0))
    return rows[-limit:]


def open_from_panes(rows: list[PaneRow], *, merges: bool = False) -> list[dict[str, Any]]:
    """Windows that have emitted panes but no final (``is_last``) pane yet, per key.

    This is what the panes alone can tell; windows that have not fired at all (``emit: final``
    before they close) live only in the job's state store. Where windows ``merges`` (the kind's
    flag: sessions), a window whose bounds changed (extended or merged) is a new window and the
    old one is gone, so a pane of the same key whose interval overlaps an earlier window
    replaces it.
    """
    latest: dict[tuple[str, Any, Any], dict[str, Any]] = {}
    for row in rows:
        p = row.pane
        if p.get("retraction"):
            continue
        ident = (json.dumps(p.get("key"), sort_keys=True), p.get("window_start"), p.get("window_end"))
        if merges and ident[1] is not None and ident[2] is not None:
            for other in list(latest):
                if (other != ident and other[0] == ident[0] and other[1] is not None
                        and other[2] is not None and other[1] < ident[2] and ident[1] < other[2]):
                    del latest[other]
        latest[ident] = p
    return [p for p in latest.values() if not p.get("is_last")]
