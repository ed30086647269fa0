"""``python -m jobs.run JOB``: run the job's active definition version as a Spark streaming query.

Loads the version from the catalog, records (or, when launched by the lifecycle code, attaches
to) the run, builds the query and runs it until SIGTERM/SIGINT (graceful: the running batch
finishes and commits, then the run's end is recorded) or, with ``--until-idle``, until the
available input is processed. Every committed micro-batch is reported to the catalog.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", help="job name")
    parser.add_argument("--version", type=int, default=None,
                        help="definition version (default: the active one)")
    parser.add_argument("--until-idle", action="store_true",
                        help="process the available input, then stop")
    parser.add_argument("--trigger-interval", default="1 second",
                        help="micro-batch interval of a continuous run (default: 1 second)")
    parser.add_argument("--max-files-per-trigger", default=None,
                        help="files source: files per micro-batch (default from the definition, else 1)")
    parser.add_argument("--buckets", type=int, default=None,
                        help="engine path: state buckets (default: shuffle partitions)")
    parser.add_argument("--shuffle-partitions", type=int, default=None,
                        help="Spark shuffle partitions = state store partitions (fixed per checkpoint)")


def run(args: argparse.Namespace) -> int:
    from jobs.catalog import Catalog
    from jobs.catalog.ports import RuntimeCatalog
    from jobs.catalog.records import PaneRecord
    from jobs.config import Settings
    from jobs.definition import load_definition
    from jobs.lifecycle.attach import find_own_run, launched_by_lifecycle
    from jobs.lifecycle.process import this_host
    from jobs.spark.bookkeeping import CatalogReporter
    from jobs.spark.context import JobContext
    from jobs.spark.runner import JobRunner, RunOptions
    from jobs.spark.session import DEFAULT_SHUFFLE_PARTITIONS, build_session

    settings = Settings.from_env()
    catalog: RuntimeCatalog = Catalog(settings.db_url)
    version = catalog.version(args.job, args.version) if args.version else catalog.active_version(args.job)
    defn = load_definition(version.spec_json)
    if launched_by_lifecycle():
        found = find_own_run(catalog, args.job)
        if found is None:
            print(f"{args.job}: the launcher recorded no run for pid {os.getpid()}", file=sys.stderr)
            return 2
        run_info = found
    else:
        run_info = catalog.start_run(args.job, version.number, version.store_name, os.getpid(),
                                     this_host(), None, actor=f"cli:{args.job}")
    run_id = run_info.id
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    status, reason = "failed", "crashed before the query started"
    try:
        spark = build_session(
            settings, app_name=f"tidemark:{args.job}:v{version.number}", job=args.job,
            shuffle_partitions=args.shuffle_partitions or DEFAULT_SHUFFLE_PARTITIONS)
        catalog.set_spark_app_id(run_id, spark.sparkContext.applicationId)
        # a sign of life before the query starts: on a busy machine the JVM start and the
        # query's planning can outlast the supervisor's heartbeat timeout on their own
        catalog.heartbeat(run_id)
        ctx = JobContext.create(defn, settings, version=version.number, store=version.store_name)
        source_options = {}
        if args.max_files_per_trigger:
            source_options["maxFilesPerTrigger"] = str(args.max_files_per_trigger)

        def write_catalog_panes(batch_id: int, panes: list[dict[str, Any]]) -> None:
            catalog.write_panes(ctx.store, batch_id, [PaneRecord.from_json(p) for p in panes],
                                version=version.number)

        runner = JobRunner(
            spark, ctx,
            RunOptions(until_idle=args.until_idle, trigger_interval=args.trigger_interval,
                       source_options=source_options, buckets=args.buckets),
            reporter=CatalogReporter(catalog, run_id),
            catalog_writer=write_catalog_panes,
        )
        runner.stop_requested = stop
        runner.on_poll = lambda: catalog.heartbeat(run_id)
        print(f"{args.job} v{version.number}: store {ctx.store}, {ctx.plan.path} path"
              + (f" ({'; '.join(ctx.plan.reasons)})" if ctx.plan.reasons else ""), flush=True)
        outcome = runner.run()
        status = "stopped" if outcome == "stopped" else "succeeded"
        reason = "SIGTERM: stopped after the running micro-batch" if outcome == "stopped" else (
            "until-idle: available input processed")
        spark.stop()
        return 0
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"[:2000]
        print(reason, file=sys.stderr, flush=True)
        return 1
    finally:
        catalog.end_run(run_id, status, reason, actor=f"spark:{run_id}")  # type: ignore[arg-type]
        catalog.close()


def main(argv: Sequence[str] | None = None) -> int:
    """The entry point the supervisor launches: tidemark's logging configuration, and the CLI's
    error handler (one line in the job's log and a documented exit code, no traceback)."""
    from jobs.cli.errors import report
    from jobs.logsetup import configure_logging

    parser = argparse.ArgumentParser(prog="python -m jobs.run", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        configure_logging("job")
        return run(args)
    except Exception as exc:  # noqa: BLE001 - the one handler (jobs.cli.errors)
        return report(exc)


if __name__ == "__main__":
    sys.exit(main())
