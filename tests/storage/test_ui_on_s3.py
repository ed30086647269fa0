"""The UI's Windows page on a results root on ``s3a://``: a job (``python -m jobs.run``) writes
its Parquet panes, late record and dead letters to the suite's S3 server, and the page, run by
``streamlit.testing`` with its settings from a file and the credentials from the environment,
shows them. The UI process has no Spark: it reads Parquet parts and side files with pyarrow's
S3 client, a Delta table (written by delta-rs from the job's driver) with delta-rs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from jobs.spark.delta_sink import committed_version, read_table, storage_options, table_uri
from jobs.storage.s3server import BUCKET, S3Server
from tests.ui.helpers import app_as, texts

from .jobfiles import FINAL_PANES, T0
from .s3jobs import S3Run, run_scores_on_s3

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("sink", ["parquet", pytest.param("delta", marks=pytest.mark.heavy)])
def test_windows_page_reads_panes_late_records_and_dead_letters_on_s3(
        s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest, sink: str) -> None:
    """The Parquet sink's run is the suite's shared native-path run (the S3 job test reads it
    too); the Delta sink's is this test's own."""
    run: S3Run = (run_scores_on_s3(s3, tmp_path, f"s3a://{BUCKET}/ui-delta/results", sink=sink)
                  if sink == "delta" else request.getfixturevalue("s3_native_run"))
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    home, db_url, store, results = run.home, run.db_url, run.store, run.results
    if sink == "delta":  # one Delta commit per batch with panes, each carrying its batch id
        table = f"{results}/scores/{store}/panes"
        uri = table_uri(table)
        assert committed_version(uri, store, storage_options(table, s3.options())) == max(
            r["batch_id"] for r in read_table(table, s3.options()).to_pylist())

    # the UI's settings come from a file, as a deployment's would; credentials from the env
    config = tmp_path / "tidemark.toml"
    config.write_text(f'results_root = "{results}"\n'
                      f'[s3]\nendpoint = "{s3.endpoint}"\npath_style = true\n', encoding="utf-8")
    for var in ("TIDEMARK_RESULTS_ROOT", "TIDEMARK_CHECKPOINT_ROOT", "TIDEMARK_S3_ENDPOINT",
                "TIDEMARK_S3_PATH_STYLE", "TIDEMARK_S3_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TIDEMARK_CONFIG", str(config))
    monkeypatch.setenv("TIDEMARK_DB_URL", db_url)
    monkeypatch.setenv("TIDEMARK_HOME", str(home))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.secret_key)

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
