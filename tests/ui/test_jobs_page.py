"""Jobs page: the overview a user checks, and start / stop / restart / roll back by role."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from jobs.catalog import Catalog
from tests.ui.helpers import APP, app_as, button, landing, team_scores, texts, widget

JOBS = "views/jobs.py"


def overview(at: AppTest) -> dict[str, object]:
    frame = next(d.value for d in at.dataframe if "watermark lag" in d.value.columns)
    assert len(frame) == 1
    return dict(frame.iloc[0])


def test_overview_shows_status_version_store_watermark_and_late_counts(
    cat: Catalog, ran_job: str
) -> None:
    at = app_as("viewer", JOBS)
    assert not at.exception
    row = overview(at)
    store = cat.active_version(ran_job).store_name
    assert row["job"] == "team_scores"
    assert row["status"] == "running" and row["desired"] == "running"
    assert row["active version"] == 1 and row["store"] == store
    # the last batch: 75 rows/s, watermark 00:02:30 (see the ran_job fixture)
    assert row["rows/s"] == "75.0/s"
    assert row["watermark"] == "2026-01-01T00:02:30.000Z"
    assert row["late accepted"] == 1 and row["late dropped"] == 1 and row["dead letters"] == 1
    assert row["restarts"] == 0
    assert row["last heartbeat"] != "—"


def test_viewer_sees_controls_disabled(ran_job: str) -> None:
    at = app_as("viewer", JOBS)
    for label in ("Start", "Stop", "Restart"):
        assert button(at, label).disabled, label


def test_operator_stops_and_starts_with_actor_recorded(cat: Catalog, ran_job: str) -> None:
    at = app_as("operator", JOBS)
    assert button(at, "Start").disabled  # already desired running
    button(at, "Stop").click().run()
    assert not at.exception
    assert cat.job(ran_job).desired_state == "stopped"
    (event,) = cat.audit(job=ran_job, action="stop")
    assert event.actor == "operator"
    assert any("Stop team_scores: done" in s.value for s in at.success)
    button(at, "Start").click().run()
    assert cat.job(ran_job).desired_state == "running"
    button(at, "Restart").click().run()
    assert cat.audit(job=ran_job, action="restart_requested")[0].actor == "operator"


def test_user_demoted_while_signed_in_loses_the_controls(cat: Catalog, ran_job: str) -> None:
    """The role is read from the catalog on every run, not remembered from the sign-in."""
    at = app_as("operator", JOBS)
    cat.set_role("operator", "viewer", "admin")  # demoted while the page is open
    button(at, "Stop").click().run()
    assert cat.job(ran_job).desired_state == "running"
    assert cat.audit(job=ran_job, action="stop") == []
    assert button(at, "Stop").disabled
    assert "Signed in as **operator** (viewer)" in texts(at)


def test_roll_back_needs_confirmation(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    src = landing(tmp_path / "landing", [])
    cat.create_job(team_scores(src), "editor")
    cat.save_version("team_scores", team_scores(src) | {"description": "v2"}, "editor",
                     base_version=1)
    cat.activate("team_scores", 2, "operator")
    at = app_as("operator", JOBS)
    assert widget(at, "selectbox", "Version to roll back to").value == 1
    assert "Same state store" in texts(at)
    assert button(at, "Roll back").disabled
    widget(at, "checkbox", "I want to roll team_scores back to v1").check().run()
    button(at, "Roll back").click().run()
    assert not at.exception
    assert cat.job("team_scores").active_version == 1
    assert cat.audit(job="team_scores", action="rollback")[0].actor == "operator"


def test_editor_cannot_roll_back(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    src = landing(tmp_path / "landing", [])
    cat.create_job(team_scores(src), "editor")
    cat.save_version("team_scores", team_scores(src) | {"description": "v2"}, "editor",
                     base_version=1)
    cat.activate("team_scores", 2, "operator")
    at = app_as("editor", JOBS)
    assert widget(at, "checkbox", "I want to roll team_scores back to v1").disabled
    assert button(at, "Roll back").disabled


def test_empty_catalog_tells_what_to_do(users: dict[str, str]) -> None:
    at = app_as("editor", JOBS)
    assert "Create one on the **Define / edit** page" in texts(at)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["tm_user"] = {"name": "viewer", "role": "viewer"}
    at.run()
    assert "ask one, or ask an admin" in texts(at)


def test_edit_definition_opens_the_form_on_that_job(ran_job: str) -> None:
    at = app_as("editor", JOBS)
    button(at, "Edit definition").click().run()
    assert not at.exception
    assert any(t.value == "Define / edit" for t in at.title)
    assert widget(at, "selectbox", "Job").value == "team_scores"
    assert widget(at, "text_input", "Name").value == "team_scores"


def test_viewer_cannot_edit_definition(ran_job: str) -> None:
    at = app_as("viewer", JOBS)
    assert button(at, "Edit definition").disabled
