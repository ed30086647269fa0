"""The UI, the Spark job and the DAGs share one SQLite file from separate processes."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from catalog_defs import team_scores

from jobs.catalog import Catalog
from jobs.catalog import schema as catalog_schema

ROUNDS = 25


def _spark_job(url: str, run_id: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from datetime import UTC, datetime

    from jobs.catalog import BatchProgress, BatchSnapshot, Catalog, LateCount

    try:
        with Catalog(url) as cat:
            for b in range(ROUNDS):
                cat.record_batch(
                    run_id,
                    BatchProgress(b, 10, 1.0, 5, b * 1000, 1, 1, 1, 0, 0),
                    BatchSnapshot(b, datetime.now(tz=UTC), b * 1000, {}, 1, "/c"),
                    [LateCount(f"k{i}", b * 1000, b * 1000 + 1000, accepted=1) for i in range(50)],
                )
                cat.heartbeat(run_id)
        out.put(("spark", "ok"))
    except Exception as exc:  # reported to the test, which fails with it
        out.put(("spark", repr(exc)))


def _operator(url: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from jobs.catalog import Catalog

    try:
        with Catalog(url) as cat:
            for i in range(ROUNDS):
                cat.save_version("team_scores", team_scores(description=f"edit {i}"), "ops",
                                 base_version=i + 1)
                cat.set_desired_state("team_scores", "stopped" if i % 2 else "running", "ops")
        out.put(("operator", "ok"))
    except Exception as exc:
        out.put(("operator", repr(exc)))


def _ui(url: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from jobs.catalog import Catalog

    try:
        with Catalog(url) as cat:
            for _ in range(ROUNDS * 2):
                cat.jobs_overview()
                cat.audit(limit=20)
                cat.late_counts("team_scores", limit=50)
        out.put(("ui", "ok"))
    except Exception as exc:
        out.put(("ui", repr(exc)))


def test_three_processes_share_the_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    catalog_schema.upgrade(url)
    with Catalog(url) as cat:
        store = cat.create_job(team_scores(), "alice").store_name
        run_id = cat.start_run("team_scores", 1, store, 1, "h", None).id

    ctx = mp.get_context("fork")  # the parent holds no open connection here
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [
        ctx.Process(target=_spark_job, args=(url, run_id, out)),
        ctx.Process(target=_operator, args=(url, out)),
        ctx.Process(target=_ui, args=(url, out)),
    ]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    assert results == {"spark": "ok", "operator": "ok", "ui": "ok"}

    with Catalog(url) as cat:
        assert len(cat.progress("team_scores")) == ROUNDS
        assert len(cat.versions("team_scores")) == ROUNDS + 1
        assert sum(w.accepted for w in cat.late_counts("team_scores", limit=10**6)) == ROUNDS * 50
