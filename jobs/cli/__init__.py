"""The ``tidemark`` command line.

Each concern registers its own sub-commands from its own module (so the parts of the platform
do not edit one file): a module in ``COMMAND_MODULES`` exposes ``register(subparsers)`` and sets
``func`` on its parsers; ``func(args) -> int`` is the exit code. Modules import heavy libraries
(pyspark, sqlalchemy) inside their handlers, never at import time, so ``tidemark replay`` starts
fast.

Errors: a handler returns an exit code or raises one of tidemark's error types, and ``main``
turns every error into one line on stderr and a documented exit code (:mod:`jobs.cli.errors`);
no traceback reaches a user. Global options: ``--version``, ``--log-level`` (also
``TIDEMARK_LOG_LEVEL``; :mod:`jobs.logsetup`). Listings take ``--json`` (one JSON object a line,
or one object for a single record).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from jobs import __version__
from jobs.cli.errors import EXIT_INVALID, EXIT_OK, report
from jobs.config import ConfigError
from jobs.logsetup import LEVEL_ENV, LEVELS, LogSetupError, configure_logging

COMMAND_MODULES = (
    "jobs.cli.definition_cmds",  # validate, store-name
    "jobs.cli.replay_cmd",  # replay
    "jobs.cli.preview_cmd",  # preview
    "jobs.cli.catalog_cmds",  # db, job, audit, user
    "jobs.cli.runtime_cmds",  # run, state
    "jobs.cli.lifecycle_cmds",  # supervise, migrate, rollback, airflow
    "jobs.cli.kafka_cmds",  # kafka sample, kafka check-retention
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidemark", description=__doc__.splitlines()[0],
        epilog="exit codes: 0 success, 1 error, 2 invalid definition or argument, 3 edit "
               "conflict, 4 permission refused, 5 not found, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"tidemark {__version__}")
    parser.add_argument("--log-level", type=str.upper, choices=LEVELS, default=None,
                        help=f"log level of this process and the jobs it starts (default: "
                             f"{LEVEL_ENV} or INFO)")
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
    args = parser.parse_args(argv)  # a usage error exits 2 with argparse's message
    try:
        if args.log_level:
            os.environ[LEVEL_ENV] = args.log_level  # the jobs and tasks this process starts
        configure_logging("cli", args.log_level)
    except (LogSetupError, ConfigError) as exc:
        print(f"tidemark: {exc}", file=sys.stderr)
        return EXIT_INVALID
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # `tidemark job show | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return EXIT_OK
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the one handler, see errors.py
        return report(exc)
    return code


if __name__ == "__main__":
    sys.exit(main())
