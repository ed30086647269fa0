"""The audit log: every change recorded with actor, diff and outcome; append-only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from catalog_defs import team_scores
from sqlalchemy import text

from jobs.catalog import Catalog, CatalogError
from jobs.timeutil import ManualClock, ms_to_datetime


def test_every_change_is_audited_with_actor_and_diff(catalog: Catalog, clock: ManualClock) -> None:
    catalog.create_job(team_scores(), "alice")
    clock.advance(1000)
    catalog.save_version("team_scores", team_scores(delay="5s"), "bob", base_version=1)
    clock.advance(1000)
    catalog.activate("team_scores", 2, "carol")
    clock.advance(1000)
    catalog.set_desired_state("team_scores", "running", "carol")
    clock.advance(1000)
    catalog.request_restart("team_scores", "carol", reason="config reload")
    clock.advance(1000)
    catalog.set_desired_state("team_scores", "stopped", "dave")

    events = catalog.audit(job="team_scores")
    assert [(e.action, e.actor, e.version) for e in events] == [
        ("stop", "dave", 2),
        ("restart_requested", "carol", 2),
        ("start", "carol", 2),
        ("activate", "carol", 2),
        ("edit", "bob", 2),
        ("create", "alice", 1),
    ]
    assert all(e.outcome == "ok" for e in events)
    edit = events[4]
    assert edit.diff == [{"path": "watermark.delay", "old": 0, "new": 5000}]
    assert edit.at == ms_to_datetime(clock.now_ms() - 4000)
    assert events[1].message == "config reload"


def test_audit_filters(catalog: Catalog, clock: ManualClock) -> None:
    catalog.create_job(team_scores(), "alice")
    catalog.create_job(team_scores(name="other"), "bob")
    clock.advance(60_000)
    t1 = ms_to_datetime(clock.now_ms())
    catalog.set_desired_state("other", "running", "bob")
    catalog.set_desired_state("team_scores", "running", "alice")

    assert {e.job for e in catalog.audit(actor="bob")} == {"other"}
    assert [e.job for e in catalog.audit(action="start")] == ["team_scores", "other"]
    assert [e.action for e in catalog.audit(job="other", since=t1)] == ["start"]
    assert [e.action for e in catalog.audit(until=t1)] == ["create", "create"]
    assert catalog.audit(since=t1 + timedelta(seconds=1)) == []
    assert len(catalog.audit(limit=1)) == 1


def test_refusals_are_audited(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    with pytest.raises(CatalogError):
        catalog.activate("team_scores", 7, "mallory")
    with pytest.raises(CatalogError):
        catalog.request_restart("team_scores", "mallory")  # it is stopped
    refused = catalog.audit(outcome="refused")
    assert [(e.action, e.actor) for e in refused] == [
        ("restart_requested", "mallory"),
        ("activate", "mallory"),
    ]
    assert refused[1].data["code"] == "not_found"


def test_audit_events_cannot_be_changed_or_deleted(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    before = catalog.audit()
    assert not any(hasattr(catalog, n) for n in ("update_audit", "delete_audit", "purge_audit"))
    for sql in (
        "UPDATE audit_events SET actor = 'mallory'",
        "DELETE FROM audit_events",
    ):
        with pytest.raises(Exception, match="append-only"), catalog.engine.begin() as conn:
            conn.execute(text(sql))
    assert catalog.audit() == before
    if catalog.engine.dialect.name == "postgresql":
        with pytest.raises(Exception, match="append-only"), catalog.engine.begin() as conn:
            conn.execute(text("TRUNCATE audit_events"))
        assert catalog.audit() == before


def test_record_audit_for_outside_actions(catalog: Catalog) -> None:
    event = catalog.record_audit(
        "airflow:supervisor", "kill", job="team_scores", outcome="failed",
        message="pid 123 ignored SIGTERM", data={"pid": 123},
    )
    assert catalog.audit(actor="airflow:supervisor") == [event]
    with pytest.raises(CatalogError) as err:
        catalog.record_audit("x", "kill", outcome="maybe")
    assert err.value.code == "invalid"
    with pytest.raises(CatalogError):
        catalog.record_audit("", "kill")
