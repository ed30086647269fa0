"""``tidemark replay``: run a definition over a JSONL file, deterministically, without Spark.

Kept free of heavy imports at module level (the CLI imports every command module to build its
parser); the engine is imported inside the handler.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "replay",
        help="run a definition over a JSONL input and write the panes as JSONL",
        description=(
            "Replay a bounded JSONL input through a window definition. Input lines are "
            'records or control lines {"$processing_time": T} / {"$watermark": T}; output '
            "lines are panes, late records and dead letters, in emission order."
        ),
    )
    p.add_argument("definition", help="definition file (YAML or JSON)")
    p.add_argument("--input", "-i", required=True, help="input JSONL file ('-' for stdin)")
    p.add_argument("--output", "-o", required=True, help="output JSONL file ('-' for stdout)")
    p.add_argument(
        "--no-eof-flush",
        dest="eof_flush",
        action="store_false",
        help="do not move the watermark to +infinity at end of input",
    )
    p.add_argument(
        "--arrival",
        default="record",
        metavar="record|batch|batch:N",
        help="how records arrive (docs/semantics.md, 'Arrival model'): 'record' (default, a "
        "plain event log: one record at a time), 'batch' (the records between two control "
        "lines are one micro-batch, as a Spark job's), 'batch:N' (micro-batches of N records)",
    )
    p.add_argument(
        "--engine",
        choices=("general", "auto", "vectorized"),
        default="general",
        help="engine implementation (default: general; auto picks the vectorized fast path "
        "or the compiled session or sliding engine when the definition qualifies)",
    )
    p.add_argument(
        "--progress-every", type=float, default=10.0, metavar="SECONDS",
        help="print the lines read so far to stderr at most every SECONDS (default 10; "
        "0: never)",
    )
    p.set_defaults(func=run)


class ReplayProgress:
    """Prints ``replay: N input lines read (T s)`` to stderr, at most every ``every_s``
    seconds (stdout may be the replay's output, so progress never goes there)."""

    def __init__(self, every_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self.clock = clock
        self.started = clock()
        self.last = self.started

    def __call__(self, lines: int) -> None:
        now = self.clock()
        if now - self.last < self.every_s:
            return
        self.last = now
        print(f"tidemark replay: {lines:,} input lines read ({now - self.started:.0f} s)",
              file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from jobs.definition import DefinitionError, load_definition
    from jobs.engine import EngineError
    from jobs.engine.allocator import tune_malloc
    from jobs.engine.arrival import Arrival
    from jobs.replay import replay_file

    tune_malloc()  # the engines' arrays reuse freed memory (jobs/engine/allocator.py)
    try:
        arrival = Arrival.parse(args.arrival)
    except EngineError as exc:
        print(f"tidemark replay: --{exc}", file=sys.stderr)
        return 2

    try:
        defn = load_definition(Path(args.definition).read_text(encoding="utf-8"))
    except OSError as exc:
        print(f"tidemark replay: cannot read {args.definition}: {exc.strerror}", file=sys.stderr)
        return 2
    except DefinitionError as exc:
        print(f"tidemark replay: {args.definition}: {exc}", file=sys.stderr)
        return 2
    try:
        progress = ReplayProgress(args.progress_every) if args.progress_every > 0 else None
        stats = replay_file(
            defn, args.input, args.output, eof_flush=args.eof_flush, engine=args.engine,
            progress=progress,
            arrival=arrival,
        )
    except OSError as exc:
        print(f"tidemark replay: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except EngineError as exc:
        print(f"tidemark replay: {exc}", file=sys.stderr)
        return 2
    print(f"tidemark replay: {stats.summary()}", file=sys.stderr)
    return 0
