"""Jobs and definition versions: history, diffs, no-op saves, optimistic locking, validation."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable

import pytest
from catalog_defs import team_scores
from sqlalchemy import text

from jobs.catalog import Catalog, CatalogError
from jobs.definition import canonical_json, load_definition, store_name
from jobs.timeutil import ManualClock, ms_to_datetime


def test_create_job_stores_canonical_version_one(catalog: Catalog, clock: ManualClock) -> None:
    source = team_scores()
    v1 = catalog.create_job(source, "alice", note="first cut")

    expected = canonical_json(load_definition(source))
    assert v1.number == 1
    assert v1.spec_json == expected
    assert v1.spec_hash == hashlib.sha256(expected.encode()).hexdigest()
    assert v1.store_name == store_name(load_definition(source))
    assert v1.store_name.startswith("team_scores__tumbling_window_120000")
    assert (v1.author, v1.note, v1.compatibility) == ("alice", "first cut", "initial")
    assert v1.created_at == ms_to_datetime(clock.now_ms())
    assert v1.spec["window"]["size"] == 120_000

    job = catalog.job("team_scores")
    assert (job.desired_state, job.status, job.active_version, job.latest_version) == (
        "stopped", "stopped", 1, 1,
    )
    assert job.active_store == v1.store_name
    assert job.created_at.tzinfo is not None and job.created_at.utcoffset().total_seconds() == 0


def test_version_history_and_diffs(catalog: Catalog, clock: ManualClock) -> None:
    catalog.create_job(team_scores(), "alice")
    clock.advance(60_000)
    r2 = catalog.save_version(
        "team_scores", team_scores(description="Team scores v2"), "bob", base_version=1,
        note="better description",
    )
    clock.advance(60_000)
    r3 = catalog.save_version(
        "team_scores", team_scores(description="Team scores v2", size="5m"), "alice",
        base_version=2,
    )

    assert (r2.created, r2.kind, r2.version.number) == (True, "same_store", 2)
    assert r2.changes == (("description", "Team scores", "Team scores v2"),)
    assert (r3.created, r3.kind, r3.version.number) == (True, "new_store", 3)
    assert ("window.size", 120_000, 300_000) in r3.changes

    history = catalog.versions("team_scores")
    assert [v.number for v in history] == [1, 2, 3]
    assert [v.compatibility for v in history] == ["initial", "same_store", "new_store"]
    assert [v.author for v in history] == ["alice", "bob", "alice"]
    assert history[0].store_name == history[1].store_name != history[2].store_name
    assert history[1].note == "better description"
    assert history[2].created_at > history[1].created_at > history[0].created_at

    d13 = catalog.diff("team_scores", 1, 3)
    paths = {c[0] for c in d13.changes}
    assert paths == {"description", "window.size"}
    assert d13.kind == "new_store"
    assert catalog.diff("team_scores", 1, 2).kind == "same_store"
    # saving does not activate
    assert catalog.job("team_scores").active_version == 1
    assert catalog.job("team_scores").latest_version == 3
    assert catalog.version("team_scores").number == 3
    assert catalog.version("team_scores", 2).spec["description"] == "Team scores v2"


def test_saving_the_same_spec_is_a_no_op(catalog: Catalog) -> None:
    v1 = catalog.create_job(team_scores(), "alice")
    audit_before = catalog.audit(job="team_scores")
    outbox_before = catalog.pending_outbox()

    # the same definition written differently: JSON, durations in ms, defaults spelled out
    same = json.loads(v1.spec_json)
    result = catalog.save_version("team_scores", same, "bob", base_version=1)
    assert result.created is False
    assert result.kind == "unchanged"
    assert result.version.number == 1
    again = catalog.save_version("team_scores", team_scores(), "bob", base_version=1)
    assert again.created is False

    assert [v.number for v in catalog.versions("team_scores")] == [1]
    assert catalog.audit(job="team_scores") == audit_before
    assert catalog.pending_outbox() == outbox_before


def test_edit_based_on_an_old_version_is_refused_naming_both(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    # alice and bob both open version 1; bob saves first
    catalog.save_version("team_scores", team_scores(description="bob's"), "bob", base_version=1)

    with pytest.raises(CatalogError) as err:
        catalog.save_version(
            "team_scores", team_scores(description="alice's"), "alice", base_version=1
        )
    assert err.value.code == "conflict"
    assert "based on version 1 but version 2 exists" in str(err.value)
    assert "bob" in str(err.value)
    assert [v.number for v in catalog.versions("team_scores")] == [1, 2]
    assert catalog.version("team_scores").spec["description"] == "bob's"

    refused = catalog.audit(job="team_scores", outcome="refused")
    assert len(refused) == 1
    assert (refused[0].actor, refused[0].action) == ("alice", "edit")
    assert "version 2 exists" in refused[0].message

    # after reloading version 2 alice's edit goes through
    ok = catalog.save_version(
        "team_scores", team_scores(description="alice's"), "alice", base_version=2
    )
    assert ok.version.number == 3


def test_concurrent_edits_of_the_same_base_one_wins(
    catalog: Catalog, open_catalog: Callable[[], Catalog]
) -> None:
    catalog.create_job(team_scores(), "alice")
    others = [open_catalog() for _ in range(4)]
    barrier = threading.Barrier(len(others))
    outcomes: list[str] = []
    lock = threading.Lock()

    def edit(i: int, cat: Catalog) -> None:
        barrier.wait()
        try:
            cat.save_version(
                "team_scores", team_scores(description=f"edit {i}"), f"user{i}", base_version=1
            )
            result = "ok"
        except CatalogError as exc:
            result = exc.code
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=edit, args=(i, c)) for i, c in enumerate(others)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 3 + ["ok"]
    assert [v.number for v in catalog.versions("team_scores")] == [1, 2]


def test_invalid_definition_is_refused_before_anything_is_saved(catalog: Catalog) -> None:
    bad = team_scores().replace("size: 2m", "size: -5m")
    with pytest.raises(CatalogError) as err:
        catalog.create_job(bad, "alice")
    assert err.value.code == "invalid"
    assert any(field == "window.size" for field, _ in err.value.errors)
    assert catalog.jobs() == []
    refused = catalog.audit(outcome="refused")
    assert [(e.action, e.job) for e in refused] == [("create", "team_scores")]

    catalog.create_job(team_scores(), "alice")
    with pytest.raises(CatalogError) as err:
        catalog.save_version("team_scores", bad, "alice", base_version=1)
    assert err.value.code == "invalid"
    assert [v.number for v in catalog.versions("team_scores")] == [1]


def test_a_job_cannot_be_renamed_or_created_twice(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    with pytest.raises(CatalogError) as err:
        catalog.save_version("team_scores", team_scores(name="other"), "alice", base_version=1)
    assert err.value.code == "invalid"
    assert err.value.errors[0][0] == "name"
    with pytest.raises(CatalogError) as err:
        catalog.create_job(team_scores(), "bob")
    assert err.value.code == "exists"
    with pytest.raises(CatalogError) as err:
        catalog.save_version("nope", team_scores(name="nope"), "alice", base_version=1)
    assert err.value.code == "not_found"


def test_definition_versions_are_immutable_in_the_database(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    for sql in (
        "UPDATE definition_versions SET note = 'rewritten'",
        "DELETE FROM definition_versions",
    ):
        with pytest.raises(Exception, match="immutable"), catalog.engine.begin() as conn:
            conn.execute(text(sql))
    assert catalog.version("team_scores", 1).note == ""


def test_activate_same_store_switches_at_once(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    catalog.save_version("team_scores", team_scores(delay="10s"), "bob", base_version=1)
    job = catalog.activate("team_scores", 2, "carol")
    assert job.active_version == 2
    assert catalog.active_version("team_scores").number == 2
    event = catalog.audit(job="team_scores", action="activate")[0]
    assert event.actor == "carol"
    assert event.diff == [{"path": "watermark.delay", "old": 0, "new": 10_000}]
    assert event.data["same_store"] is True
    # roll back to version 1 (same store)
    job = catalog.activate("team_scores", 1, "carol")
    assert job.active_version == 1
    assert catalog.audit(job="team_scores", limit=1)[0].action == "rollback"
    # activating the active version changes nothing
    n = len(catalog.audit(job="team_scores"))
    catalog.activate("team_scores", 1, "carol")
    assert len(catalog.audit(job="team_scores")) == n


def test_activate_new_store_plans_a_migration(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    catalog.save_version("team_scores", team_scores(size="5m"), "bob", base_version=1)
    job = catalog.activate("team_scores", 2, "carol")
    assert job.active_version == 1  # switches at cut-over
    [migration] = catalog.migrations("team_scores")
    assert (migration.from_version, migration.to_version, migration.state) == (1, 2, "planned")
    assert migration.to_store == catalog.version("team_scores", 2).store_name
    kinds = [e.kind for e in catalog.pending_outbox()]
    assert kinds[-1] == "migration_requested"
    # asking again returns the same migration instead of planning a second one
    catalog.activate("team_scores", 2, "carol")
    assert len(catalog.migrations("team_scores")) == 1
