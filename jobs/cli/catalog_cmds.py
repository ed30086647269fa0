"""``tidemark db|job|audit|user``: the catalog from the shell.

Every command takes ``--db URL`` (default ``TIDEMARK_DB_URL`` or the SQLite file under
``TIDEMARK_HOME``) and changes take ``--as USER`` (default ``TIDEMARK_USER``). With ``--as`` the
change is recorded under that user and that user's role is checked; without it the actor is
``cli:<login name>`` and no role is checked -- the CLI is a local administration tool, and who
can open the catalog database can change it anyway, so roles here guard against mistakes, not
attackers.

Exit codes (:mod:`jobs.cli.errors`): 0 success, 1 error, 2 invalid definition or argument (each
field error printed as ``field: message``), 3 edit conflict, 4 permission refused, 5 not found.
Every listing takes ``--json``.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.cli.errors import EXIT_ERROR, EXIT_INVALID

if TYPE_CHECKING:
    from jobs.catalog import Catalog

Handler = Callable[["Catalog", argparse.Namespace, str], int]


def register(subparsers: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="URL", help="catalog URL (default: TIDEMARK_DB_URL or "
                        "the SQLite file under TIDEMARK_HOME)")
    common.add_argument("--as", dest="actor", metavar="USER",
                        default=None,
                        help="act as this catalog user (role checked; default TIDEMARK_USER)")

    _register_db(subparsers, common)
    _register_job(subparsers, common)
    _register_audit(subparsers, common)
    _register_user(subparsers, common)


# ---------------------------------------------------------------- parsers


def _register_db(subparsers: Any, common: argparse.ArgumentParser) -> None:
    db = subparsers.add_parser("db", help="catalog schema (Alembic revisions)")
    sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    up = sub.add_parser("upgrade", parents=[common],
                        help="upgrade the catalog schema to a revision (Alembic)")
    up.add_argument("revision", nargs="?", default="head")
    up.set_defaults(func=_db_upgrade)
    down = sub.add_parser("downgrade", parents=[common],
                          help="downgrade the catalog schema (Alembic)")
    down.add_argument("revision", help="target revision, e.g. 0001, -1 or base")
    down.set_defaults(func=_db_downgrade)
    cur = sub.add_parser("current", parents=[common], help="print the current schema revision")
    cur.add_argument("--json", action="store_true", help="machine-readable output")
    cur.set_defaults(func=_db_current)
    chk = sub.add_parser("check", parents=[common],
                         help="compare the models with the upgraded schema (exit 1 on drift)")
    chk.add_argument("--json", action="store_true", help="machine-readable output")
    chk.set_defaults(func=_db_check)


def _register_job(subparsers: Any, common: argparse.ArgumentParser) -> None:
    job = subparsers.add_parser("job", help="jobs and their definition versions")
    sub = job.add_subparsers(dest="job_command", required=True, metavar="ACTION")

    p = sub.add_parser("create", parents=[common], help="create a job from a definition file")
    p.add_argument("definition", help="YAML or JSON file, or - for stdin")
    p.add_argument("--note", default="", help="change note")
    p.set_defaults(func=_with_catalog(_job_create, "edit"))

    p = sub.add_parser("edit", parents=[common], help="save a new version of a job")
    p.add_argument("name")
    p.add_argument("definition", help="YAML or JSON file, or - for stdin")
    p.add_argument("--base", type=int, required=True, metavar="N",
                   help="the version your edit is based on (refused if a newer one exists)")
    p.add_argument("--note", default="", help="change note")
    p.set_defaults(func=_with_catalog(_job_edit, "edit"))

    p = sub.add_parser("show", parents=[common], help="a job's status and definition")
    p.add_argument("name")
    p.add_argument("--version", type=int, help="show this version (default: the active one)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_with_catalog(_job_show, "read"))

    p = sub.add_parser("history", parents=[common], help="a job's versions")
    p.add_argument("name")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_with_catalog(_job_history, "read"))

    p = sub.add_parser("diff", parents=[common], help="what changed between two versions")
    p.add_argument("name")
    p.add_argument("old", type=int)
    p.add_argument("new", type=int)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_with_catalog(_job_diff, "read"))

    p = sub.add_parser("activate", parents=[common],
                       help="make a version the active one (also: roll back)")
    p.add_argument("name")
    p.add_argument("version", type=int)
    p.add_argument("--mode", choices=["auto", "immediate", "migrate"], default="auto",
                   help="auto: switch now unless the version needs a new store, then plan a "
                        "migration (default)")
    p.add_argument("--note", default="")
    p.set_defaults(func=_with_catalog(_job_activate, "operate"))

    for name, state in (("start", "running"), ("stop", "stopped")):
        p = sub.add_parser(name, parents=[common], help=f"set the desired state to {state}")
        p.add_argument("name")
        p.add_argument("--reason", default="")
        p.set_defaults(func=_with_catalog(_job_state, "operate"), state=state)

    p = sub.add_parser("restart", parents=[common], help="ask the supervisor for a restart")
    p.add_argument("name")
    p.add_argument("--reason", default="")
    p.set_defaults(func=_with_catalog(_job_restart, "operate"))

    p = sub.add_parser("list", parents=[common], help="all jobs")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_with_catalog(_job_list, "read"))


def _register_audit(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser("audit", parents=[common], help="the audit timeline, newest first")
    p.add_argument("--job")
    p.add_argument("--actor")
    p.add_argument("--action")
    p.add_argument("--outcome", choices=["ok", "refused", "failed"])
    p.add_argument("--since", metavar="TIME", help="ISO-8601 UTC or epoch ms")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.set_defaults(func=_with_catalog(_audit, "read"))


def _register_user(subparsers: Any, common: argparse.ArgumentParser) -> None:
    user = subparsers.add_parser("user", help="catalog users and roles")
    sub = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    p = sub.add_parser("add", parents=[common], help="add a user")
    p.add_argument("name")
    p.add_argument("--role", required=True, choices=["viewer", "editor", "operator", "admin"])
    p.add_argument("--password-stdin", action="store_true",
                   help="read the password from the first line of stdin (else prompt)")
    p.set_defaults(func=_with_catalog(_user_add, "admin"))
    p = sub.add_parser("list", parents=[common], help="list users")
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.set_defaults(func=_with_catalog(_user_list, "read"))


# ---------------------------------------------------------------- plumbing


def _url(args: argparse.Namespace) -> str:
    from jobs.config import Settings

    return str(args.db) if args.db else Settings.from_env().db_url


def _with_catalog(handler: Handler, action: str) -> Callable[[argparse.Namespace], int]:
    """Open the catalog, check ``--as``'s role for ``action``, run. A ``CatalogError`` reaches
    ``main``'s handler, which prints it and maps its code to the exit code."""

    def run(args: argparse.Namespace) -> int:
        from jobs.catalog import Catalog
        from jobs.config import Settings

        name = args.actor or Settings.from_env().value("TIDEMARK_USER")
        with Catalog(_url(args)) as cat:
            if name:
                cat.require(name, action)  # type: ignore[arg-type]
                actor = str(name)
            else:
                actor = f"cli:{getpass.getuser()}"
            return handler(cat, args, actor)

    return run


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    return Path(path).read_text(encoding="utf-8")


def _read_definition(path: str) -> str | None:
    try:
        return _read(path)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"tidemark: cannot read {path}: {exc}", file=sys.stderr)
        return None


def _time(dt: Any) -> str:
    return f"{dt:%Y-%m-%d %H:%M:%S}Z" if dt is not None else "-"


def _table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


# ---------------------------------------------------------------- db


def _db_upgrade(args: argparse.Namespace) -> int:
    from jobs.catalog import schema

    url = _url(args)
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    schema.upgrade(url, args.revision)
    print(f"catalog at revision {schema.current_revision(url)}")
    return 0


def _db_downgrade(args: argparse.Namespace) -> int:
    from jobs.catalog import schema

    url = _url(args)
    schema.downgrade(url, args.revision)
    print(f"catalog at revision {schema.current_revision(url) or '(empty)'}")
    return 0


def _db_current(args: argparse.Namespace) -> int:
    from jobs.catalog import schema

    current = schema.current_revision(_url(args))
    head = schema.head_revision()
    if args.json:
        print(json.dumps({"current": current, "head": head, "at_head": current == head},
                         sort_keys=True))
        return 0
    print(f"{current or '(empty)'}{' (head)' if current == head else f' (head is {head})'}")
    return 0


def _db_check(args: argparse.Namespace) -> int:
    from jobs.catalog import schema

    diffs = schema.schema_diffs(_url(args))
    if args.json:
        print(json.dumps({"match": not diffs, "differences": [str(d) for d in diffs]},
                         sort_keys=True))
        return EXIT_ERROR if diffs else 0
    if diffs:
        print("the models and the upgraded schema differ (a revision is missing):",
              file=sys.stderr)
        for d in diffs:
            print(f"  {d}", file=sys.stderr)
        return EXIT_ERROR
    print("models match the migrations")
    return 0


# ---------------------------------------------------------------- job


def _job_create(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    text = _read_definition(args.definition)
    if text is None:
        return EXIT_ERROR
    v = cat.create_job(text, actor, note=args.note)
    print(f"created job {v.job} version 1 (store {v.store_name})")
    return 0


def _job_edit(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    text = _read_definition(args.definition)
    if text is None:
        return EXIT_ERROR
    r = cat.save_version(args.name, text, actor, base_version=args.base, note=args.note)
    if not r.created:
        print(f"no change: version {r.version.number} already has this definition")
        return 0
    print(f"saved {args.name} version {r.version.number} ({r.kind.replace('_', ' ')}; "
          f"store {r.version.store_name})")
    for path, old, new in r.changes:
        print(f"  {path}: {json.dumps(old)} -> {json.dumps(new)}")
    print(f"activate it with: tidemark job activate {args.name} {r.version.number}")
    return 0


def _job_show(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    job = cat.job(args.name)
    version = cat.version(args.name, args.version or job.active_version or job.latest_version)
    if args.json:
        print(json.dumps({
            "name": job.name, "status": job.status, "desired_state": job.desired_state,
            "active_version": job.active_version, "latest_version": job.latest_version,
            "store": version.store_name, "version": version.number, "spec": version.spec,
            "failed_reason": job.failed_reason, "restart_count": job.restart_count,
        }, indent=2, sort_keys=True))
        return 0
    print(f"job:            {job.name}")
    print(f"status:         {job.status} (desired {job.desired_state})")
    if job.failed_reason:
        print(f"failed:         {job.failed_reason} at {_time(job.failed_at)}")
    print(f"active version: {job.active_version} (latest {job.latest_version})")
    print(f"restarts:       {job.restart_count}")
    print(f"version {version.number}:      {version.store_name}, by {version.author} at "
          f"{_time(version.created_at)}")
    print(json.dumps(version.spec, indent=2, sort_keys=True))
    return 0


def _job_history(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    job = cat.job(args.name)
    versions = cat.versions(args.name)
    if args.json:
        for v in versions:
            print(json.dumps({
                "version": v.number, "created_at": v.created_at.isoformat(), "author": v.author,
                "compatibility": v.compatibility, "store": v.store_name, "note": v.note,
                "spec_hash": v.spec_hash, "active": v.number == job.active_version,
            }, sort_keys=True))
        return 0
    _table(
        [[("*" if v.number == job.active_version else "") + str(v.number), _time(v.created_at),
          v.author, v.compatibility, v.store_name, v.note] for v in versions],
        ["VERSION", "CREATED", "AUTHOR", "CHANGE", "STORE", "NOTE"],
    )
    return 0


def _job_diff(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    d = cat.diff(args.name, args.old, args.new)
    if args.json:
        print(json.dumps({"job": args.name, "old": args.old, "new": args.new, "kind": d.kind,
                          "store": d.version.store_name,
                          "changes": [{"path": p, "old": o, "new": n} for p, o, n in d.changes]},
                         sort_keys=True))
        return 0
    print(f"{args.name} v{args.old} -> v{args.new}: {d.kind.replace('_', ' ')}")
    for path, old, new in d.changes:
        print(f"  {path}: {json.dumps(old)} -> {json.dumps(new)}")
    return 0


def _job_activate(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    job = cat.activate(args.name, args.version, actor, note=args.note, mode=args.mode)
    if job.active_version == args.version:
        print(f"{args.name}: version {args.version} is active")
        return 0
    pending = cat.migrations(args.name, unfinished=True)
    which = f" #{pending[0].id}" if pending else ""
    print(f"{args.name}: version {args.version} needs a new store; migration{which} planned "
          f"(version {job.active_version} stays active until the cut-over)")
    return 0


def _job_state(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    job = cat.set_desired_state(args.name, args.state, actor, reason=args.reason)
    print(f"{job.name}: desired state {job.desired_state} (status {job.status})")
    return 0


def _job_restart(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    cat.request_restart(args.name, actor, reason=args.reason)
    print(f"{args.name}: restart requested")
    return 0


def _job_list(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    jobs = cat.jobs()
    if args.json:
        for j in jobs:
            print(json.dumps({"name": j.name, "status": j.status, "desired_state": j.desired_state,
                              "active_version": j.active_version,
                              "latest_version": j.latest_version, "store": j.active_store},
                             sort_keys=True))
        return 0
    _table(
        [[j.name, j.status, str(j.active_version), str(j.latest_version), j.active_store or "-"]
         for j in jobs],
        ["JOB", "STATUS", "ACTIVE", "LATEST", "STORE"],
    )
    return 0


# ---------------------------------------------------------------- audit and users


def _audit(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    from jobs.timeutil import TimeParseError, ms_to_datetime, parse_instant

    since = None
    if args.since:
        try:
            since = ms_to_datetime(parse_instant(args.since))
        except TimeParseError as exc:
            print(f"tidemark: --since: {exc}", file=sys.stderr)
            return EXIT_INVALID
    events = cat.audit(job=args.job, actor=args.actor, action=args.action, outcome=args.outcome,
                       since=since, limit=args.limit)
    for e in events:
        if args.json:
            print(json.dumps({"id": e.id, "at": e.at.isoformat(), "actor": e.actor,
                              "action": e.action, "job": e.job, "version": e.version,
                              "outcome": e.outcome, "message": e.message, "diff": e.diff,
                              "data": e.data}, sort_keys=True))
            continue
        where = f"{e.job} v{e.version}" if e.version is not None else (e.job or "-")
        print(f"{_time(e.at)}  {e.outcome:<7} {e.actor:<20} {e.action:<18} {where}  {e.message}")
        for change in e.diff or []:
            print(f"    {change['path']}: {json.dumps(change['old'])} -> "
                  f"{json.dumps(change['new'])}")
    return 0


def _user_add(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"password for {args.name}: ")
        if getpass.getpass("again: ") != password:
            print("tidemark: the passwords differ", file=sys.stderr)
            return EXIT_INVALID
    user = cat.add_user(args.name, password, args.role, actor)
    print(f"added user {user.name} ({user.role})")
    return 0


def _user_list(cat: Catalog, args: argparse.Namespace, actor: str) -> int:
    if args.json:
        for u in cat.users():
            print(json.dumps({"name": u.name, "role": u.role, "disabled": u.disabled,
                              "created_at": u.created_at.isoformat()},
                             sort_keys=True))
        return 0
    _table([[u.name, u.role, "disabled" if u.disabled else "", _time(u.created_at)]
            for u in cat.users()], ["USER", "ROLE", "", "CREATED"])
    return 0
