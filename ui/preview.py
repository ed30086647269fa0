"""The live preview: the definition run by the replay engine over a sample of the source.

The preview runs in the UI process with the pure engine (no Spark): the same engine the Spark
job and ``tidemark replay`` use, fed in the same arrival units (docs/semantics.md, "Arrival
model"), so the panes shown are the panes the job would emit for that input. A sample
(:mod:`jobs.sample`, shared with ``tidemark preview``) is either the first records of the
source, cut into the job's micro-batches, or JSON lines the user pastes, read as a plain log
(one record at a time) or as micro-batches between ``{"$processing_time": T}`` lines. The
result says which model it used.

Pure: no Streamlit here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jobs.definition.model import Definition
from jobs.engine.arrival import Arrival
from jobs.sample import (  # noqa: F401 - the page imports the sample's names from here
    BATCH_END,
    DEFAULT_SAMPLE,
    Sample,
    as_micro_batches,
    data_files,
    kafka_sample,
    parse_jsonl,
    source_sample,
)


@dataclass
class PreviewResult:
    panes: list[dict[str, Any]]
    late: list[dict[str, Any]]
    dead_letters: list[dict[str, Any]]
    records: int


def run_preview(defn: Definition, lines: Iterable[dict[str, Any]],
                arrival: Arrival | None = None) -> PreviewResult:
    """Run ``defn`` over ``lines`` exactly as ``tidemark replay --arrival`` would (end of input
    closes every window) and return its output objects by type."""
    from jobs.replay import replay_lines

    panes: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    dead: list[dict[str, Any]] = []
    materialised = list(lines)
    for out in replay_lines(defn, materialised, arrival=arrival or Arrival()):
        kind = out.get("type")
        if kind == "pane":
            panes.append(out)
        elif kind == "late":
            late.append(out)
        else:
            dead.append(out)
    records = sum(1 for obj in materialised if not any(k.startswith("$") for k in obj))
    return PreviewResult(panes, late, dead, records)
