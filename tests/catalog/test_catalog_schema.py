"""The schema exists only through Alembic revisions; they go up and down with data present."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from catalog_defs import team_scores
from sqlalchemy import create_engine, inspect, text

from jobs.catalog import BatchProgress, BatchSnapshot, Catalog, CatalogError, LateCount
from jobs.catalog import schema as catalog_schema
from jobs.catalog.models import SCHEMA_HEAD
from jobs.timeutil import ManualClock

CORE = {"jobs", "definition_versions", "audit_events", "outbox", "users"}
RUNTIME = {"runs", "batch_progress", "snapshots", "late_window_counts", "late_samples",
           "dead_letters", "pane_batches", "panes"}


def tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_models_match_the_migrations(catalog_url: str) -> None:
    assert catalog_schema.schema_diffs(catalog_url) == []
    assert catalog_schema.current_revision(catalog_url) == catalog_schema.head_revision()
    assert catalog_schema.head_revision() == SCHEMA_HEAD


def fill(cat: Catalog) -> int:
    v1 = cat.create_job(team_scores(), "alice")
    cat.save_version("team_scores", team_scores(size="5m"), "bob", base_version=1)
    cat.add_user("alice", "password1", "admin", "system")
    run = cat.start_run("team_scores", 1, v1.store_name, 7, "h", None)
    cat.record_batch(
        run.id,
        BatchProgress(0, 10, 5.0, 100, 1000, 1, 64, 1, 0, 0),
        BatchSnapshot(0, datetime(2026, 1, 1, tzinfo=UTC), 1000, {"0": 1}, 64, "/ckpt"),
        [LateCount("red", 0, 120_000, accepted=1)],
    )
    cat.create_migration("team_scores", 1, 2, "olga")
    return run.id


def test_upgrade_downgrade_upgrade_with_data(empty_url: str, clock: ManualClock) -> None:
    catalog_schema.upgrade(empty_url)
    with Catalog(empty_url, clock=clock) as cat:
        fill(cat)
        audit_before = cat.audit()
        versions_before = cat.versions("team_scores")
    assert len(audit_before) >= 5

    # down to the core revision: the core data stays, the runtime tables go
    catalog_schema.downgrade(empty_url, "0001")
    assert tables(empty_url) == CORE
    with pytest.raises(CatalogError) as err:
        Catalog(empty_url, clock=clock)
    assert err.value.code == "schema"
    assert "tidemark db upgrade" in str(err.value)

    catalog_schema.upgrade(empty_url)
    assert tables(empty_url) == CORE | RUNTIME | {"migrations", "migration_steps"}
    assert catalog_schema.schema_diffs(empty_url) == []
    with Catalog(empty_url, clock=clock) as cat:
        assert cat.audit() == audit_before
        assert cat.versions("team_scores") == versions_before
        assert cat.authenticate("alice", "password1") is not None
        assert cat.progress("team_scores") == []  # runtime history went with its tables
        store = versions_before[0].store_name
        run = cat.start_run("team_scores", 1, store, 8, "h", None)  # and the service works
        assert cat.active_runs()[0].id == run.id

    # all the way down and up again
    catalog_schema.downgrade(empty_url, "base")
    assert tables(empty_url) == set()
    catalog_schema.upgrade(empty_url)
    with Catalog(empty_url, clock=clock) as cat:
        assert cat.jobs() == []
        fill(cat)  # the immutability triggers came back too
        with pytest.raises(Exception, match="append-only"), cat.engine.begin() as conn:
            conn.execute(text("DELETE FROM audit_events"))


def test_catalog_refuses_an_empty_database(empty_url: str) -> None:
    with pytest.raises(CatalogError) as err:
        Catalog(empty_url)
    assert err.value.code == "schema" and "(empty)" in str(err.value)
    with Catalog(empty_url, upgrade=True) as cat:
        assert cat.jobs() == []


def test_timestamps_are_utc_aware_on_both_backends(catalog: Catalog) -> None:
    v1 = catalog.create_job(team_scores(), "alice")
    for value in (v1.created_at, catalog.job("team_scores").updated_at, catalog.audit()[0].at):
        assert value.tzinfo is not None and value.utcoffset() is not None
        assert value.utcoffset().total_seconds() == 0
    assert v1.created_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_sqlite_connections_share_the_file_safely(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with Catalog(url, upgrade=True) as cat, cat.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000


def test_default_url_is_a_file_under_the_data_dir(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TIDEMARK_DB_URL", raising=False)
    with Catalog(upgrade=True) as cat:
        assert cat.url == f"sqlite:///{tmp_path / 'home' / 'catalog.db'}"
    assert (tmp_path / "home" / "catalog.db").exists()


def _slots(url: str) -> dict[tuple[str, int | None, int | None], tuple[str, int, int]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT key_json, window_start, window_end, slot, accepted, dropped "
                "FROM late_window_counts"
            ).all()
    finally:
        engine.dispose()
    return {(r[0], r[1], r[2]): (r[3], r[4], r[5]) for r in rows}


def _fillfactor(url: str) -> str | None:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            options = conn.exec_driver_sql(
                "SELECT reloptions FROM pg_class WHERE relname = 'late_window_counts'"
            ).scalar()
    finally:
        engine.dispose()
    return next((o for o in options or [] if o.startswith("fillfactor=")), None)


def test_revision_0004_rewrites_late_slots_time_first_and_back(
    empty_url: str, clock: ManualClock
) -> None:
    # numeric keys whose new slot equals the other window's old slot: "[200,100,300]"
    late = [LateCount(300, 100, 200, accepted=1), LateCount(200, 100, 300, dropped=2),
            LateCount("red", 0, 120_000, accepted=3), LateCount(None, None, None, dropped=4)]
    catalog_schema.upgrade(empty_url)
    with Catalog(empty_url, clock=clock) as cat:
        store = cat.create_job(team_scores(), "alice").store_name
        run_id = cat.start_run("team_scores", 1, store, 7, "h", None).id
        cat.record_batch(
            run_id, BatchProgress(0, 10, 5.0, 100, 1000, 1, 64, 4, 6, 0),
            BatchSnapshot(0, datetime(2026, 1, 1, tzinfo=UTC), 1000, {}, 64, "/ckpt"), late,
        )
    time_first = {
        ("300", 100, 200): ("[200,100,300]", 1, 0),
        ("200", 100, 300): ("[300,100,200]", 0, 2),
        ('"red"', 0, 120_000): ('[120000,0,"red"]', 3, 0),
        ("null", None, None): ("[null,null,null]", 0, 4),
    }
    assert _slots(empty_url) == time_first
    if empty_url.startswith("postgresql"):
        assert _fillfactor(empty_url) == "fillfactor=50"

    catalog_schema.downgrade(empty_url, "0003")
    assert _slots(empty_url) == {
        ("300", 100, 200): ("[300,100,200]", 1, 0),
        ("200", 100, 300): ("[200,100,300]", 0, 2),
        ('"red"', 0, 120_000): ('["red",0,120000]', 3, 0),
        ("null", None, None): ("[null,null,null]", 0, 4),
    }
    if empty_url.startswith("postgresql"):
        assert _fillfactor(empty_url) is None

    catalog_schema.upgrade(empty_url)
    assert _slots(empty_url) == time_first
    with Catalog(empty_url, clock=clock) as cat:
        # the next batch adds to the same windows (no second row per window)
        cat.record_batch(
            run_id, BatchProgress(1, 10, 5.0, 100, 1000, 1, 64, 4, 6, 0),
            BatchSnapshot(1, datetime(2026, 1, 1, tzinfo=UTC), 1000, {}, 64, "/ckpt"), late,
        )
        totals = {(w.key, w.window_start): (w.accepted, w.dropped)
                  for w in cat.late_counts("team_scores")}
    assert totals == {(300, 100): (2, 0), (200, 100): (0, 4), ("red", 0): (6, 0),
                      (None, None): (0, 8)}
