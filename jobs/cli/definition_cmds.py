"""``tidemark validate`` and ``tidemark store-name``: the definition format from the shell.

Exit codes: 0 valid, 2 invalid definition (every error printed to stderr, one ``field:
message`` a line, so scripts and editors can point at fields), 1 for anything else (a file that
cannot be read).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_INVALID = 2
EXIT_ERROR = 1


def register(subparsers: Any) -> None:
    validate = subparsers.add_parser(
        "validate", help="check a definition; print its canonical JSON",
        description="Validate a window definition (YAML or JSON). Prints the canonical JSON on "
                    "success (exit 0) or every error as 'field: message' (exit 2).",
    )
    validate.add_argument("definition", help="definition file (YAML or JSON), or - for stdin")
    validate.add_argument("--pretty", action="store_true", help="indent the canonical JSON")
    validate.add_argument(
        "--summary", action="store_true",
        help="also print spec hash and state-store name to stderr",
    )
    validate.set_defaults(func=run_validate)

    store = subparsers.add_parser(
        "store-name", help="print the state-store name of a definition",
        description="Print the state-store (checkpoint directory) name of a definition.",
    )
    store.add_argument("definition", help="definition file (YAML or JSON), or - for stdin")
    store.set_defaults(func=run_store_name)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    return Path(path).read_text(encoding="utf-8")


def _load(args: argparse.Namespace) -> Any:
    from jobs.definition import DefinitionError, load_definition

    try:
        text = _read(args.definition)
    except OSError as exc:
        print(f"tidemark: cannot read {args.definition}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except UnicodeDecodeError:
        print(f"tidemark: {args.definition} is not UTF-8 text", file=sys.stderr)
        return EXIT_ERROR
    try:
        return load_definition(text)
    except DefinitionError as exc:
        print(f"{args.definition}: invalid definition ({len(exc.errors)} "
              f"error{'s' if len(exc.errors) != 1 else ''})", file=sys.stderr)
        for line in exc.lines():
            print(f"  {line}", file=sys.stderr)
        return EXIT_INVALID


def run_validate(args: argparse.Namespace) -> int:
    from jobs.definition import Definition, spec_hash, store_name, to_canonical

    defn = _load(args)
    if not isinstance(defn, Definition):
        return int(defn)
    canonical = to_canonical(defn)
    if args.pretty:
        print(json.dumps(canonical, sort_keys=True, indent=2, ensure_ascii=False))
    else:
        print(json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    if args.summary:
        print(f"spec_hash: {spec_hash(defn)}", file=sys.stderr)
        print(f"store_name: {store_name(defn)}", file=sys.stderr)
    return 0


def run_store_name(args: argparse.Namespace) -> int:
    from jobs.definition import Definition, store_name

    defn = _load(args)
    if not isinstance(defn, Definition):
        return int(defn)
    print(store_name(defn))
    return 0
