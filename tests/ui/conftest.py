"""Fixtures for the UI tests: a real SQLite catalog per test, users of every role, seeded jobs.

The schema is built once per session with Alembic (through ``Catalog(upgrade=True)``) and the
file copied per test, so each test starts from an empty catalog at the head revision in
milliseconds instead of seconds. Everything is seeded through the catalog service layer, the
same API the UI uses, never through ORM sessions or mocks.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs.catalog import (
    BatchProgress,
    BatchSnapshot,
    Catalog,
    DeadLetterSample,
    LateCount,
    LateSample,
    PaneRecord,
)
from tests.ui.helpers import MIN, PASSWORD, ROLES, T0, landing, team_scores


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("catalog-template") / "catalog.db"
    Catalog(f"sqlite:///{path}", upgrade=True).close()
    return path


@pytest.fixture
def catalog_url(template_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    db = tmp_path / "catalog.db"
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(template_db) + suffix)
        if src.exists():
            shutil.copy(src, str(db) + suffix)
    url = f"sqlite:///{db}"
    monkeypatch.setenv("TIDEMARK_DB_URL", url)
    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    return url


@pytest.fixture
def cat(catalog_url: str) -> Iterator[Catalog]:
    c = Catalog(catalog_url)
    yield c
    c.close()


@pytest.fixture
def users(cat: Catalog) -> dict[str, str]:
    """One user per role, named after it (``viewer``, ``editor``, ...)."""
    cat.ensure_admin("admin", PASSWORD)
    for role in ROLES[:-1]:
        cat.add_user(role, PASSWORD, role, "admin")  # type: ignore[arg-type]
    return {r: r for r in ROLES}


@pytest.fixture
def ran_job(cat: Catalog, users: dict[str, str], tmp_path: Path) -> str:
    """``team_scores`` (catalog sink) that has run two micro-batches.

    Batch 0: team a scores 3 and 4 in [00:00, 00:01), team b 1 in [00:01, 00:02); the watermark
    reaches 00:01:50, so a's window fires ON_TIME (total 7, n 2). Batch 1: a late record for
    a's window is accepted (total 9, n 3, LATE), one for an expired window is dropped, and one
    record has no team (dead letter).
    """
    src = landing(tmp_path / "landing", [{"team": "a", "score": 3, "et": "2026-01-01T00:00:10Z"}])
    v = cat.create_job(team_scores(src), "editor", note="first")
    cat.set_desired_state("team_scores", "running", "operator")
    run = cat.start_run("team_scores", 1, v.store_name, 4242, "host1", None, actor="supervisor")
    wm0 = T0 + MIN + 50_000
    cat.record_batch(
        run.id,
        BatchProgress(0, input_rows=3, rows_per_second=150.0, duration_ms=20, watermark=wm0,
                      state_rows=2, state_bytes=2048),
        BatchSnapshot(0, committed_at=datetime(2026, 1, 1, 0, 2, tzinfo=UTC), watermark=wm0,
                      source_offsets={"logOffset": 0}, state_bytes=2048,
                      checkpoint_location="/ckpt/team_scores", state_rows=2),
        [],
    )
    cat.write_panes(v.store_name, 0, [PaneRecord.from_json({
        "key": "a", "window_start": T0, "window_end": T0 + MIN, "timing": "ON_TIME",
        "pane_index": 0, "is_first": True, "is_last": False, "retraction": False,
        "values": {"total": 7, "n": 2}, "emitted_at": T0 + 2 * MIN, "watermark": wm0})])
    wm1 = T0 + 2 * MIN + 30_000
    cat.record_batch(
        run.id,
        BatchProgress(1, input_rows=3, rows_per_second=75.0, duration_ms=40, watermark=wm1,
                      state_rows=1, state_bytes=1024, late_accepted=1, late_dropped=1,
                      dead_letters=1),
        BatchSnapshot(1, committed_at=datetime(2026, 1, 1, 0, 3, tzinfo=UTC), watermark=wm1,
                      source_offsets={"logOffset": 1}, state_bytes=1024,
                      checkpoint_location="/ckpt/team_scores", state_rows=1),
        [LateCount("a", T0, T0 + MIN, accepted=1, dropped=0),
         LateCount("b", T0 - 5 * MIN, T0 - 4 * MIN, accepted=0, dropped=1)],
        [LateSample("b", T0 - 5 * MIN + 1000, T0 - 5 * MIN, T0 - 4 * MIN, "expired",
                    {"team": "b", "score": 9, "et": "2025-12-31T23:55:01Z"})],
        [DeadLetterSample("key is null", {"score": 5, "et": "2026-01-01T00:02:00Z"})],
    )
    cat.write_panes(v.store_name, 1, [PaneRecord.from_json({
        "key": "a", "window_start": T0, "window_end": T0 + MIN, "timing": "LATE",
        "pane_index": 1, "is_first": False, "is_last": False, "retraction": False,
        "values": {"total": 9, "n": 3}, "emitted_at": T0 + 3 * MIN, "watermark": wm1})])
    return "team_scores"
