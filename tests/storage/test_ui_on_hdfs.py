"""The UI's Windows page on a results root on HDFS: a job runs with its checkpoint and results
on the real MiniDFSCluster (Parquet sink, then Delta sink), and the page, run by
``streamlit.testing`` with the settings pointing there, shows its panes, its expired late
record and its dead letters. The UI process has no Spark: Parquet parts and side files come
over WebHDFS (``webhdfs_url``), the Delta table through delta-rs's own HDFS client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from jobs.catalog import Catalog
from jobs.config import Settings
from jobs.definition import load_definition
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions
from jobs.storage.minihdfs import MiniHdfs
from tests.ui.helpers import PASSWORD, app_as, texts

from .jobfiles import FILES, FINAL_PANES, T0, land

pytestmark = pytest.mark.spark


def _spec(source: Path, sink: str) -> dict[str, Any]:
    return {
        "name": "scores",
        "source": {"kind": "files", "path": str(source), "format": "json",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
        "sink": {"kind": sink},
    }


@pytest.mark.parametrize("sink", ["parquet", "delta"])
def test_windows_page_reads_panes_late_records_and_dead_letters_on_hdfs(
        spark: Any, hdfs: MiniHdfs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        sink: str) -> None:
    for var in ("TIDEMARK_CONFIG", "TIDEMARK_RESULTS_ROOT", "TIDEMARK_CHECKPOINT_ROOT"):
        monkeypatch.delenv(var, raising=False)
    db_url = f"sqlite:///{tmp_path / 'catalog.db'}"
    root = f"{hdfs.url}/ui-{sink}"
    # the UI's settings come from a file, as a deployment's would; the catalog from the env
    config = tmp_path / "tidemark.toml"
    config.write_text(f'results_root = "{root}/results"\n'
                      f'checkpoint_root = "{root}/checkpoints"\n'
                      f'webhdfs_url = "{hdfs.http}"\n', encoding="utf-8")
    monkeypatch.setenv("TIDEMARK_CONFIG", str(config))
    monkeypatch.setenv("TIDEMARK_DB_URL", db_url)
    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TIDEMARK_WEBHDFS_URL", raising=False)

    land(tmp_path / "in", FILES)
    spec = _spec(tmp_path / "in", sink)
    with Catalog(db_url, upgrade=True) as cat:
        cat.ensure_admin("admin", PASSWORD)
        cat.add_user("editor", PASSWORD, "editor", "admin")
        cat.add_user("viewer", PASSWORD, "viewer", "admin")
        version = cat.create_job(spec, "editor")

    settings = Settings.from_env()
    assert settings.results_root.startswith(hdfs.url) and settings.webhdfs_url == hdfs.http
    ctx = JobContext.create(load_definition(spec), settings, store=version.store_name)
    assert JobRunner(spark, ctx, RunOptions(until_idle=True)).run() == "idle"

    at = app_as("viewer", "views/windows.py")
    assert not at.exception, at.exception
    panes: pd.DataFrame = next(d.value for d in at.dataframe
                              if {"batch", "timing"} <= set(d.value.columns))
    on_time = {(json.loads(k), int(pd.Timestamp(s).value // 1_000_000) - T0): t
               for k, s, t, timing in zip(panes["key"], panes["window_start"],
                                          panes["v.total"], panes["timing"], strict=True)
               if timing == "ON_TIME"}
    assert on_time == {k: v["total"] for k, v in FINAL_PANES.items()}
    said = texts(at)
    assert "Late records in the results (1)" in said
    assert "Dead letters in the results (2)" in said
    late = next(d.value for d in at.dataframe if list(d.value.columns)[:2] == ["batch", "key"]
                and "expired" in set(d.value["reason"]))
    assert list(late["key"]) == ['"a"'] and list(late["batch"]) == [2]
    dead = [d.value for d in at.dataframe if "reason" in d.value.columns
            and "unparsable record" in set(d.value["reason"])]
    assert len(dead) == 1 and sorted(dead[0]["reason"]) == [
        "key is null or did not evaluate", "unparsable record"]
