"""``tidemark supervise|migrate|rollback|airflow``: the orchestration from the shell.

The same functions the Airflow tasks call, for a machine without Airflow or for an operator
in a hurry: ``supervise`` runs reconcile passes, ``migrate`` drives migrations in the foreground
(each step is recorded, so the Airflow DAG or another ``migrate`` can take over after a crash),
``rollback`` re-activates an earlier version and switches to it, ``airflow`` runs the local
Airflow of ``make demo``. Exit codes: 0 success, 1 error, 3 the retention guard refused a
migration from Kafka (``--accept-partial-rebuild`` goes on), 5 no such job or version
(:mod:`jobs.cli.errors`); ``migrate`` and ``rollback`` print their progress to stderr.
"""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from typing import Any

from jobs.cli.errors import EXIT_INVALID
from jobs.lifecycle.retention_gate import REFUSAL

EXIT_REFUSED = 3
"""``migrate``: the retention guard refused the migration (see --accept-partial-rebuild)."""


def register(sub: Any) -> None:
    p = sub.add_parser("supervise", help="reconcile desired and actual runs (one pass or a loop)")
    p.add_argument("--job", help="only this job")
    p.add_argument("--every", type=float, default=None, metavar="SECONDS",
                   help="repeat every SECONDS until interrupted (default: one pass)")
    p.set_defaults(func=_supervise)

    p = sub.add_parser("migrate", help="switch a job to a version (migrating its store) in the foreground")
    p.add_argument("job", nargs="?")
    p.add_argument("version", nargs="?", type=int)
    p.add_argument("--resume", type=int, metavar="MIGRATION", help="resume (or retry) this migration")
    p.add_argument("--timeout", type=float, default=6 * 3600, help="seconds (default 6 h)")
    p.add_argument("--as", dest="actor", default=None, help="default: TIDEMARK_USER")
    p.add_argument("--accept-partial-rebuild", action="store_true",
                   help="go on when retention already deleted Kafka input the old store read "
                        "(the new results are complete only from the earliest retained offsets)")
    p.set_defaults(func=_migrate)

    p = sub.add_parser("rollback", help="re-activate an earlier version; it resumes its checkpoint")
    p.add_argument("job")
    p.add_argument("version", type=int)
    p.add_argument("--no-wait", action="store_true", help="plan only; let Airflow drive it")
    p.add_argument("--timeout", type=float, default=6 * 3600)
    p.add_argument("--as", dest="actor", default=None, help="default: TIDEMARK_USER")
    p.set_defaults(func=_rollback)

    p = sub.add_parser("airflow", help="run the local Airflow (api-server, scheduler, dag-processor, triggerer)")
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--print-env", action="store_true")
    p.add_argument("--check", action="store_true", help="start, wait until healthy, stop")
    p.set_defaults(func=_airflow)


def _actor(args: argparse.Namespace) -> str:
    from jobs.config import Settings

    name = args.actor or Settings.from_env().value("TIDEMARK_USER")
    return str(name) if name else f"cli:{getpass.getuser()}"


def _supervise(args: argparse.Namespace) -> int:
    from jobs.lifecycle.wiring import open_lifecycle

    with open_lifecycle(actor=f"cli:{getpass.getuser()}") as lc:
        while True:
            report = lc.supervisor.reconcile([args.job] if args.job else None)
            for line in report.lines():
                print(line, flush=True)
            if args.every is None:
                return 1 if report.errors else 0
            time.sleep(args.every)


class MigrationProgress:
    """Prints a migration's progress to stderr (stdout keeps the result): every state change at
    once, and while a state lasts a line every ``every_s`` seconds with the positions of the
    new and the old run."""

    def __init__(self, every_s: float = 30.0, clock: Any = time.monotonic,
                 stream: Any = None) -> None:
        self.every_s = every_s
        self.clock = clock
        self.stream = stream
        self._state: str | None = None
        self._since = 0.0
        self._last = 0.0

    def __call__(self, m: Any) -> None:
        from jobs.timeutil import ms_to_iso

        now = self.clock()
        changed = m.state != self._state
        if not changed and now - self._last < self.every_s:
            return
        if changed:
            self._state, self._since = m.state, now
        self._last = now

        def wm(ms: int | None) -> str:
            return "-" if ms is None else ms_to_iso(ms)

        files = (f", input files {m.replayed_files}/{m.total_files}"
                 if m.total_files else "")
        took = "" if changed else f" for {now - self._since:.0f}s"
        print(f"migration {m.id} of {m.job}: {m.state}{took} (watermark new "
              f"{wm(m.new_watermark)}, old {wm(m.old_watermark)}{files})",
              file=self.stream or sys.stderr, flush=True)


def _drive(lc: Any, mid: int, timeout: float) -> int:
    m = lc.migrator.drive(mid, timeout_s=timeout, poll_s=2.0, progress=MigrationProgress())
    for step in m.steps:
        print(f"{step.at.isoformat()} {step.state}: {step.message}")
    print(f"migration {m.id} of {m.job}: {m.state}" + (f" ({m.error})" if m.error else ""))
    if m.state == "failed" and (m.error or "").startswith(REFUSAL):
        print(f"tidemark: {m.error}", file=sys.stderr)
        return EXIT_REFUSED
    return 0 if m.state == "done" else 1


def _migrate(args: argparse.Namespace) -> int:
    from jobs.lifecycle.tasks import plan_migrations
    from jobs.lifecycle.wiring import open_lifecycle

    if args.resume is None and (args.job is None or args.version is None):
        print("tidemark migrate: give JOB VERSION, or --resume MIGRATION", file=sys.stderr)
        return EXIT_INVALID
    conf: dict[str, Any] = {"actor": _actor(args)}
    if args.accept_partial_rebuild:
        conf["accept_partial_rebuild"] = True
    if args.resume is not None:
        conf["migration_id"] = args.resume
    else:
        conf.update({"job": args.job, "version": args.version})
    ids = plan_migrations([], conf)
    with open_lifecycle(actor="airflow:migration") as lc:
        if args.resume is not None:
            lc.migrator.start_replay(args.resume, retry_failed=True)
        if not ids:
            print("no migration needed (same store: restarted in place)")
            return 0
        return max(_drive(lc, mid, args.timeout) for mid in ids)


def _rollback(args: argparse.Namespace) -> int:
    from jobs.lifecycle.migration import rollback
    from jobs.lifecycle.wiring import open_lifecycle

    with open_lifecycle(actor="airflow:migration") as lc:
        result = rollback(lc.migrator, args.job, args.version, actor=_actor(args))
        print(f"{result.job} v{result.version}: {result.action} ({result.detail})")
        if result.migration_id is None or args.no_wait:
            return 0
        return _drive(lc, result.migration_id, args.timeout)


def _airflow(args: argparse.Namespace) -> int:
    from jobs.lifecycle.airflow_local import main

    argv = []
    if args.port:
        argv += ["--port", str(args.port)]
    if args.print_env:
        argv.append("--print-env")
    if args.check:
        argv.append("--check")
    return main(argv)
