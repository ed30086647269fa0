"""Settings: a TOML file plus TIDEMARK_* variables, the environment winning; every mistake is
one error naming the variable or file key; every variable the code reads is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobs.config import VARIABLES, ConfigError, Settings

ROOT = Path(__file__).resolve().parents[2]

FILE = """
home = "{home}"
checkpoint_root = "hdfs://nn:8020/tm/ck"
results_root = "s3a://bucket/results"
spark_master = "spark://master:7077"
webhdfs_url = "http://nn:9870"

[spark]
"spark.executor.memory" = "2g"
"spark.sql.shuffle.partitions" = 8
"spark.speculation" = false

[jobs.team_scores.spark]
"spark.executor.memory" = "4g"
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tidemark.toml"
    path.write_text(text.format(home=tmp_path / "h"), encoding="utf-8")
    return path


def test_the_file_gives_values_and_the_environment_wins(tmp_path: Path) -> None:
    path = _file(tmp_path, FILE)
    s = Settings.from_env({"TIDEMARK_CONFIG": str(path)})
    assert s.home == tmp_path / "h"
    assert s.checkpoint_root == "hdfs://nn:8020/tm/ck"
    assert s.results_root == "s3a://bucket/results"
    assert s.spark_master == "spark://master:7077" and s.webhdfs_url == "http://nn:9870"
    assert s.db_url == f"sqlite:///{tmp_path / 'h' / 'catalog.db'}"
    assert s.spark_conf_for(None) == {"spark.executor.memory": "2g",
                                      "spark.sql.shuffle.partitions": "8",
                                      "spark.speculation": "false"}
    assert s.spark_conf_for("team_scores")["spark.executor.memory"] == "4g"
    assert s.spark_conf_for("other")["spark.executor.memory"] == "2g"
    assert s.setting_name("checkpoint_root") == f"{path}: checkpoint_root"

    env = {"TIDEMARK_CONFIG": str(path), "TIDEMARK_CHECKPOINT_ROOT": str(tmp_path / "ck"),
           "TIDEMARK_SPARK_MASTER": "local[2]",
           "TIDEMARK_SPARK_CONF": '{"spark.executor.memory": "1g", "spark.jars": "/x.jar"}'}
    s = Settings.from_env(env)
    assert s.checkpoint_root == str(tmp_path / "ck") and s.spark_master == "local[2]"
    assert s.results_root == "s3a://bucket/results"  # not overridden: the file's
    assert s.spark_conf_for(None)["spark.executor.memory"] == "1g"
    assert s.spark_conf_for(None)["spark.jars"] == "/x.jar"
    assert s.spark_conf_for("team_scores")["spark.executor.memory"] == "4g"  # the job's own
    assert s.setting_name("checkpoint_root") == "TIDEMARK_CHECKPOINT_ROOT"


def test_defaults_without_file_or_environment(tmp_path: Path) -> None:
    s = Settings.from_env({"TIDEMARK_HOME": str(tmp_path)})
    assert s.checkpoint_root == str(tmp_path / "checkpoints")
    assert s.results_root == str(tmp_path / "results")
    assert s.spark_master == "local[*]" and s.webhdfs_url is None and s.spark_conf == {}


@pytest.mark.parametrize(("env", "file", "setting", "words"), [
    ({"TIDEMARK_CHECKPOINT_ROOT": "s3://b/ck"}, None, "TIDEMARK_CHECKPOINT_ROOT", "s3a://"),
    ({"TIDEMARK_RESULTS_ROOT": "hdfs:///r"}, None, "TIDEMARK_RESULTS_ROOT", "needs a host"),
    ({}, 'checkpoint_root = "gopher://x/y"\n', "checkpoint_root", "unsupported scheme"),
    ({}, 'checkpoint_rot = "/x"\n', "checkpoint_rot", "unknown key"),
    ({}, '[spark]\n"executor.memory" = "2g"\n', "[spark] executor.memory", "spark.*"),
    ({}, 'spark_master = 7\n', "spark_master", "must be a string"),
    ({"TIDEMARK_SPARK_CONF": "{bad"}, None, "TIDEMARK_SPARK_CONF", "JSON"),
    ({"TIDEMARK_WEBHDFS_URL": "nn:9870"}, None, "TIDEMARK_WEBHDFS_URL", "http://"),
    ({}, "home = \n", "tidemark.toml", "not valid TOML"),
])
def test_a_bad_value_is_one_error_naming_its_setting(
        tmp_path: Path, env: dict[str, str], file: str | None, setting: str,
        words: str) -> None:
    full = dict(env)
    if file is not None:
        full["TIDEMARK_CONFIG"] = str(_file(tmp_path, file))
    with pytest.raises(ConfigError) as err:
        Settings.from_env(full)
    assert setting in err.value.setting and words in str(err.value)


def test_a_missing_settings_file_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="TIDEMARK_CONFIG: .* cannot be read"):
        Settings.from_env({"TIDEMARK_CONFIG": str(tmp_path / "nope.toml")})


def test_every_variable_the_code_reads_is_listed() -> None:
    """Every TIDEMARK_* name in the code (and AIRFLOW_HOME) is in jobs.config.VARIABLES and
    in docs/storage.md's table."""
    found: set[str] = set()
    for folder in ("jobs", "ui", "dags", "scripts", "benchmarks"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".sh") and path.is_file():
                found |= set(re.findall(r"\bTIDEMARK_[A-Z][A-Z0-9_]*[A-Z0-9]\b",
                                        path.read_text(encoding="utf-8")))
    assert found, "the scan found nothing"
    assert sorted(found - set(VARIABLES)) == []
    doc = (ROOT / "docs" / "storage.md").read_text(encoding="utf-8")
    assert [v for v in VARIABLES if f"`{v}`" not in doc] == []


def test_spark_conf_layers_platform_then_job_then_caller(tmp_path: Path) -> None:
    from jobs.spark.session import layer_conf

    s = Settings.from_env({"TIDEMARK_CONFIG": str(_file(tmp_path, FILE)),
                           "TIDEMARK_SPARK_CONF": '{"spark.jars": "/opt/extra.jar"}'})
    base = {"spark.jars": "/tm/tidemark.jar", "spark.sql.shuffle.partitions": "2",
            "spark.executor.memory": "1g"}
    conf = layer_conf(base, s.spark_conf_for("team_scores"),
                      {"spark.jars": "/d/delta.jar", "spark.speculation": "true"})
    assert conf["spark.jars"] == "/tm/tidemark.jar,/opt/extra.jar,/d/delta.jar"
    assert conf["spark.executor.memory"] == "4g"  # the job's own, over the platform's 2g
    assert conf["spark.sql.shuffle.partitions"] == "8"  # the settings', over tidemark's
    assert conf["spark.speculation"] == "true"  # the caller's, over the settings'
    assert layer_conf(base, s.spark_conf_for(None))["spark.executor.memory"] == "2g"
