"""``s3a://`` against a real S3-compatible server (S3Proxy, started by the suite on a free port
on 127.0.0.1): jobs run through the real entry point (``python -m jobs.run``, a process whose
Spark session gets the S3A connector and the server's endpoint and credentials from the
settings and the environment) keep their results, late records and dead letters there, on both
execution paths; a checkpoint there survives a restart; an unreachable endpoint or bucket is
one error naming the setting before any batch; the Python side (pyarrow's S3 client) reads
what the JVM wrote."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from jobs.config import ConfigError, Settings
from jobs.storage import join, storage_for
from jobs.storage.manifest import PATH_FILE
from jobs.storage.s3 import S3Storage
from jobs.storage.s3server import BUCKET, S3Server

from .jobfiles import FILES, FINAL_PANES, T0, land
from .s3jobs import S3Run, catalog, run_job, run_scores_on_s3, spec

pytestmark = pytest.mark.spark
FAST_FAIL = json.dumps({"spark.hadoop.fs.s3a.attempts.maximum": "1",
                        "spark.hadoop.fs.s3a.retry.limit": "1",
                        "spark.hadoop.fs.s3a.connection.establish.timeout": "2s"})
"""S3A retries a failing endpoint for minutes by default; the error tests want its first."""


def s3_panes(st: S3Storage, panes: str) -> list[dict[str, Any]]:
    """Every pane of a Parquet sink on S3, read part by part with pyarrow (no Spark)."""
    rows: list[dict[str, Any]] = []
    for batch in st.list(panes):
        for part in st.list(join(panes, batch)):
            if part.endswith(".parquet"):
                data = st.read_bytes(join(panes, batch, part))
                rows.extend(pq.read_table(io.BytesIO(data)).to_pylist())
    return rows


def s3_side(st: S3Storage, out: str, kind: str) -> list[dict[str, Any]]:
    """Every side record of ``kind`` under ``out``, batch by batch, read with pyarrow."""
    rows: list[dict[str, Any]] = []
    for batch in sorted(st.list(join(out, kind)), key=lambda b: int(b.split("=")[1])):
        for part in st.list(join(out, kind, batch)):
            if part.startswith("part-") and part.endswith(".jsonl"):
                text = st.read_text(join(out, kind, batch, part))
                rows.extend(json.loads(line) for line in text.splitlines() if line.strip())
    return rows


def on_time(rows: list[dict[str, Any]]) -> dict[tuple[Any, int], dict[str, Any]]:
    out = {}
    for r in rows:
        if r["timing"] == "ON_TIME" and not r["retraction"]:
            start = r["window_start"]
            ms = int(start.timestamp() * 1000) if hasattr(start, "timestamp") else int(start)
            values = json.loads(r["values"]) if isinstance(r["values"], str) else r["values"]
            out[(json.loads(r["key"]), ms - T0)] = {k: values[k] for k in ("total", "n")}
    return out


def test_pyarrow_backend_keeps_the_storage_contract_on_s3(s3: S3Server) -> None:
    st = storage_for(f"s3a://{BUCKET}/contract", s3=s3.options())
    assert isinstance(st, S3Storage)
    root = f"s3a://{BUCKET}/contract/pyarrow"
    f = join(root, "a", "b", "x.json")
    assert not st.exists(f) and st.list(join(root, "a")) == [] and st.size_under(root) == 0
    with pytest.raises(FileNotFoundError):
        st.read_text(f)
    st.write_text(f, '{"v": "ü"}')
    assert st.read_text(f) == '{"v": "ü"}' and st.exists(f) and not st.is_dir(f)
    assert st.is_dir(join(root, "a", "b"))
    st.write_text(f, "second")
    st.write_text(join(root, "a", "b", "10"), "")
    st.write_text(join(root, "a", "b", "9"), "nine")
    assert st.read_text(f) == "second"
    assert st.list(join(root, "a", "b")) == ["10", "9", "x.json"]
    assert st.size_under(root) == len("second") + len("nine")
    st.delete(f)
    st.delete(f)
    assert st.list(join(root, "a", "b")) == ["10", "9"]
    st.mkdirs(join(root, "empty"))
    assert st.is_dir(join(root, "empty")) and st.list(join(root, "empty")) == []


def test_wrong_credentials_are_refused_by_the_server(s3: S3Server) -> None:
    from dataclasses import replace

    st = S3Storage(replace(s3.options(), secret_key="not-the-secret"))
    with pytest.raises(OSError):
        st.write_text(f"s3a://{BUCKET}/refused/x", "no")


@pytest.mark.parametrize("engine", [
    False, pytest.param(True, marks=pytest.mark.heavy)], ids=["native", "engine"])
def test_a_job_keeps_results_late_records_and_dead_letters_on_s3(
        s3: S3Server, tmp_path: Path, request: pytest.FixtureRequest, engine: bool) -> None:
    """Checkpoint on the local disk, results root on ``s3a://``: Spark's Parquet panes through
    S3A, the gate's side files from the executors (the JVM gate through S3A on the native
    path, the engine host through pyarrow's S3 client), the probe through S3A on the driver.
    The native path's run is the suite's shared one (the UI test on S3 reads it too)."""
    run: S3Run = (run_scores_on_s3(s3, tmp_path, f"s3a://{BUCKET}/engine/results", engine=True)
                  if engine else request.getfixturevalue("s3_native_run"))
    proc, home, store, results = run.proc, run.home, run.store, run.results
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ("engine path" if engine else "native path") in proc.stdout

    out = join(results, "scores", store)
    st = S3Storage(s3.options())
    assert on_time(s3_panes(st, join(out, "panes"))) == FINAL_PANES
    assert not any((home / "results").glob("**/*.parquet"))  # nothing landed locally
    dead = s3_side(st, out, "dead_letters")
    assert sorted(d["reason"] for d in dead) == [
        "key is null or did not evaluate", "unparsable record"]
    late = s3_side(st, out, "late")
    assert [(x["key"], x["event_time"] - T0, x["reason"]) for x in late] == [
        ('"a"', 3000, "expired")]


def test_a_missing_bucket_is_one_error_naming_the_setting(
        s3: S3Server, tmp_path: Path) -> None:
    land(tmp_path / "in", FILES)
    home = tmp_path / "home"
    catalog(home, spec(tmp_path / "in"))
    missing = run_job(s3, home, tmp_path / "bucket.log",
                      TIDEMARK_RESULTS_ROOT="s3a://no-such-bucket/results",
                      TIDEMARK_SPARK_CONF=FAST_FAIL)
    assert missing.returncode != 0
    said = missing.stdout + missing.stderr
    assert "TIDEMARK_RESULTS_ROOT: s3a://no-such-bucket/results/scores/" in said
    assert "is not reachable" in said
    assert not list((home / "checkpoints").glob("*/offsets/0"))  # no batch ran


@pytest.mark.heavy
def test_an_endpoint_nobody_answers_is_one_error_naming_the_setting(
        s3: S3Server, tmp_path: Path) -> None:
    land(tmp_path / "in", FILES)
    home = tmp_path / "home"
    catalog(home, spec(tmp_path / "in"))
    closed = S3Server(endpoint="http://127.0.0.1:9", access_key=s3.access_key,
                      secret_key=s3.secret_key, process=s3.process, base=s3.base)
    down = run_job(closed, home, tmp_path / "down.log",
                   TIDEMARK_RESULTS_ROOT=f"s3a://{BUCKET}/down", TIDEMARK_SPARK_CONF=FAST_FAIL)
    assert down.returncode != 0
    said = down.stdout + down.stderr
    assert f"TIDEMARK_RESULTS_ROOT: s3a://{BUCKET}/down/scores/" in said
    assert not list((home / "checkpoints").glob("*/offsets/0"))


def test_a_bad_s3_endpoint_setting_names_where_it_came_from(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="TIDEMARK_S3_ENDPOINT: 'minio:9000' is not an http"):
        Settings.from_env({"TIDEMARK_S3_ENDPOINT": "minio:9000"})
    config = tmp_path / "t.toml"
    config.write_text('[s3]\nendpoint = "ftp://x"\npath_style = true\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"t\.toml: s3\.endpoint: 'ftp://x'"):
        Settings.from_env({"TIDEMARK_CONFIG": str(config)})


def test_s3_settings_file_and_environment_with_credentials_from_the_secrets_file(
        tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.write_text("AWS_ACCESS_KEY_ID=from-file\nAWS_SECRET_ACCESS_KEY=file-secret\n",
                       encoding="utf-8")
    config = tmp_path / "t.toml"
    config.write_text(f'secrets_file = "{secrets}"\n[s3]\nendpoint = "http://s3.local:9000"\n'
                      'region = "eu-west-3"\npath_style = true\n', encoding="utf-8")
    settings = Settings.from_env({"TIDEMARK_CONFIG": str(config),
                                  "TIDEMARK_S3_REGION": "eu-north-1"})
    opts = settings.s3(env={})
    assert (opts.endpoint, opts.region, opts.path_style) == (
        "http://s3.local:9000", "eu-north-1", True)
    assert (opts.access_key, opts.secret_key) == ("from-file", "file-secret")
    assert "file-secret" not in repr(opts)
    env_opts = settings.s3(env={"AWS_ACCESS_KEY_ID": "env", "AWS_SECRET_ACCESS_KEY": "env-s"})
    assert (env_opts.access_key, env_opts.secret_key) == ("env", "env-s")  # env wins
    conf = opts.spark_conf()
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://s3.local:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.secret.key"] == "file-secret"


@pytest.mark.heavy
def test_a_checkpoint_on_s3_survives_a_restart(s3: S3Server, tmp_path: Path) -> None:
    """Checkpoint root and results root on ``s3a://``: Spark's offsets and commits logs and
    state through its checkpoint file manager on S3A, tidemark's manifest through the Hadoop
    backend's single-PUT writes; a second run with more input resumes from there."""
    home = tmp_path / "home"
    store = catalog(home, spec(tmp_path / "in"))
    roots = {"TIDEMARK_CHECKPOINT_ROOT": f"s3a://{BUCKET}/restart/checkpoints",
             "TIDEMARK_RESULTS_ROOT": f"s3a://{BUCKET}/restart/results"}
    land(tmp_path / "in", FILES[:2])
    first = run_job(s3, home, tmp_path / "first.log", **roots)
    assert first.returncode == 0, first.stderr[-3000:]
    ckpt = join(roots["TIDEMARK_CHECKPOINT_ROOT"], store)
    st = S3Storage(s3.options())
    done = sorted(int(n) for n in st.list(join(ckpt, "commits")) if n.isdigit())
    assert done and "native" in st.read_text(join(ckpt, PATH_FILE))
    assert not (home / "checkpoints").exists()

    land(tmp_path / "in", FILES)
    again = run_job(s3, home, tmp_path / "again.log", **roots)
    assert again.returncode == 0, again.stderr[-3000:]
    assert max(int(n) for n in st.list(join(ckpt, "commits")) if n.isdigit()) > done[-1]
    out = join(roots["TIDEMARK_RESULTS_ROOT"], "scores", store)
    assert on_time(s3_panes(st, join(out, "panes"))) == FINAL_PANES
