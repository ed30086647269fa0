"""Emitted panes of a job, wherever its sink put them.

``catalog`` sinks are read through the catalog service; ``parquet`` and ``delta`` sinks are read
from the job's results directory with pyarrow and delta-rs (no Spark in the UI process). The Spark job writes each
micro-batch to ``<sink path>/panes/batch_id=N/`` and *replaces* that directory when a batch is
re-run, so reading every ``batch_id=`` directory gives each pane once. Either way the result is
the engine's pane JSON shape plus the version/store that produced it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.catalog.ports import UICatalog
from jobs.definition.model import Definition


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


def parquet_dir(defn: Definition, results_root: str | Path, store: str) -> Path:
    """Where the Spark job writes the panes of ``store``: ``<sink.path or results root/job>/
    <store>/panes/batch_id=N/`` (see ``jobs.spark.context.JobContext``). Local roots only: a
    Hadoop URI root maps to no local directory, so its panes read as none."""
    base = Path(defn.sink.path) if defn.sink.path else Path(results_root) / defn.name
    return base.absolute() / store / "panes"


def parquet_panes(defn: Definition, results_root: str | Path, *, store: str,
                  limit: int) -> list[PaneRow]:
    """Panes of a ``parquet`` sink (empty when nothing was written yet)."""
    import pyarrow.dataset as ds

    root = parquet_dir(defn, results_root, store)
    if not root.is_dir() or not any(root.glob("batch_id=*")):
        return []
    # Spark's in-flight `_temporary` directories and `_SUCCESS` markers are not data
    dataset = ds.dataset(str(root), format="parquet", partitioning="hive",
                         exclude_invalid_files=True, ignore_prefixes=[".", "_"])
    return _pane_rows(dataset.to_table().to_pylist(), store, limit)


def delta_panes(defn: Definition, results_root: str | Path, *, store: str,
                limit: int) -> list[PaneRow]:
    """Panes of a ``delta`` sink: the table at ``<sink.path or results root/job>/<store>/
    panes`` (jobs/spark/delta_sink.py), read with delta-rs (no Spark)."""
    from deltalake import DeltaTable

    table = parquet_dir(defn, results_root, store)
    if not (table / "_delta_log").is_dir():
        return []
    return _pane_rows(DeltaTable(str(table)).to_pyarrow_table().to_pylist(), store, limit)


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


def open_from_panes(rows: list[PaneRow], *, sessions: bool = False) -> list[dict[str, Any]]:
    """Windows that have emitted panes but no final (``is_last``) pane yet, per key.

    This is what the panes alone can tell; windows that have not fired at all (``emit: final``
    before they close) live only in the job's state store. For session windows, a window whose
    bounds changed (extended or merged) is a new window and the old one is gone, so a pane of
    the same key whose interval overlaps an earlier window replaces it.
    """
    latest: dict[tuple[str, Any, Any], dict[str, Any]] = {}
    for row in rows:
        p = row.pane
        if p.get("retraction"):
            continue
        ident = (json.dumps(p.get("key"), sort_keys=True), p.get("window_start"), p.get("window_end"))
        if sessions and ident[1] is not None and ident[2] is not None:
            for other in list(latest):
                if (other != ident and other[0] == ident[0] and other[1] is not None
                        and other[2] is not None and other[1] < ident[2] and ident[1] < other[2]):
                    del latest[other]
        latest[ident] = p
    return [p for p in latest.values() if not p.get("is_last")]
