"""``tidemark preview``: a definition replayed over a sample, in the job's micro-batches.

What the Define page's preview shows, on the command line: the first records of the
definition's own source (:func:`jobs.sample.source_sample`: files ``maxFilesPerTrigger`` to a
micro-batch, a Kafka topic as one micro-batch), or a JSONL file whose ``$processing_time``
lines end the micro-batches, replayed as ``tidemark replay --arrival batch`` would. The output
lines go to stdout as ``tidemark replay`` writes them; the sample and the arrival model it used
go to stderr. Errors are raised for the CLI's one handler (:mod:`jobs.cli.errors`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    from jobs.sample import DEFAULT_SAMPLE

    p: argparse.ArgumentParser = subparsers.add_parser(
        "preview",
        help="replay a definition over its source's first records, in the job's micro-batches",
        description=(
            "Replay the first records of the definition's source (files: maxFilesPerTrigger "
            "files a micro-batch; kafka: one micro-batch), or of --input (micro-batches end at "
            '{"$processing_time": T} lines), as the job would, and write the output lines '
            "as JSONL to stdout. stderr says which sample and arrival model were used."
        ),
    )
    p.add_argument("definition", help="definition file (YAML or JSON)")
    p.add_argument("--limit", type=int, default=DEFAULT_SAMPLE, metavar="N",
                   help=f"records to take (default {DEFAULT_SAMPLE})")
    p.add_argument("--input", "-i", default=None, metavar="FILE",
                   help="a JSONL sample instead of the definition's source ('-' for stdin)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jobs.definition import load_definition
    from jobs.replay import replay_lines
    from jobs.sample import SampleError, as_micro_batches, parse_jsonl, source_sample

    if args.limit < 1:
        raise SampleError("--limit: must be at least 1 record")
    defn = load_definition(Path(args.definition).read_text(encoding="utf-8"))
    if args.input is None:
        sample = source_sample(defn.source, args.limit)
        if sample is None:
            where = defn.source.path or dict(defn.source.options).get("subscribe", "")
            raise SampleError(f"source: no records to preview in {defn.source.kind} "
                              f"source {where!r}".replace(" ''", ""))
    else:
        text = (sys.stdin.read() if args.input == "-"
                else Path(args.input).read_text(encoding="utf-8", errors="replace"))
        sample = as_micro_batches(parse_jsonl(text, args.input, args.limit))
    for problem in sample.problems:
        print(f"tidemark preview: {problem}", file=sys.stderr)
    out = sys.stdout
    for obj in replay_lines(defn, sample.lines, arrival=sample.arrival):
        out.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))
        out.write("\n")
    out.flush()
    records = sum(1 for obj in sample.lines if not any(k.startswith("$") for k in obj))
    print(f"tidemark preview: {records} records, {sample.origin}", file=sys.stderr)
    print(f"tidemark preview: arrival model: {sample.model} (replay --arrival {sample.arrival})",
          file=sys.stderr)
    return 0
