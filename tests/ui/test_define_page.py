"""Define / edit: field errors as you type, window parameters per type, store name, keeps the
store / needs a migration, saving with the actor and note, YAML import/export, live preview."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from jobs.catalog import Catalog
from jobs.definition import load_definition, store_name
from tests.ui.helpers import APP, app_as, button, landing, team_scores, texts, widget

DEFINE = "views/define.py"


def fill_new_job(at: AppTest, source: Path) -> None:
    widget(at, "text_input", "Name").input("team_scores").run()
    widget(at, "text_input", "Source path").input(str(source)).run()
    widget(at, "text_input", "Schema (Spark DDL)").input("team STRING, score INT, et TIMESTAMP").run()
    widget(at, "text_input", "Key (SQL expression)").input("team").run()
    widget(at, "text_input", "Event time (SQL expression or 'processing')").input("et").run()


def test_field_errors_appear_next_to_fields_as_you_type(users: dict[str, str]) -> None:
    at = app_as("editor", DEFINE)
    widget(at, "text_input", "Name").input("Team Scores").run()
    widget(at, "text_input", "Size").input("2 parsecs").run()
    errors = [e.value for e in at.error]
    assert any("name" in e.lower() or "[a-z]" in e for e in errors), errors
    assert any("2 parsecs" in e for e in errors), errors
    assert button(at, "Create job").disabled


def test_window_type_shows_only_its_parameters(users: dict[str, str]) -> None:
    at = app_as("editor", DEFINE)
    labels = {w.label for w in at.text_input}
    assert {"Size", "Align to"} <= labels and "Step" not in labels and "Gap" not in labels
    widget(at, "selectbox", "Window type").select("hopping").run()
    labels = {w.label for w in at.text_input}
    assert {"Size", "Step", "Align to"} <= labels and "Gap" not in labels
    widget(at, "selectbox", "Window type").select("session").run()
    labels = {w.label for w in at.text_input}
    assert "Gap" in labels and "Size" not in labels and "Step" not in labels
    widget(at, "selectbox", "Window type").select("tumbling").run()
    # the size typed before is kept while the field was hidden
    assert widget(at, "text_input", "Size").value == "1m"


def test_create_job_through_the_form(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    src = landing(tmp_path / "landing", [{"team": "a", "score": 3, "et": "2026-01-01T00:00:10Z"}])
    at = app_as("editor", DEFINE)
    fill_new_job(at, src)
    assert not at.exception
    expected = store_name(load_definition(_form_equivalent(src)))
    assert expected in texts(at)
    widget(at, "text_input", "Change note").input("first cut").run()
    button(at, "Create job").click().run()
    assert not at.exception, at.exception
    v = cat.active_version("team_scores")
    assert v.number == 1 and v.author == "editor" and v.note == "first cut"
    assert v.store_name == expected
    created = cat.audit(job="team_scores", action="create")
    assert created and created[0].actor == "editor"


def _form_equivalent(src: Path) -> dict[str, object]:
    """What the form's defaults plus fill_new_job mean, written by hand."""
    return {
        "name": "team_scores",
        "source": {"kind": "files", "path": str(src), "format": "json",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "n", "fn": "count"}],
    }


def test_edit_says_keeps_store_or_needs_migration(cat: Catalog, users: dict[str, str],
                                                  tmp_path: Path) -> None:
    src = landing(tmp_path / "landing", [{"team": "a", "score": 3, "et": "2026-01-01T00:00:10Z"}])
    (src / "part-0002.json").write_text('{"team": "b", "score": 1, "et": "2026-01-01T00:01:10Z"}\n')
    cat.create_job(team_scores(src), "editor")
    at = app_as("editor", DEFINE)
    widget(at, "selectbox", "Job").select("team_scores").run()
    assert widget(at, "text_input", "Size").value == "1m"
    assert widget(at, "text_input", "Name").disabled

    widget(at, "text_input", "Description").input("Team scores, renamed").run()
    body = texts(at)
    assert "keeps the store" in body and "needs a migration" not in body

    widget(at, "text_input", "Size").input("2m").run()
    body = texts(at)
    assert "needs a migration" in body and "replays 2 file(s)" in body, body
    new_store = store_name(load_definition(team_scores(src, size="2m") | {
        "description": "Team scores, renamed"}))
    assert new_store in body

    widget(at, "text_input", "Change note").input("bigger windows").run()
    button(at, "Save version").click().run()
    assert not at.exception, at.exception
    job = cat.job("team_scores")
    # a new store is not switched to at once: a migration is planned, v1 serves until cut-over
    assert job.latest_version == 2 and job.active_version == 1
    (mig,) = cat.migrations("team_scores")
    assert (mig.from_version, mig.to_version, mig.state) == (1, 2, "planned")
    assert "migration was planned" in texts(at)
    v2 = cat.version("team_scores", 2)
    assert v2.author == "editor" and v2.note == "bigger windows"
    assert v2.compatibility == "new_store" and v2.store_name == new_store


def test_emit_change_off_the_native_path_says_why_it_needs_a_migration(
        cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    src = landing(tmp_path / "landing", [{"team": "a", "score": 3, "et": "2026-01-01T00:00:10Z"}])
    cat.create_job(team_scores(src), "editor")  # emit: final, runs on Spark's native aggregation
    at = app_as("editor", DEFINE)
    widget(at, "selectbox", "Job").select("team_scores").run()
    widget(at, "selectbox", "Emit").select("current").run()
    body = texts(at)
    assert "needs a migration" in body, body
    assert "from the **native** path to the **engine** path" in body, body
    # a change that stays on one path says nothing about paths
    widget(at, "selectbox", "Emit").select("final").run()
    widget(at, "text_input", "Description").input("renamed").run()
    body = texts(at)
    assert "keeps the store" in body and "path on Spark" not in body and "**native**" not in body


def test_stale_edit_is_refused_with_a_clear_message(cat: Catalog, users: dict[str, str],
                                                    tmp_path: Path) -> None:
    src = landing(tmp_path / "landing", [])
    cat.create_job(team_scores(src), "editor")
    at = app_as("editor", DEFINE)
    widget(at, "selectbox", "Job").select("team_scores").run()
    # someone else saves version 2 meanwhile
    cat.save_version("team_scores", team_scores(src, size="5m"), "operator", base_version=1)
    widget(at, "text_input", "Size").input("3m").run()
    button(at, "Save version").click().run()
    errors = " ".join(e.value for e in at.error)
    assert "version 2" in errors, errors
    assert cat.job("team_scores").latest_version == 2


def test_yaml_import_fills_the_form_and_export_shows_it(users: dict[str, str], tmp_path: Path) -> None:
    at = app_as("editor", DEFINE)
    yaml_text = (
        "name: clicks\n"
        "source: {kind: files, path: /data/clicks, format: json, schema: 'user STRING, ts TIMESTAMP'}\n"
        "key: user\nevent_time: ts\n"
        "window: {type: session, gap: 5m}\n"
        "trigger: {emit: custom, early: {count: 10}, on_time: true}\n"
        "aggregations: [{name: clicks, fn: count}]\n"
    )
    widget(at, "text_area", "Paste a YAML or JSON definition").input(yaml_text).run()
    button(at, "Load into form").click().run()
    assert not at.exception
    assert widget(at, "text_input", "Name").value == "clicks"
    assert widget(at, "selectbox", "Window type").value == "session"
    assert widget(at, "text_input", "Gap").value == "5m"
    assert widget(at, "selectbox", "Emit").value == "custom"
    assert widget(at, "selectbox", "Early firing").value == "count"
    assert widget(at, "text_input", "Early: count").value == "10"
    exported = at.code[0].value
    assert load_definition(exported) == load_definition(yaml_text)


def test_yaml_import_of_garbage_says_why(users: dict[str, str]) -> None:
    at = app_as("editor", DEFINE)
    widget(at, "text_area", "Paste a YAML or JSON definition").input("- just\n- a list\n").run()
    button(at, "Load into form").click().run()
    assert any("mapping" in e.value for e in at.error)


def test_preview_runs_the_definition_over_the_source_sample(cat: Catalog, users: dict[str, str],
                                                            tmp_path: Path) -> None:
    src = landing(tmp_path / "landing", [
        {"team": "a", "score": 3, "et": "2026-01-01T00:00:10Z"},
        {"team": "a", "score": 4, "et": "2026-01-01T00:00:50Z"},
        {"team": "b", "score": 1, "et": "2026-01-01T00:01:10Z"},
    ])
    cat.create_job(team_scores(src), "editor")
    at = app_as("editor", DEFINE)
    widget(at, "selectbox", "Job").select("team_scores").run()
    metrics = {m.label: m.value for m in at.metric}
    # 1-minute tumbling sum/count, end of input closes both windows: a [0,1m) and b [1m,2m)
    assert metrics["Records"] == "3" and metrics["Panes"] == "2", metrics
    assert not at.exception, at.exception
    frame = next(d.value for d in at.dataframe if "v.total" in d.value.columns)
    by_key = {row["key"]: (row["v.total"], row["v.n"], row["timing"]) for _, row in frame.iterrows()}
    assert by_key == {'"a"': (7, 2, "ON_TIME"), '"b"': (1, 1, "ON_TIME")}


def test_viewer_cannot_open_define(users: dict[str, str]) -> None:
    at = app_as("viewer")
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page(DEFINE)


def test_role_comes_from_the_catalog_not_the_session(users: dict[str, str]) -> None:
    """A session that claims more than the catalog grants gets what the catalog says."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["tm_user"] = {"name": "viewer", "role": "admin"}
    at.run()
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page(DEFINE)


def test_taken_job_name_is_a_field_error(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    cat.create_job(team_scores(landing(tmp_path / "l", [])), "editor")
    at = app_as("editor", DEFINE)
    widget(at, "text_input", "Name").input("team_scores").run()
    assert any("exists" in e.value for e in at.error)
    assert button(at, "Create job").disabled


def test_preview_of_pasted_lines_with_processing_time(cat: Catalog, users: dict[str, str],
                                                      tmp_path: Path) -> None:
    """emit: current fires an EARLY pane per element (accumulating): 3, then 3+4."""
    spec = team_scores(landing(tmp_path / "l", [])) | {"trigger": {"emit": "current"}}
    cat.create_job(spec, "editor")
    at = app_as("editor", DEFINE)
    widget(at, "selectbox", "Job").select("team_scores").run()
    widget(at, "radio", "Sample").set_value("Paste JSON lines").run()
    lines = "\n".join([
        '{"$processing_time": "2026-01-01T00:00:00Z"}',
        '{"team": "a", "score": 3, "et": "2026-01-01T00:00:10Z"}',
        '{"$processing_time": "2026-01-01T00:00:01Z"}',
        '{"team": "a", "score": 4, "et": "2026-01-01T00:00:20Z"}',
    ])
    widget(at, "text_area", "JSON lines").input(lines).run()
    assert not at.exception
    frame = next(d.value for d in at.dataframe if "v.total" in d.value.columns)
    assert list(frame["timing"]) == ["EARLY", "EARLY"]
    assert list(frame["v.total"]) == [3, 7] and list(frame["pane_index"]) == [0, 1]


def test_a_new_form_shows_no_errors_before_anything_is_typed(users: dict[str, str]) -> None:
    at = app_as("editor", DEFINE)
    assert not at.exception
    assert [e.value for e in at.error] == []
    assert "must not be empty" not in " ".join(texts(at))
    assert any("still needed: name, source.path, source.schema" in i.value for i in at.info)
    assert button(at, "Create job").disabled
    widget(at, "text_input", "Name").input("scores").run()
    assert [e.value for e in at.error] == []  # the other fields are still untouched
    widget(at, "text_input", "Name").input("").run()  # typed, then emptied: now it says so
    assert any("must not be empty" in e.value for e in at.error), [e.value for e in at.error]

