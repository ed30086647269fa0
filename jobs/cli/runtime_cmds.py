"""``tidemark run JOB [--until-idle]`` and ``tidemark state JOB [--batch N]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: Any) -> None:
    from jobs.run import add_arguments, run

    p = sub.add_parser("run", help="run a job's active definition on Spark")
    add_arguments(p)
    p.set_defaults(func=run)

    s = sub.add_parser("state", help="open windows in a job's state store at a snapshot")
    s.add_argument("job")
    s.add_argument("--version", type=int, default=None, help="default: the active version")
    s.add_argument("--batch", type=int, default=None, help="committed batch id (default: latest)")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=state)


def state(args: argparse.Namespace) -> int:
    from jobs.catalog import Catalog
    from jobs.config import Settings
    from jobs.definition import load_definition
    from jobs.spark.context import JobContext
    from jobs.spark.errors import SparkRuntimeError
    from jobs.spark.inspect import open_windows
    from jobs.spark.session import build_session

    settings = Settings.from_env()
    with Catalog(settings.db_url) as catalog:
        version = catalog.version(args.job, args.version) if args.version else catalog.active_version(args.job)
    defn = load_definition(version.spec_json)
    ctx = JobContext.create(defn, settings, version=version.number, store=version.store_name)
    spark = build_session(settings, app_name=f"tidemark-state:{args.job}")
    try:
        batch, windows = open_windows(spark, ctx, args.batch)
    except SparkRuntimeError as exc:
        print(f"tidemark state: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    if args.json:
        for w in windows:
            print(json.dumps(w, sort_keys=True, default=str))
        return 0
    print(f"{args.job} v{version.number} store {ctx.store} at batch {batch}: "
          f"{len(windows)} open window(s)")
    for w in windows:
        rest = {k: v for k, v in w.items() if k not in ("key", "window_start", "window_end")}
        print(f"  key={json.dumps(w['key'])} [{w.get('window_start')}, {w.get('window_end')}) "
              f"{json.dumps(rest, sort_keys=True, default=str)}")
    return 0
