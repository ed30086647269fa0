"""A definition's source sample, cut into the job's micro-batches, for the previews.

The Define page's preview (ui/preview.py) and ``tidemark preview`` replay the same sample in the
same arrival units (docs/semantics.md, "Arrival model"), so what they show is what the job
emits for that input: the first records of a ``files`` source in modification order,
``maxFilesPerTrigger`` files per micro-batch, as Spark's file source reads them; a ``kafka``
source's first records in partition/offset order as one micro-batch (a trigger takes every
offset available). Pasted JSON lines are read as a plain log or as micro-batches between
``{"$processing_time": T}`` lines. A sample says which model it used.

Pure: no Spark, no Streamlit.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from jobs.definition.model import Source
from jobs.engine.arrival import Arrival
from jobs.timeutil import datetime_to_ms, ms_to_iso

DEFAULT_SAMPLE = 500


class SampleError(ValueError):
    """A sample cannot be taken; the message names the field or file it is about."""


@dataclass
class Sample:
    lines: list[dict[str, Any]]
    """Records and control lines, in input order."""
    origin: str
    """Where they came from, for the caption under the preview."""
    problems: list[str] = field(default_factory=list)
    """Lines that are not JSON objects (they become dead letters in a job)."""
    arrival: Arrival = field(default_factory=Arrival)
    """How the lines arrive: one record at a time, or micro-batches between control lines."""
    model: str = "a plain event log: one record at a time"
    """The arrival model in words, for the caption under the preview."""
    clock: bool = False
    """Whether the sample's own lines move processing time (else every pane is at time 0)."""


BATCH_END = {"$processing_time": 0}
"""Ends a micro-batch without moving the clock (an equal processing time only ends a unit)."""


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return ms_to_iso(datetime_to_ms(value))
    if isinstance(value, date):
        return value.isoformat()
    return value


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_jsonl(text: str, origin: str, limit: int = DEFAULT_SAMPLE) -> Sample:
    lines: list[dict[str, Any]] = []
    problems: list[str] = []
    records = 0
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: not JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"line {n}: not a JSON object")
            continue
        is_control = any(k.startswith("$") for k in obj)
        if not is_control:
            if records >= limit:
                break
            records += 1
        lines.append(obj)
    return Sample(lines, origin, problems,
                  clock=any("$processing_time" in obj for obj in lines))


def as_micro_batches(sample: Sample) -> Sample:
    """The pasted ``sample`` read as a job's micro-batches: the records between two
    ``$processing_time`` lines arrive together (``tidemark replay --arrival batch``)."""
    return Sample(sample.lines, sample.origin, sample.problems, Arrival("batch"),
                  "micro-batches: the records between two $processing_time lines arrive "
                  "together, as in a Spark job", sample.clock)


def data_files(root: Path) -> list[Path]:
    """Data files under ``root`` in modification order (Spark's file source order), skipping
    hidden and ``_``-prefixed names (temporary and bookkeeping files)."""
    files = [
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(root).parts)
    ]
    return sorted(files, key=lambda p: (p.stat().st_mtime_ns, str(p)))


def source_sample(source: Source, limit: int = DEFAULT_SAMPLE) -> Sample | None:
    """The first ``limit`` records of a ``files`` or ``kafka`` source, or None when there is
    nothing to read."""
    if source.kind == "kafka":
        return kafka_sample(source, limit)
    if source.kind != "files" or not source.path:
        return None
    root = Path(source.path)
    if not root.is_dir():
        return None
    lines: list[dict[str, Any]] = []
    problems: list[str] = []
    fmt = source.format or "json"
    used = 0
    per_batch = _files_per_trigger(source)
    for path in data_files(root):
        if len(lines) >= limit:
            break
        if used and used % per_batch == 0:
            lines.append(dict(BATCH_END))  # the job's next micro-batch starts here
        used += 1
        room = limit - len(lines)
        if fmt == "json":
            part = parse_jsonl(path.read_text(encoding="utf-8", errors="replace"), path.name, room)
            lines += part.lines
            problems += [f"{path.name} {p}" for p in part.problems]
        elif fmt == "csv":
            with path.open(newline="", encoding="utf-8", errors="replace") as fh:
                for row in csv.DictReader(fh):
                    if len(lines) >= limit:
                        break
                    lines.append({k: _number(v) for k, v in row.items() if k is not None})
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            for row in table.slice(0, room).to_pylist():
                lines.append({k: _plain(v) for k, v in row.items()})
    if not lines and not problems:
        return None
    records = sum(1 for obj in lines if "$processing_time" not in obj)
    files = "file" if per_batch == 1 else f"{per_batch} files"
    return Sample(lines, f"first {records} records of {used} file(s) in {root}", problems,
                  Arrival("batch"),
                  f"the job's micro-batches: one per {files} (maxFilesPerTrigger), each judged "
                  "against the watermark the previous one set; within a key, records one at "
                  "a time in file and line order")


def _files_per_trigger(source: Source) -> int:
    """Files per micro-batch of a files source (its ``maxFilesPerTrigger``, default 1)."""
    text = str(dict(source.options).get("maxFilesPerTrigger", "1"))
    return int(text) if text.isdigit() and int(text) > 0 else 1


def kafka_sample(source: Source, limit: int = DEFAULT_SAMPLE) -> Sample | None:
    """The first ``limit`` records of the topics, in partition/offset order, with the Kafka
    metadata columns the job's expressions see (jobs/kafka/admin.py); raises KafkaSetupError
    when the broker or topic cannot be read."""
    from jobs.kafka.admin import preview_lines, sample

    got = sample(dict(source.options), limit=limit)
    if not got:
        return None
    parsed = parse_jsonl("\n".join(preview_lines(got)), "topic", limit)
    topics = sorted({r["kafka_topic"] for r in got})
    return Sample(parsed.lines, f"first {len(parsed.lines)} records of {', '.join(topics)}",
                  parsed.problems, Arrival("batch"),
                  "one micro-batch, as a job's trigger takes every offset available: judged "
                  "against the watermark before it; within a key, records one at a time in "
                  "partition/offset order")
