"""The engine transcript suite through Spark, for a representative subset (every window type,
trigger kind and accumulation mode): fed one micro-batch per clock line of the transcript (test
mode: the batch's processing time is the line's), every pane equals replay's in its micro-batch
mode (``--arrival batch``, docs/semantics.md "Arrival model"), ``watermark`` included: a pane a
count trigger fires during ingest carries the watermark from before the micro-batch in both.
Spark runs without end-of-input flush, so replay runs with ``eof_flush=False`` too.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobs.config import Settings
from jobs.definition import load_definition

from .parity import canon, replay_output, spark_panes, spark_run

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "transcripts" / "engine"
SUBSET = [
    "tumbling_basic",               # native path
    "hopping_partially_expired",    # native path, allowed lateness
    "sliding_kip450_windows",
    "session_merge_retracting",
    "global_window_early_count",
    "trigger_early_count_discarding",
    "trigger_late_count_and_expiry",
    "emit_current",
    "emit_final_with_lateness",
    "accumulation_discarding",
    "watermark_scope_key",
    "lateness_event_basis_hopping",
    # the clock on its own (ProcessingTime mode: every bucket woken at every micro-batch)
    "processing_clock",
    "processing_clock_sessions",
    "trigger_early_after",
    "trigger_early_every_aligned",
    "trigger_late_after",
    "watermark_idle_advance",
    "watermark_idle_advance_per_key",
]


def _plain(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _ddl(records: list[dict[str, Any]], event_time: str) -> str:
    types: dict[str, str] = {}
    for r in records:
        for k, v in r.items():
            if v is None:
                types.setdefault(k, "STRING")
            elif isinstance(v, bool):
                types[k] = "BOOLEAN"
            elif isinstance(v, int):
                types[k] = "DOUBLE" if types.get(k) == "DOUBLE" else "BIGINT"
            elif isinstance(v, float):
                types[k] = "DOUBLE"
            else:
                types[k] = "TIMESTAMP" if k == event_time else "STRING"
    return ", ".join(f"`{k}` {t}" for k, t in types.items())


def _instants(lines: list[dict[str, Any]]) -> list[tuple[int, list[dict[str, Any]]]]:
    out: list[tuple[int, list[dict[str, Any]]]] = []
    pt = 0
    current: list[dict[str, Any]] = []
    for line in lines:
        if "$processing_time" in line:
            if current:
                out.append((pt, current))
            current = []
            v = line["$processing_time"]
            pt = v if isinstance(v, int) else int(dt.datetime.fromisoformat(
                str(v).replace("Z", "+00:00")).timestamp() * 1000)
        elif not any(k.startswith("$") for k in line):
            current.append(line)
    if current:
        out.append((pt, current))
    return out


@pytest.mark.parametrize("name", SUBSET)
def test_transcript_through_spark(name: str, spark: Any, tmp_path: Path,
                                  settings: Settings) -> None:
    raw = yaml.safe_load((TRANSCRIPTS / f"{name}.yaml").read_text())
    mapping = _plain(raw["definition"])
    lines = [_plain(x) for x in raw["input"]]
    instants = _instants(lines)
    records = [r for _, rs in instants for r in rs]
    event_time = mapping.get("event_time", "processing")
    mapping = {**mapping, "name": "transcript", "source": {
        "kind": "files", "path": str(tmp_path / "in"), "format": "json",
        "schema": _ddl(records, event_time) + ", arrival BIGINT"}}
    defn = load_definition(mapping)
    expected = replay_output(defn, instants)
    runner, ctx = spark_run(spark, tmp_path, defn, instants, settings)
    got = spark_panes(spark, ctx)
    drop: tuple[str, ...] = () if not ctx.plan.native else ("emitted_at",)
    assert canon(got, drop) == canon(expected, drop), (
        f"{name} ({ctx.plan.path} path)\nreplay:\n" + "\n".join(canon(expected)) +
        "\nspark:\n" + "\n".join(canon(got)))
