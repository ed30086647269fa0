"""`make demo` seeds the example jobs into a real SQLite catalog, and running it again (the
user's second `make demo`) changes nothing: no second version, no duplicate job, a user's own
edit kept, and only the desired state brought back to running."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.catalog import Catalog
from jobs.demo.launcher import SPECS, seed

NAMES = sorted(p.stem for p in SPECS.glob("*.yaml"))


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    cat = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}", upgrade=True)
    try:
        yield cat
    finally:
        cat.close()


def test_seed_creates_every_example_job_running_on_the_landing_directory(
    catalog: Catalog, tmp_path: Path
) -> None:
    landing = tmp_path / "landing"
    assert seed(catalog, landing=landing) == NAMES
    assert len(NAMES) >= 3
    for name in NAMES:
        job = catalog.job(name)
        assert job.desired_state == "running"
        assert [v.number for v in catalog.versions(name)] == [1]
        source = json.loads(catalog.active_version(name).spec_json)["source"]
        if source["kind"] == "kafka":  # the demo's broker, named by reference (its port varies)
            assert source["options"]["kafka.bootstrap.servers"] == "${env:TIDEMARK_DEMO_KAFKA}"
            continue
        # absolute, under the demo's own landing directory (the generator writes there)
        assert Path(source["path"]).parent == landing, source


def test_seed_twice_changes_nothing_and_keeps_user_edits(catalog: Catalog, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    seed(catalog, landing=landing)
    # a user edits one job (same store: a description) and stops another
    v1 = catalog.versions("page_views")[-1]
    spec = json.loads(v1.spec_json)
    spec["description"] = "edited by a user"
    edited = catalog.save_version("page_views", spec, "alice", base_version=v1.number)
    assert edited.created
    catalog.set_desired_state("sensor_sessions", "stopped", "alice")
    audit_before = len(catalog.audit())

    assert seed(catalog, landing=landing) == []

    assert [j.name for j in catalog.jobs()] == NAMES
    assert [v.number for v in catalog.versions("page_views")] == [1, 2]
    assert json.loads(catalog.versions("page_views")[-1].spec_json)["description"] == (
        "edited by a user")
    assert [v.number for v in catalog.versions("team_scores")] == [1]
    assert all(catalog.job(n).desired_state == "running" for n in NAMES)
    # exactly one new audit event: the stopped job started again, by the demo
    new = catalog.audit()[: len(catalog.audit()) - audit_before]
    assert [(e.action, e.job, e.actor) for e in new] == [("start", "sensor_sessions", "demo")]
