"""`make demo-check`: a scripted tour that drives the running demo and fails loudly.

It talks to the demo only the way a user's tools would: through the catalog service (what the
UI reads) and the operating system (to kill a job process). Each step has a bound; a step that
does not happen within it fails the tour with what was last seen, so a broken demo is caught
by CI rather than by the next person who tries it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml

from jobs.catalog import Catalog
from jobs.config import Settings

T = TypeVar("T")
ACTOR = "demo-check"
SPECS = Path(__file__).resolve().parent / "specs"


class TourFailed(RuntimeError):
    pass


def _bounded(step: str, probe: Callable[[], T | None], timeout_s: float, poll_s: float = 3.0) -> T:
    started = time.monotonic()
    last: object = None
    while time.monotonic() - started < timeout_s:
        try:
            value = probe()
        except Exception as exc:  # a catalog busy moment is not a failure; a timeout is
            value, last = None, exc
        if value:
            print(f"  ok   {step} ({time.monotonic() - started:.0f} s)", flush=True)
            return value
        time.sleep(poll_s)
    raise TourFailed(f"{step}: did not happen within {timeout_s:.0f} s (last seen: {last!r})")


def _probe(query: Callable[[str], T], job: str) -> Callable[[], T]:
    return lambda: query(job)


def run_tour(settings: Settings, *, scale: float = 1.0) -> int:
    """Run every step; ``scale`` stretches the bounds (slow machines)."""
    print(f"demo-check against {settings.db_url}", flush=True)
    cat = Catalog(settings.db_url)
    try:
        _tour(cat, scale)
    except TourFailed as exc:
        print(f"  FAIL {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        cat.close()
    print("demo-check: every step happened", flush=True)
    return 0


def _tour(cat: Catalog, scale: float) -> None:
    jobs = [p.stem for p in sorted(SPECS.glob("*.yaml"))]
    _bounded("the example jobs are in the catalog",
             lambda: all(any(j.name == n for j in cat.jobs()) for n in jobs), 60 * scale)
    for name in jobs:
        _bounded(f"{name}: a run is live", _probe(cat.active_runs, name), 300 * scale)
    for name in jobs:
        _bounded(f"{name}: panes are emitted", _probe(cat.panes, name), 300 * scale)
        _bounded(f"{name}: recovery snapshots are recorded", _probe(cat.snapshots, name),
                 120 * scale)
    _bounded("team_scores: late records are counted",
             lambda: [c for c in cat.late_counts("team_scores") if c.accepted or c.dropped],
             300 * scale)
    _bounded("team_scores: malformed records are dead-lettered",
             lambda: cat.dead_letters("team_scores"), 300 * scale)

    # a definition change that needs a new store: 2 minute windows become 3 minute windows
    latest = cat.versions("team_scores")[-1]
    spec = yaml.safe_load((SPECS / "team_scores.yaml").read_text(encoding="utf-8"))
    spec["window"]["size"] = "3m"
    saved = cat.save_version("team_scores", spec, ACTOR, base_version=latest.number,
                             note="demo-check: 3 minute windows")
    if saved.created and saved.kind != "new_store":
        raise TourFailed(f"changing window.size should need a new store, got {saved.kind}")
    cat.activate("team_scores", saved.version.number, ACTOR, note="demo-check migration")
    migration = _bounded(
        "team_scores: the change starts a migration",
        lambda: [m for m in cat.migrations("team_scores") if m.to_version == saved.version.number],
        180 * scale,
    )[0]
    done = _bounded(
        "team_scores: the migration finishes (replay, catch-up, cut over)",
        lambda: (lambda m: m if m.finished else None)(cat.migration(migration.id)),
        900 * scale, poll_s=5.0,
    )
    if done.state != "done":
        raise TourFailed(f"migration {done.id} ended {done.state}: {done.error}")
    _bounded("team_scores: the new version emits panes",
             lambda: cat.panes("team_scores", version=saved.version.number, limit=5), 300 * scale)

    # a crash: kill the page_views driver and wait for the supervisor to restart it
    victim = _bounded("page_views: a run to kill", lambda: cat.active_runs("page_views"), 120 * scale)[0]
    if victim.pid is None:
        raise TourFailed(f"page_views run {victim.id} has no pid recorded")
    os.kill(victim.pid, signal.SIGKILL)
    print(f"  ..   killed page_views run {victim.id} (pid {victim.pid})", flush=True)
    _bounded("page_views: the supervisor restarts the killed job",
             lambda: [r for r in cat.active_runs("page_views") if r.id != victim.id], 300 * scale)
