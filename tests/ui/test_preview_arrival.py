"""The Define page's preview feeds the sample the way the job would: files of the source in
the job's micro-batches (``maxFilesPerTrigger`` files each), pasted lines as a plain log or as
micro-batches, and it says which model it used (docs/semantics.md, "Arrival model")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jobs.catalog import Catalog
from jobs.definition import load_definition
from jobs.engine.arrival import Arrival
from jobs.replay import replay_lines
from tests.ui.helpers import app_as, team_scores, widget
from ui.preview import run_preview, source_sample

DEFINE = "views/define.py"


def _land(root: Path, files: list[list[dict[str, Any]]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(files):
        p = root / f"part-{i:04d}.json"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(p, (1_700_000_000 + i, 1_700_000_000 + i))
    return root


def _spec(root: Path, files_per_trigger: str | None = None) -> dict[str, Any]:
    spec = team_scores(root) | {"watermark": {"delay": "0s"}, "lateness_basis": "event",
                                "allowed_lateness": "0s"}
    if files_per_trigger is not None:
        spec["source"] = {**spec["source"], "options": {"maxFilesPerTrigger": files_per_trigger}}
    return spec


FILES = [
    [{"team": "a", "score": 1, "et": "2026-01-01T00:00:50Z"},
     {"team": "a", "score": 2, "et": "2026-01-01T00:00:10Z"}],  # same micro-batch: not late
    [{"team": "a", "score": 4, "et": "2026-01-01T00:00:20Z"}],  # next batch: wm 00:50, late
]


def test_source_sample_is_cut_into_the_jobs_micro_batches(tmp_path: Path) -> None:
    defn = load_definition(_spec(_land(tmp_path / "in", FILES)))
    sample = source_sample(defn.source)
    assert sample is not None and sample.arrival == Arrival("batch")
    assert "micro-batch" in sample.model and "maxFilesPerTrigger" in sample.model
    pr = run_preview(defn, sample.lines, sample.arrival)
    assert [(x["event_time"] // 1000) % 60 for x in pr.late] == [20]
    assert [p["values"]["total"] for p in pr.panes] == [3]
    # what a plain log of the same records would say instead: 00:10 is late too
    plain = [o for o in replay_lines(defn, [r for f in FILES for r in f]) if o["type"] == "late"]
    assert len(plain) == 2


def test_two_files_per_trigger_make_one_micro_batch(tmp_path: Path) -> None:
    defn = load_definition(_spec(_land(tmp_path / "in", FILES), files_per_trigger="2"))
    sample = source_sample(defn.source)
    assert sample is not None and "2 files" in sample.model
    pr = run_preview(defn, sample.lines, sample.arrival)
    assert pr.late == [] and [p["values"]["total"] for p in pr.panes] == [7]


def test_the_page_says_which_model_and_pasted_lines_can_be_either(
        cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    cat.create_job(_spec(_land(tmp_path / "in", FILES)), "editor")
    at = app_as("editor", DEFINE)
    widget(at, "selectbox", "Job").select("team_scores").run()
    assert not at.exception, at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "Arrival model: the job's micro-batches" in captions
    assert {m.label: m.value for m in at.metric}["Late (dropped)"] == "1"

    widget(at, "radio", "Sample").set_value("Paste JSON lines").run()
    widget(at, "text_area", "JSON lines").input("\n".join(
        json.dumps(r) for r in FILES[0])).run()
    assert not at.exception, at.exception
    assert "Arrival model: a plain event log" in " ".join(c.value for c in at.caption)
    assert {m.label: m.value for m in at.metric}["Late (dropped)"] == "1"
    widget(at, "radio", "Arrival").set_value(
        "Micro-batches between $processing_time lines").run()
    assert "Arrival model: micro-batches" in " ".join(c.value for c in at.caption)
    assert {m.label: m.value for m in at.metric}["Late (dropped)"] == "0"
