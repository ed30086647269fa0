"""`make demo-check`: a scripted tour that drives the running demo and fails loudly.

It talks to the demo only the way a user's tools would: over HTTP to the UI and Airflow, through
the catalog service (what the UI reads and writes) and the operating system (to kill a job
process). Each step has a bound, and the whole tour a budget; a step that does not happen in
time fails the tour with what was last seen and a short diagnosis (job states, recent audit
events, the tail of the job's log), so a broken demo is caught by CI rather than by the next
person who tries it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from jobs.catalog import Catalog
from jobs.config import Settings

T = TypeVar("T")
ACTOR = "demo-check"
KAFKA_JOB = "page_views"
"""The example job that reads from and writes to the demo's Kafka broker."""
SPECS = Path(__file__).resolve().parent / "specs"
STATE_FILE = "demo.json"
"""Written by the launcher into ``TIDEMARK_HOME``: the URLs and pid of the running demo."""
DEFAULT_BUDGET_S = 18 * 60


class TourFailed(RuntimeError):
    def __init__(self, message: str, job: str | None = None) -> None:
        super().__init__(message)
        self.job = job


@dataclass
class Tour:
    """The bounds of one tour: each step's own bound (times ``scale``), never past the budget."""

    cat: Catalog
    scale: float = 1.0
    budget_s: float = DEFAULT_BUDGET_S
    started: float = field(default_factory=time.monotonic)
    passed: list[str] = field(default_factory=list)

    def step(self, name: str, probe: Callable[[], T | None], bound_s: float, *,
             job: str | None = None, poll_s: float = 3.0) -> T:
        began = time.monotonic()
        remaining = self.budget_s - (began - self.started)
        timeout = min(bound_s * self.scale, max(remaining, 0.0))
        last: object = None
        while True:
            try:
                value = probe()
            except Exception as exc:  # a catalog busy moment is not a failure; a timeout is
                value, last = None, exc
            if value:
                print(f"  ok   {name} ({time.monotonic() - began:.0f} s)", flush=True)
                self.passed.append(name)
                return value
            if time.monotonic() - began >= timeout:
                break
            time.sleep(poll_s)
        why = "the tour's budget ran out" if timeout < bound_s * self.scale else "did not happen"
        raise TourFailed(f"{name}: {why} within {timeout:.0f} s (last error: {last!r})", job)


def post_json(url: str, body: dict[str, Any], *, token: str | None = None) -> Any:
    return _get_json(url, token=token, body=body)


def _get_json(url: str, *, token: str | None = None, body: dict[str, Any] | None = None,
              timeout: float = 10.0) -> Any:
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        raw = resp.read()
    return json.loads(raw) if raw.strip().startswith((b"{", b"[")) else raw.decode()


def read_state(settings: Settings) -> dict[str, Any] | None:
    path = settings.home / STATE_FILE
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state


def airflow_password(settings: Settings, user: str) -> str:
    try:
        stored = json.loads((settings.airflow_home / "simple_auth_manager_passwords.json").read_text())
        return str(stored.get(user, "admin"))
    except (OSError, ValueError):
        return "admin"


def _dags_active(airflow_url: str, settings: Settings) -> bool:
    user = settings.value("TIDEMARK_AIRFLOW_USER") or "admin"
    token = _get_json(f"{airflow_url}/auth/token",
                      body={"username": user, "password": airflow_password(settings, user)})
    dags = _get_json(f"{airflow_url}/api/v2/dags?dag_id_pattern=tidemark",
                     token=token["access_token"])["dags"]
    active = {d["dag_id"] for d in dags if not d.get("is_paused")}
    return {"tidemark_supervisor", "tidemark_migration"} <= active


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_tour(settings: Settings, *, scale: float = 1.0, budget_s: float = DEFAULT_BUDGET_S) -> int:
    """Run every step; ``scale`` stretches each step's bound (slow machines), ``budget_s``
    bounds the whole tour. Returns the process exit code."""
    print(f"demo-check against {settings.db_url}", flush=True)
    state = read_state(settings)
    if state is None:
        print(f"  FAIL no running demo under TIDEMARK_HOME={settings.home} ({STATE_FILE} is "
              "missing): start `make demo` first, with the same TIDEMARK_HOME, or run "
              "scripts/demo-ci.sh, which starts a demo of its own, tours it and stops it",
              file=sys.stderr)
        return 1
    if not _alive(int(state.get("pid", 0))):
        print(f"  FAIL the demo that wrote {settings.home / STATE_FILE} (pid {state.get('pid')}) "
              "is not running any more: start `make demo` again", file=sys.stderr)
        return 1
    cat = Catalog(settings.db_url)
    tour = Tour(cat, scale=scale, budget_s=budget_s)
    try:
        _tour(tour, settings, state)
    except TourFailed as exc:
        print(f"  FAIL {exc}", file=sys.stderr, flush=True)
        print(diagnose(cat, exc.job), file=sys.stderr, flush=True)
        return 1
    finally:
        cat.close()
    print(f"demo-check: all {len(tour.passed)} steps happened in "
          f"{time.monotonic() - tour.started:.0f} s", flush=True)
    return 0


def _tour(tour: Tour, settings: Settings, state: dict[str, Any]) -> None:
    cat = tour.cat
    jobs = [p.stem for p in sorted(SPECS.glob("*.yaml"))]
    ui, airflow = str(state["ui_url"]), str(state["airflow_url"])
    tour.step(f"the UI answers at {ui}",
              lambda: _get_json(f"{ui}/_stcore/health") == "ok", 120)
    tour.step(f"Airflow is healthy at {airflow}",
              lambda: all(v.get("status") == "healthy"
                          for v in _get_json(f"{airflow}/api/v2/monitor/health").values()
                          if isinstance(v, dict)), 180)
    tour.step("the supervisor and migration DAGs are active",
              lambda: _dags_active(airflow, settings), 180)
    tour.step("the example jobs are in the catalog",
              lambda: {j.name for j in cat.jobs()} >= set(jobs), 60)
    for name in jobs:
        tour.step(f"{name}: a run is live", partial(cat.active_runs, name), 240, job=name)
    for name in jobs:
        tour.step(f"{name}: micro-batches are recorded", partial(cat.progress, name, limit=1),
                  360, job=name)
        tour.step(f"{name}: recovery snapshots are recorded",
                  partial(cat.snapshots, name), 60, job=name)
    for name in jobs:
        if name == KAFKA_JOB:  # its panes go to a topic, not to the catalog
            continue
        tour.step(f"{name}: panes are emitted", partial(cat.panes, name, limit=1), 300, job=name)
    kafka_panes(tour, state)
    tour.step("team_scores: EARLY, ON_TIME and LATE panes",
              lambda: {p.pane.timing for p in cat.panes("team_scores")} >= {"EARLY", "ON_TIME", "LATE"},
              360, job="team_scores")
    tour.step("team_scores: late records are counted (accepted and dropped)",
              lambda: _late_totals(cat, "team_scores") >= (1, 1), 240, job="team_scores")
    tour.step("malformed records are dead-lettered",
              lambda: any(cat.dead_letters(n) for n in jobs), 240)

    # a definition change that needs a new store: the windows grow by one minute. The edit
    # starts from the latest stored version (its source path is the one the demo seeded), and
    # a size never used before, so a second tour against the same demo migrates again.
    latest = cat.versions("team_scores")[-1]
    spec = json.loads(latest.spec_json)
    minutes = int(spec["window"]["size"]) // 60_000 + 1
    spec["window"]["size"] = f"{minutes}m"
    saved = cat.save_version("team_scores", spec, ACTOR, base_version=latest.number,
                             note=f"demo-check: {minutes} minute windows")
    if saved.kind != "new_store":
        raise TourFailed(f"changing window.size should need a new store, got {saved.kind}",
                         "team_scores")
    cat.activate("team_scores", saved.version.number, ACTOR, note="demo-check migration")
    print(f"  ..   saved and activated team_scores v{saved.version.number} "
          f"({minutes} minute windows, store {saved.version.store_name})", flush=True)
    migration = tour.step(
        "team_scores: the change starts a migration",
        lambda: [m for m in cat.migrations("team_scores") if m.to_version == saved.version.number],
        60, job="team_scores",
    )[0]
    done = tour.step(
        "team_scores: the migration finishes (replay, catch-up, cut over, retire)",
        lambda: (lambda m: m if m.finished else None)(cat.migration(migration.id)),
        600, job="team_scores", poll_s=5.0,
    )
    if done.state != "done":
        raise TourFailed(f"migration {done.id} ended {done.state}: {done.error}", "team_scores")
    tour.step(f"team_scores: v{saved.version.number} is active and has a live run",
              lambda: cat.job("team_scores").active_version == saved.version.number
              and [r for r in cat.active_runs("team_scores") if r.version == saved.version.number],
              120, job="team_scores")
    tour.step(f"team_scores: v{saved.version.number} emits panes",
              lambda: cat.panes("team_scores", version=saved.version.number, limit=1), 300,
              job="team_scores")

    # a crash: kill the page_views driver and wait for the supervisor to restart it
    victim = tour.step("page_views: a run to kill", lambda: cat.active_runs("page_views"), 120,
                       job="page_views")[0]
    if victim.pid is None:
        raise TourFailed(f"page_views run {victim.id} has no pid recorded", "page_views")
    os.kill(victim.pid, signal.SIGKILL)
    print(f"  ..   killed page_views run {victim.id} (pid {victim.pid}) with SIGKILL", flush=True)
    tour.step("page_views: the supervisor records the crash",
              lambda: cat.run(victim.id).status not in ("running",), 180, job="page_views")
    restarted = tour.step(
        "page_views: the supervisor restarts the killed job",
        lambda: [r for r in cat.active_runs("page_views") if r.id != victim.id], 300,
        job="page_views")[0]
    tour.step("page_views: the restarted run commits micro-batches",
              lambda: [s for s in cat.snapshots("page_views") if s.run_id == restarted.id], 360,
              job="page_views")


def kafka_panes(tour: Tour, state: dict[str, Any]) -> None:
    """``page_views`` read its events from Kafka and sent its panes to a topic: read them back
    (each message's key and headers checked against its value, jobs/demo/kafka.py) and check
    they are what the definition promises: final panes of 5-minute windows counting views."""
    from jobs.demo.kafka import PANES_TOPIC, read_panes

    bootstrap = str(state.get("kafka_bootstrap") or "")
    if not bootstrap:
        raise TourFailed(f"{STATE_FILE} names no Kafka broker", KAFKA_JOB)

    def panes() -> list[dict[str, Any]]:
        return [r for r in read_panes(bootstrap) if r["job"] == KAFKA_JOB]

    rows = tour.step(f"{KAFKA_JOB}: panes read back from the topic {PANES_TOPIC}", panes, 360,
                     job=KAFKA_JOB)
    store = tour.cat.active_version(KAFKA_JOB).store_name
    wrong = [r for r in rows if r["store"] != store or r["timing"] != "ON_TIME"
             or r["window_end"] - r["window_start"] != 300_000
             or json.loads(r["values"]).get("views", 0) < 1]
    if wrong:
        raise TourFailed(f"{KAFKA_JOB}: {len(wrong)} of {len(rows)} pane messages are not final "
                         f"5-minute view counts of store {store}, e.g. {wrong[0]}", KAFKA_JOB)
    print(f"  ..   {len(rows)} pane messages, {len({r['key'] for r in rows})} pages", flush=True)


def _late_totals(cat: Catalog, job: str) -> tuple[int, int]:
    counts = cat.late_counts(job)
    return sum(c.accepted for c in counts), sum(c.dropped for c in counts)


def diagnose(cat: Catalog, job: str | None) -> str:
    """What a person would look at first: job states, recent audit events, the job's log tail."""
    out = ["--- diagnosis"]
    try:
        for o in cat.jobs_overview():
            run = o.run
            out.append(
                f"job {o.job.name}: {o.job.status} (desired {o.job.desired_state}, "
                f"v{o.job.active_version}, restarts {o.job.restart_count}"
                f"{', failed: ' + o.job.failed_reason if o.job.failed_reason else ''}); "
                f"run {run.id if run else None} pid {run.pid if run else None}; "
                f"last batch {o.last_batch_id} at {o.last_batch_at}; watermark lag "
                f"{o.watermark_lag_ms} ms; late {o.late_accepted}/{o.late_dropped}; "
                f"dead letters {o.dead_letters}")
        out.append("recent audit events (newest first):")
        for e in cat.audit(job=job, limit=12):
            out.append(f"  {e.at:%H:%M:%S} {e.actor} {e.action} {e.job or ''} {e.outcome}: "
                       f"{e.message[:300]}")
        if job is not None:
            for m in cat.migrations(job)[:2]:
                out.append(f"migration {m.id}: v{m.from_version} -> v{m.to_version} {m.state} "
                           f"{m.error or ''}")
            runs = cat.runs(job)
            logs = [r.log_path for r in runs if r.log_path][:2]  # newest first
            for log in logs:
                out.append(f"tail of {log}:")
                try:
                    lines = Path(log).read_text(errors="replace").splitlines()[-25:]
                except OSError as exc:
                    lines = [f"(unreadable: {exc})"]
                out += [f"  {line[:400]}" for line in lines]
    except Exception as exc:  # the diagnosis must never hide the failure itself
        out.append(f"(diagnosis incomplete: {exc!r})")
    return "\n".join(out)
