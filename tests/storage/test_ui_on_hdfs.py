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

from jobs.config import Settings
from jobs.storage.minihdfs import MiniHdfs
from tests.ui.helpers import app_as, texts

from .hdfsjobs import HdfsRun
from .jobfiles import FINAL_PANES, T0

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("sink", ["parquet", "delta"])
def test_windows_page_reads_panes_late_records_and_dead_letters_on_hdfs(
        spark: Any, hdfs: MiniHdfs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest, sink: str) -> None:
    """Each sink's run is one the suite shares: the native-path Parquet run on HDFS (the job
    test on HDFS reads it too) and the Delta one (the Delta sink test reads it too)."""
    run: HdfsRun = request.getfixturevalue(
        "hdfs_delta_run" if sink == "delta" else "hdfs_native_run")
    assert run.exit_reason == "idle"
    for var in ("TIDEMARK_CONFIG", "TIDEMARK_RESULTS_ROOT", "TIDEMARK_CHECKPOINT_ROOT"):
        monkeypatch.delenv(var, raising=False)
    # the UI's settings come from a file, as a deployment's would; the catalog from the env
    config = tmp_path / "tidemark.toml"
    config.write_text(f'results_root = "{run.root}/results"\n'
                      f'checkpoint_root = "{run.root}/checkpoints"\n'
                      f'webhdfs_url = "{hdfs.http}"\n', encoding="utf-8")
    monkeypatch.setenv("TIDEMARK_CONFIG", str(config))
    monkeypatch.setenv("TIDEMARK_DB_URL", run.db_url)
    monkeypatch.setenv("TIDEMARK_HOME", str(run.home))
    monkeypatch.delenv("TIDEMARK_WEBHDFS_URL", raising=False)
    settings = Settings.from_env()
    assert settings.results_root == f"{run.root}/results" and settings.webhdfs_url == hdfs.http

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
