"""The ``tidemark`` command line.

Each concern registers its own sub-commands from its own module (so the parts of the platform
do not edit one file): a module in ``COMMAND_MODULES`` exposes ``register(subparsers)`` and sets
``func`` on its parsers; ``func(args) -> int`` is the exit code. Modules import heavy libraries
(pyspark, sqlalchemy) inside their handlers, never at import time, so ``tidemark replay`` starts
fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_MODULES = (
    "jobs.cli.definition_cmds",  # validate, store-name
    "jobs.cli.replay_cmd",  # replay
    "jobs.cli.catalog_cmds",  # db, job, audit, user
    "jobs.cli.runtime_cmds",  # run, state
    "jobs.cli.lifecycle_cmds",  # supervise, migrate, rollback, airflow
    "jobs.cli.kafka_cmds",  # kafka sample, kafka check-retention
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidemark", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that part of the platform is not installed yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # `tidemark job show | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
