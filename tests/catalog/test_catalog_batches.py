"""Per-micro-batch bookkeeping: progress, snapshots, late counts and samples, idempotent."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from catalog_defs import team_scores

from jobs.catalog import (
    BatchProgress,
    BatchSnapshot,
    Catalog,
    CatalogError,
    DeadLetterSample,
    LateCount,
    LateSample,
)
from jobs.timeutil import ManualClock

W0, W1, W2 = 0, 120_000, 240_000


@pytest.fixture
def run_id(catalog: Catalog) -> int:
    store = catalog.create_job(team_scores(), "alice").store_name
    return catalog.start_run("team_scores", 1, store, 1, "h", None).id


def progress(batch: int, *, accepted: int = 0, dropped: int = 0, wm: int | None = None) -> BatchProgress:
    return BatchProgress(
        batch_id=batch, input_rows=100 * (batch + 1), rows_per_second=50.0 + batch,
        duration_ms=200, watermark=wm, state_rows=10, state_bytes=4096,
        late_accepted=accepted, late_dropped=dropped, dead_letters=0,
    )


def snapshot(batch: int, wm: int | None = None) -> BatchSnapshot:
    return BatchSnapshot(
        batch_id=batch, committed_at=datetime(2026, 1, 1, 0, batch, tzinfo=UTC), watermark=wm,
        source_offsets={"logOffset": batch}, state_bytes=4096,
        checkpoint_location=f"/ckpt/team_scores/{batch}", state_rows=10,
    )


def test_batches_are_recorded_once(catalog: Catalog, clock: ManualClock, run_id: int) -> None:
    late = [LateCount("red", W0, W1, accepted=2, dropped=1), LateCount("blue", W0, W1, dropped=4)]
    assert catalog.record_batch(run_id, progress(0, accepted=2, dropped=5, wm=W1), snapshot(0, W1), late)
    clock.advance(10_000)
    # the job crashed after the commit and re-ran batch 0: nothing may be counted twice
    assert not catalog.record_batch(
        run_id, progress(0, accepted=2, dropped=5, wm=W1), snapshot(0, W1), late
    )
    assert catalog.record_batch(
        run_id, progress(1, accepted=1, wm=W2), snapshot(1, W2),
        [LateCount("red", W0, W1, accepted=1), LateCount("red", W1, W2, dropped=3)],
    )

    points = catalog.progress("team_scores")
    assert [(p.batch_id, p.input_rows, p.watermark) for p in points] == [(0, 100, W1), (1, 200, W2)]
    assert catalog.progress("team_scores", limit=1)[0].batch_id == 1

    windows = {(w.key, w.window_start): (w.accepted, w.dropped) for w in catalog.late_counts("team_scores")}
    assert windows == {("red", W0): (3, 1), ("blue", W0): (0, 4), ("red", W1): (0, 3)}
    assert [(w.window_start, w.key) for w in catalog.late_counts("team_scores", key="red")] == [
        (W1, "red"), (W0, "red"),
    ]
    over_time = catalog.late_over_time("team_scores")
    assert [(p.batch_id, p.accepted, p.dropped) for p in over_time] == [(0, 2, 5), (1, 1, 0)]

    snaps = catalog.snapshots("team_scores")
    assert [s.batch_id for s in snaps] == [1, 0]
    s0 = catalog.snapshot(snaps[0].store, 0)
    assert s0.source_offsets == {"logOffset": 0}
    assert s0.committed_at == datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    assert (s0.checkpoint_location, s0.version, s0.watermark) == ("/ckpt/team_scores/0", 1, W1)
    # recording a batch is also a heartbeat
    assert catalog.run(run_id).last_heartbeat_at == points[-1].recorded_at


def test_null_key_and_global_window_are_counted_per_window(catalog: Catalog, run_id: int) -> None:
    late = [LateCount(None, None, None, dropped=1), LateCount(None, None, None, dropped=2),
            LateCount(0, W0, W1, accepted=1), LateCount("0", W0, W1, accepted=5)]
    catalog.record_batch(run_id, progress(0), snapshot(0), late)
    catalog.record_batch(run_id, progress(1), snapshot(1), [LateCount(None, None, None, dropped=4)])
    windows = catalog.late_counts("team_scores")
    # the key 0 and the key "0" are different keys; the global window sorts last
    assert {(w.key, type(w.key), w.window_start, w.accepted, w.dropped) for w in windows[:2]} == {
        ("0", str, W0, 5, 0), (0, int, W0, 1, 0),
    }
    assert (windows[2].key, windows[2].window_start, windows[2].window_end) == (None, None, None)
    assert (windows[2].accepted, windows[2].dropped) == (0, 7)
    assert catalog.late_counts("team_scores", key=None)[0].dropped == 7


def test_samples_keep_the_newest_per_job(
    catalog_url: str, clock: ManualClock
) -> None:
    cat = Catalog(catalog_url, clock=clock, sample_limit=5)
    try:
        store = cat.create_job(team_scores(), "alice").store_name
        run_id = cat.start_run("team_scores", 1, store, 1, "h", None).id
        for batch in range(4):
            samples = [
                LateSample(key="red", event_time=batch * 10 + i, window_start=W0,
                           window_end=W1, reason="expired", record={"team": "red", "i": i})
                for i in range(3)
            ]
            dead = [DeadLetterSample(reason="et is null", record={"line": batch})]
            cat.record_batch(run_id, progress(batch), snapshot(batch), [], samples, dead)
        kept = cat.late_samples("team_scores")
        assert [s.sample.event_time for s in kept] == [32, 31, 30, 22, 21]
        assert kept[0].sample.record == {"team": "red", "i": 2}
        assert kept[0].batch_id == 3
        assert [d.sample.record for d in cat.dead_letters("team_scores")] == [
            {"line": 3}, {"line": 2}, {"line": 1}, {"line": 0},
        ]
        assert len(cat.late_samples("team_scores", limit=2)) == 2
        # storage stays bounded however long the job runs
        for batch in range(4, 40):
            sample = LateSample("red", batch, W0, W1, "expired", {"i": batch})
            cat.record_batch(run_id, progress(batch), snapshot(batch), [], [sample] * 3)
        with cat.engine.connect() as conn:
            stored = conn.exec_driver_sql("SELECT count(*) FROM late_samples").scalar()
        assert stored is not None and stored <= 5 + 8 * 3
        assert [s.sample.event_time for s in cat.late_samples("team_scores")] == [39, 39, 39, 38, 38]
    finally:
        cat.close()


def test_mismatched_batch_ids_and_unknown_runs_are_refused(catalog: Catalog, run_id: int) -> None:
    with pytest.raises(CatalogError) as err:
        catalog.record_batch(run_id, progress(1), snapshot(2), [])
    assert err.value.code == "invalid"
    with pytest.raises(CatalogError) as err:
        catalog.record_batch(999, progress(1), snapshot(1), [])
    assert err.value.code == "not_found"
    assert catalog.progress("team_scores") == []


def test_jobs_overview(catalog: Catalog, clock: ManualClock, run_id: int) -> None:
    catalog.create_job(team_scores(name="idle"), "alice")
    catalog.record_batch(run_id, progress(0, accepted=2, dropped=1, wm=W1), snapshot(0), [])
    catalog.record_batch(run_id, progress(1, dropped=3, wm=W2), snapshot(1), [])
    clock.set(W2 + 30_000)
    overview = {o.job.name: o for o in catalog.jobs_overview()}
    assert list(overview) == ["idle", "team_scores"]
    ts = overview["team_scores"]
    assert ts.run is not None and ts.run.id == run_id
    assert (ts.last_batch_id, ts.watermark, ts.watermark_lag_ms) == (1, W2, 30_000)
    assert ts.rows_per_second == 51.0
    assert (ts.late_accepted, ts.late_dropped) == (2, 4)
    idle = overview["idle"]
    assert (idle.run, idle.watermark, idle.watermark_lag_ms, idle.late_dropped) == (None, None, None, 0)


def test_bulk_rows_store_times_like_every_other_row(catalog: Catalog, run_id: int) -> None:
    """Bulk-inserted timestamps must compare and sort like ORM-written ones (on SQLite they
    are strings, so the text format has to be the same)."""
    catalog.record_batch(run_id, progress(0), snapshot(0), [LateCount("red", W0, W1, dropped=1)])
    with catalog.engine.connect() as conn:
        bulk = conn.exec_driver_sql("SELECT last_at FROM late_window_counts").scalar()
        orm = conn.exec_driver_sql("SELECT recorded_at FROM batch_progress").scalar()
    assert type(bulk) is type(orm)
    assert str(bulk) == str(orm)
    [window] = catalog.late_counts("team_scores")
    assert window.last_at == catalog.progress("team_scores")[0].recorded_at


def _row_counts(catalog: Catalog) -> dict[str, int]:
    tables = ("batch_progress", "snapshots", "late_window_counts", "late_samples", "dead_letters")
    with catalog.engine.connect() as conn:
        return {t: conn.exec_driver_sql(f"SELECT count(*) FROM {t}").scalar() or 0 for t in tables}


def test_a_replayed_batch_changes_nothing(catalog: Catalog, clock: ManualClock, run_id: int) -> None:
    late = [LateCount("red", W0, W1, accepted=2), LateCount("red", W1, W2, dropped=1)]
    samples = [LateSample("red", 5, W0, W1, "expired", {"i": 1})]
    dead = [DeadLetterSample("et is null", {"line": 1})]
    for batch in range(8):  # batch 0 and batch 8 prune: replay one of each kind
        clock.advance(1000)
        assert catalog.record_batch(run_id, progress(batch, accepted=2, dropped=1),
                                    snapshot(batch), late, samples, dead)
    counts = _row_counts(catalog)
    windows = catalog.late_counts("team_scores")
    beat = catalog.run(run_id).last_heartbeat_at
    for batch in (0, 7):
        clock.advance(1000)
        assert not catalog.record_batch(run_id, progress(batch, accepted=9, dropped=9),
                                        snapshot(batch), late * 3, samples * 4, dead * 2)
    assert _row_counts(catalog) == counts
    assert catalog.late_counts("team_scores") == windows
    assert [(w.accepted, w.dropped) for w in windows] == [(0, 8), (16, 0)]
    assert catalog.run(run_id).last_heartbeat_at == beat
    assert [p.late_accepted for p in catalog.progress("team_scores")] == [2] * 8


def test_late_counts_of_one_window_in_one_batch_are_summed(catalog: Catalog, run_id: int) -> None:
    late = [LateCount("red", W0, W1, accepted=1)] * 300 + [LateCount("red", W0, W1, dropped=2)] * 5
    assert catalog.record_batch(run_id, progress(0), snapshot(0), late)
    [window] = catalog.late_counts("team_scores")
    assert (window.accepted, window.dropped) == (300, 10)


@pytest.mark.parametrize("key", ['a"b', "c\\d", "{x,y}", "NULL", "", " sp ", "ü€😀", "a\nb",
                                 True, 1.5, -7, 2**62])
def test_keys_of_any_text_round_trip(catalog: Catalog, run_id: int, key: object) -> None:
    late = [LateCount(key, W0, W1, accepted=1), LateCount(key, None, None, dropped=1)]
    samples = [LateSample(key, 5, W0, W1, "expired", {"k": key})]
    dead = [DeadLetterSample(f"bad {key!r}", {"k": key, "raw": 'x"\\'})]
    for batch in range(2):
        assert catalog.record_batch(run_id, progress(batch), snapshot(batch), late, samples, dead)
    got = {(w.key, type(w.key), w.window_start): (w.accepted, w.dropped)
           for w in catalog.late_counts("team_scores")}
    assert got == {(key, type(key), W0): (2, 0), (key, type(key), None): (0, 2)}
    assert catalog.late_counts("team_scores", key=key)[0].key == key
    assert [(s.sample.key, s.sample.record) for s in catalog.late_samples("team_scores")] == [
        (key, {"k": key})] * 2
    assert catalog.dead_letters("team_scores")[0].sample.record == {"k": key, "raw": 'x"\\'}
    assert catalog.dead_letters("team_scores")[0].sample.reason == f"bad {key!r}"


def test_many_windows_across_batches_keep_exact_totals(catalog: Catalog, run_id: int) -> None:
    """The bulk path (hundreds of windows a batch, half of them seen before) against a
    plain dictionary, on both backends."""
    expected: dict[tuple[object, int], list[int]] = {}
    for batch in range(6):
        late = []
        for i in range(400):
            w = batch * 200 + i
            key: object = f"k{w % 37}" if w % 3 else w % 37
            late.append(LateCount(key, w * 1000, w * 1000 + 1000, accepted=i % 4, dropped=i % 3))
            tot = expected.setdefault((key, w * 1000), [0, 0])
            tot[0] += i % 4
            tot[1] += i % 3
        assert catalog.record_batch(run_id, progress(batch), snapshot(batch), late)
    got = {(w.key, w.window_start): [w.accepted, w.dropped]
           for w in catalog.late_counts("team_scores", limit=10_000)}
    assert got == expected


def test_concurrent_batches_from_threads(catalog: Catalog, run_id: int) -> None:
    """Two threads recording at once: one uses the writer's connection, the other a pooled
    one; every batch lands once and the totals are exact."""
    import threading

    errors: list[BaseException] = []

    def record(first: int) -> None:
        try:
            for batch in range(first, 40, 2):
                assert catalog.record_batch(run_id, progress(batch), snapshot(batch),
                                            [LateCount("red", W0, W1, accepted=1)])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.batch_id for p in catalog.progress("team_scores")) == list(range(40))
    [window] = catalog.late_counts("team_scores")
    assert window.accepted == 40


def test_a_dropped_connection_is_replaced(catalog: Catalog, run_id: int) -> None:
    """PostgreSQL: the batch connection is kept between batches; if the server drops it the
    next batch reconnects (and a retried batch is still counted once)."""
    assert catalog.record_batch(run_id, progress(0), snapshot(0), [LateCount("red", W0, W1, accepted=1)])
    if catalog.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only")
    with catalog.engine.connect() as conn:
        conn.exec_driver_sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        conn.commit()
    assert catalog.record_batch(run_id, progress(1), snapshot(1), [LateCount("red", W0, W1, accepted=1)])
    assert not catalog.record_batch(run_id, progress(1), snapshot(1), [LateCount("red", W0, W1, accepted=1)])
    [window] = catalog.late_counts("team_scores")
    assert window.accepted == 2


def test_closing_the_catalog_stops_the_checkpointer(catalog_url: str, clock: ManualClock) -> None:
    import threading

    cat = Catalog(catalog_url, clock=clock)
    store = cat.create_job(team_scores(), "alice").store_name
    run_id = cat.start_run("team_scores", 1, store, 1, "h", None).id
    for batch in range(3):
        cat.record_batch(run_id, progress(batch), snapshot(batch), [LateCount("red", W0, W1, accepted=1)])
    cat.close()
    assert not [t for t in threading.enumerate() if t.name == "tidemark-sqlite-checkpoint"]
    with Catalog(catalog_url, clock=clock) as again:
        assert [p.batch_id for p in again.progress("team_scores")] == [0, 1, 2]


def test_the_hot_path_slot_is_slot_of() -> None:
    from jobs.catalog.base import slot_of
    from jobs.catalog.batch_rows import late_rows

    counts = [LateCount(k, s, e, accepted=1) for k in ("red", 0, 1.5, True, None, 'q"\\')
              for s, e in ((W0, W1), (None, None), (-5, 7), (1_767_225_600_000, 1_767_225_660_000))]
    rows = late_rows(counts)
    assert [r[0] for r in rows] == [slot_of(c.key, c.window_start, c.window_end) for c in counts]
    # 1 == 1.0 == True in Python, but they are different keys
    assert len(late_rows([LateCount(1, 0, 1), LateCount(1.0, 0, 1), LateCount(True, 0, 1)])) == 3
