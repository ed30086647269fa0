"""``tidemark kafka sample`` and ``tidemark kafka check-retention``: a definition's Kafka source
from the shell.

``sample`` prints the first records of the source's topics as replay input lines (value fields
plus the Kafka metadata columns), so ``tidemark kafka sample d.yaml > in.jsonl`` followed by
``tidemark replay d.yaml --input in.jsonl`` previews the job's panes. ``check-retention``
compares the topic's earliest retained offsets with the offsets a store's checkpoint started
from (exit 3 when retention deleted input that store read; ``--accept-partial`` reports it and
exits 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_REFUSED = 3


def register(subparsers: Any) -> None:
    kafka = subparsers.add_parser("kafka", help="a definition's Kafka source: sample, retention")
    sub = kafka.add_subparsers(dest="kafka_command", required=True, metavar="ACTION")
    sample = sub.add_parser("sample", help="print the first records of the source's topics")
    sample.add_argument("definition", help="definition file (YAML or JSON)")
    sample.add_argument("--limit", type=int, default=20, help="records to read (default 20)")
    sample.set_defaults(func=run_sample)
    check = sub.add_parser("check-retention",
                           help="may a new store rebuild from what the topic retains?")
    check.add_argument("definition", help="definition file (YAML or JSON)")
    check.add_argument("--checkpoint", required=True,
                       help="the old store's checkpoint directory")
    check.add_argument("--accept-partial", action="store_true",
                       help="accept a rebuild that misses deleted input")
    check.set_defaults(func=run_check_retention)


def _kafka_options(path: str) -> dict[str, str] | int:
    from pathlib import Path

    from jobs.definition import DefinitionError, load_definition

    try:
        defn = load_definition(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        print(f"tidemark: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except DefinitionError as exc:
        for field, message in exc.errors:
            print(f"{field}: {message}", file=sys.stderr)
        return 2
    if defn.source.kind != "kafka":
        print(f"source.kind: is {defn.source.kind}, not kafka", file=sys.stderr)
        return 2
    return dict(defn.source.options)


def run_sample(args: argparse.Namespace) -> int:
    from jobs.kafka.admin import preview_lines, sample
    from jobs.kafka.errors import KafkaSetupError

    options = _kafka_options(args.definition)
    if isinstance(options, int):
        return options
    try:
        lines = preview_lines(sample(options, limit=args.limit))
    except KafkaSetupError as exc:
        print(f"tidemark: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


def run_check_retention(args: argparse.Namespace) -> int:
    from jobs.kafka.admin import earliest_offsets, first_consumed
    from jobs.kafka.errors import KafkaSetupError
    from jobs.kafka.retention import check_retention

    options = _kafka_options(args.definition)
    if isinstance(options, int):
        return options
    try:
        verdict = check_retention(first_consumed(args.checkpoint), earliest_offsets(options))
    except KafkaSetupError as exc:
        print(f"tidemark: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({
        "complete": verdict.complete,
        "complete_from": {f"{t}[{p}]": o for (t, p), o in sorted(verdict.complete_from.items())},
        "message": verdict.message(),
    }, indent=2))
    if verdict.complete or args.accept_partial:
        return 0
    print(f"tidemark: refused: {verdict.message()}", file=sys.stderr)
    return EXIT_REFUSED
