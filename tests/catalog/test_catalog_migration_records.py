"""Store migrations as recorded in the catalog: steps, progress, cut-over, roll back."""

from __future__ import annotations

import pytest
from catalog_defs import team_scores

from jobs.catalog import Catalog, CatalogError

CUTOVER = 1_767_226_000_000


@pytest.fixture
def planned(catalog: Catalog) -> int:
    catalog.create_job(team_scores(), "alice")
    catalog.save_version("team_scores", team_scores(size="5m"), "bob", base_version=1)
    return catalog.create_migration("team_scores", 1, 2, "olga").id


def test_migration_steps_progress_and_cut_over(catalog: Catalog, planned: int) -> None:
    m = catalog.migration(planned)
    assert (m.state, m.from_version, m.to_version) == ("planned", 1, 2)
    assert m.from_store == catalog.version("team_scores", 1).store_name
    assert m.to_store == catalog.version("team_scores", 2).store_name
    assert catalog.pending_outbox()[-1].payload["migration_id"] == planned

    catalog.update_migration(planned, "replaying", "airflow:migrate", total_files=10)
    catalog.update_migration(planned, "replaying", "airflow:migrate", replayed_files=4,
                             new_watermark=1000, old_watermark=5000)
    m = catalog.update_migration(planned, "caught_up", "airflow:migrate", replayed_files=10,
                                 new_watermark=5000)
    assert (m.replayed_files, m.total_files, m.new_watermark, m.old_watermark) == (10, 10, 5000, 5000)
    assert catalog.job("team_scores").active_version == 1

    m = catalog.update_migration(planned, "cut_over", "airflow:migrate", cutover_watermark=CUTOVER)
    assert catalog.job("team_scores").active_version == 2
    activated = catalog.pending_outbox()[-1]
    assert activated.kind == "version_activated"
    assert activated.payload["cutover_watermark"] == CUTOVER
    assert m.owner_of(CUTOVER) == 1 and m.owner_of(CUTOVER + 1) == 2

    m = catalog.update_migration(planned, "done", "airflow:migrate")
    assert m.finished
    # each state change is one step and one audit event; progress updates are neither
    assert [s.state for s in m.steps] == ["planned", "replaying", "caught_up", "cut_over", "done"]
    audited = [e.data.get("to") for e in catalog.audit(job="team_scores", action="migration_step")]
    assert audited == ["done", "cut_over", "caught_up", "replaying"]
    assert catalog.migrations("team_scores", unfinished=True) == []


def test_invalid_transitions_are_refused(catalog: Catalog, planned: int) -> None:
    with pytest.raises(CatalogError) as err:
        catalog.update_migration(planned, "done", "airflow:migrate")
    assert err.value.code == "state"
    assert "is planned; it cannot go to done" in str(err.value)
    catalog.update_migration(planned, "replaying", "x")
    catalog.update_migration(planned, "caught_up", "x")
    with pytest.raises(CatalogError) as err:
        catalog.update_migration(planned, "cut_over", "x")  # no cut-over watermark
    assert err.value.code == "invalid"
    with pytest.raises(CatalogError) as err:
        catalog.update_migration(planned, "failed", "x")  # no error given
    assert err.value.code == "invalid"
    assert catalog.migration(planned).state == "caught_up"
    assert len(catalog.audit(job="team_scores", outcome="refused")) == 3


def test_failed_migration_resumes_and_blocks_others(catalog: Catalog, planned: int) -> None:
    catalog.update_migration(planned, "replaying", "x")
    m = catalog.update_migration(planned, "failed", "x", error="executor lost")
    assert (m.state, m.error) == ("failed", "executor lost")
    assert catalog.audit(action="migration_step")[0].outcome == "failed"
    catalog.save_version("team_scores", team_scores(size="10m"), "bob", base_version=2)
    with pytest.raises(CatalogError) as err:
        catalog.create_migration("team_scores", 1, 3, "olga")
    assert err.value.code == "state" and f"#{planned}" in str(err.value)
    # the same migration again is the existing one (idempotent planning)
    assert catalog.create_migration("team_scores", 1, 2, "olga").id == planned
    assert catalog.update_migration(planned, "replaying", "x").state == "replaying"


def test_roll_back_after_cut_over_restores_the_old_version(catalog: Catalog, planned: int) -> None:
    for state in ("replaying", "caught_up"):
        catalog.update_migration(planned, state, "x")
    catalog.update_migration(planned, "cut_over", "x", cutover_watermark=CUTOVER)
    assert catalog.job("team_scores").active_version == 2
    m = catalog.update_migration(planned, "rolled_back", "olga", message="results looked wrong")
    assert catalog.job("team_scores").active_version == 1
    assert m.owner_of(CUTOVER + 1) == 1
    event = catalog.audit(job="team_scores", limit=1)[0]
    assert (event.action, event.actor, event.message) == ("rollback", "olga", "results looked wrong")
    assert catalog.pending_outbox()[-1].payload["rollback"] is True


def test_create_migration_checks_stores(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    catalog.save_version("team_scores", team_scores(delay="5s"), "bob", base_version=1)
    with pytest.raises(CatalogError) as err:
        catalog.create_migration("team_scores", 1, 2, "olga")  # same store
    assert err.value.code == "invalid"
    catalog.save_version("team_scores", team_scores(size="5m"), "bob", base_version=2)
    with pytest.raises(CatalogError) as err:
        catalog.create_migration("team_scores", 1, 3, "olga", to_store="wrong")
    assert err.value.code == "invalid"
    assert catalog.migrations() == []
