"""Every setting beyond locations and Spark reaches the module that owns it from the settings
file, with the environment winning, and a wrong value is one error naming the variable or file
key: the supervisor's policy, log rotation and level, the job command, the UI's sessions and
single sign-on, the embedded-catalog rule, the Kafka secrets file, the JVM archive switch,
the local Airflow's login and the CLI's actor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.config import OTHER_SETTINGS, VARIABLES, ConfigError, Settings

FILE = """
home = "{home}"
db_url = "sqlite:///{home}/shared.db"
user = "alice"
secrets_file = "{home}/secrets.env"
jvm_cds = false

[log]
level = "warning"
max_bytes = 1000
keep = 4

[supervisor]
crash_loop_limit = 3
backoff_base_ms = 2000
job_command = ["/opt/python", "-m", "jobs.run", "{{job}}", "--version", "{{version}}"]

[airflow]
port = 9090
user = "ops"
password = "pw-from-file"

[ui]
session_idle = "30m"
secure_cookie = true
oidc_metadata_url = "https://idp.example/.well-known/openid-configuration"
oidc_client_id = "tidemark"
oidc_client_secret = "s"
oidc_redirect_uri = "https://tidemark.example/oauth2callback"
sso_roles = "admins=admin"

[migration]
poll_s = 0.5
"""


@pytest.fixture
def settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file above as this process's TIDEMARK_CONFIG, with none of its variables set."""
    home = tmp_path / "h"
    home.mkdir()
    path = tmp_path / "tidemark.toml"
    path.write_text(FILE.format(home=home), encoding="utf-8")
    for var in (*VARIABLES, "TIDEMARK_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TIDEMARK_CONFIG", str(path))
    return path


def test_file_values_reach_their_modules(settings_file: Path) -> None:
    from jobs.lifecycle.policy import RestartPolicy
    from jobs.lifecycle.wiring import command_from_env
    from jobs.logsetup import Rotation, configure_logging
    from ui.services import uses_embedded_catalog
    from ui.sso import SsoSettings
    from ui.web_session import SessionSettings

    policy = RestartPolicy.from_env()
    assert (policy.crash_loop_limit, policy.backoff_base_ms) == (3, 2000)
    assert policy.stop_timeout_ms == RestartPolicy().stop_timeout_ms  # not in the file
    assert Rotation.from_env() == Rotation(max_bytes=1000, backups=3, keep=4)
    assert configure_logging("cli") == 30  # WARNING
    assert list(command_from_env()("team_scores", 2)) == [
        "/opt/python", "-m", "jobs.run", "team_scores", "--version", "2"]
    session = SessionSettings.from_env()
    assert session.idle_ms == 30 * 60_000 and session.secure_cookie
    sso = SsoSettings.from_env()
    assert sso is not None and sso.client_id == "tidemark" and sso.roles == {"admins": "admin"}
    assert not uses_embedded_catalog()  # db_url is configured, in the file


def test_the_environment_wins_over_the_file(
        settings_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.lifecycle.policy import RestartPolicy
    from jobs.logsetup import Rotation
    from jobs.spark import cds
    from ui.web_session import SessionSettings

    assert not cds.enabled()  # jvm_cds = false in the file
    monkeypatch.setenv("TIDEMARK_JVM_CDS", "on")
    monkeypatch.setenv("TIDEMARK_CRASH_LOOP_LIMIT", "7")
    monkeypatch.setenv("TIDEMARK_LOG_KEEP", "9")
    monkeypatch.setenv("TIDEMARK_UI_SECURE_COOKIE", "0")
    assert cds.enabled()
    policy = RestartPolicy.from_env()
    assert (policy.crash_loop_limit, policy.backoff_base_ms) == (7, 2000)  # 2000: the file's
    assert Rotation.from_env().keep == 9 and Rotation.from_env().max_bytes == 1000
    assert not SessionSettings.from_env().secure_cookie
    s = Settings.from_env()
    assert s.setting_name("TIDEMARK_LOG_KEEP") == "TIDEMARK_LOG_KEEP"
    assert s.setting_name("TIDEMARK_LOG_MAX_BYTES") == f"{settings_file}: log.max_bytes"


def test_secrets_file_and_airflow_login_from_the_file(
        settings_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.kafka.secrets import resolve_options
    from jobs.lifecycle.airflow_local import airflow_env

    home = Settings.from_env().home
    (home / "secrets.env").write_text("KEY_PW=from-the-secrets-file\n", encoding="utf-8")
    got = resolve_options({"ssl.key.password": "${secret:KEY_PW}"}, "source.options")
    assert got == {"ssl.key.password": "from-the-secrets-file"}

    env = airflow_env()
    assert env["AIRFLOW__API__PORT"] == "9090"
    stored = json.loads((home / "airflow" / "simple_auth_manager_passwords.json").read_text())
    assert stored == {"ops": "pw-from-file"}


def test_the_cli_acts_as_the_configured_user(
        settings_file: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``user`` in the file is the CLI's ``--as``: a user the catalog does not know is refused
    by name; ``TIDEMARK_USER`` in the environment replaces it."""
    from jobs.catalog import Catalog
    from jobs.cli import main

    Catalog(Settings.from_env().db_url, upgrade=True).close()
    assert main(["job", "show", "team_scores"]) != 0  # alice: not a catalog user
    assert "alice" in capsys.readouterr().err
    monkeypatch.setenv("TIDEMARK_USER", "bob")
    assert main(["job", "show", "team_scores"]) != 0
    assert "bob" in capsys.readouterr().err


@pytest.mark.parametrize(("env", "file", "setting", "words"), [
    ({"TIDEMARK_LOG_KEEP": "many"}, "", "TIDEMARK_LOG_KEEP", "not an integer: 'many'"),
    ({"TIDEMARK_MIGRATION_TIMEOUT_S": "1h"}, "", "TIDEMARK_MIGRATION_TIMEOUT_S", "not a number"),
    ({}, '[supervisor]\ncrash_loop_limit = "three"\n', "supervisor.crash_loop_limit",
     "must be an integer"),
    ({}, "[ui]\nsecure_cookie = \"yes\"\n", "ui.secure_cookie", "true or false"),
    ({}, "[supervisor]\njob_command = \"python run.py\"\n", "supervisor.job_command",
     "array of strings"),
    ({}, "[log]\nrotate = 3\n", "log.rotate", "unknown key (known in [log]: backups, keep"),
    ({}, "log = 3\n", "log", "must be a table"),
    ({}, "user = 3\n", "user", "must be a string"),
])
def test_a_bad_value_names_its_setting(
        tmp_path: Path, env: dict[str, str], file: str, setting: str, words: str) -> None:
    path = tmp_path / "tidemark.toml"
    path.write_text(file, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        Settings.from_env({**env, "TIDEMARK_CONFIG": str(path)})
    assert setting in err.value.setting and words in str(err.value)


def test_the_cli_reports_a_bad_setting_before_running(
        settings_file: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from jobs.cli import main

    monkeypatch.setenv("TIDEMARK_LOG_MAX_BYTES", "big")
    assert main(["job", "list"]) == 2
    assert "TIDEMARK_LOG_MAX_BYTES: not an integer: 'big'" in capsys.readouterr().err


def test_every_setting_is_a_documented_variable_with_a_file_key() -> None:
    """The variables that are not settings are the launcher's, the demo's, make install's, the
    Spark benchmark's profile switch, the Spark worker daemon's pre-load switch and the engine
    processes' malloc switch."""
    typed = {"TIDEMARK_CONFIG", "TIDEMARK_HOME", "TIDEMARK_DB_URL", "TIDEMARK_CHECKPOINT_ROOT",
             "TIDEMARK_RESULTS_ROOT", "TIDEMARK_SPARK_MASTER", "TIDEMARK_SPARK_CONF",
             "TIDEMARK_WEBHDFS_URL", "AIRFLOW_HOME"}
    not_settings = {"TIDEMARK_JOB", "TIDEMARK_VERSION", "TIDEMARK_LAUNCHED", "TIDEMARK_JAR_CACHE",
                    "TIDEMARK_DEMO_KAFKA", "TIDEMARK_ENGINE_PROFILE", "TIDEMARK_WORKER_PRELOAD",
                    "TIDEMARK_MALLOC_TUNING"}
    assert set(VARIABLES) == typed | not_settings | set(OTHER_SETTINGS)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "storage.md").read_text("utf-8")
    keys = [f"`[{k.replace('.', '] ')}`" if "." in k else f"`{k}`" for k, _ in OTHER_SETTINGS.values()]
    assert [k for k in keys if k not in doc] == []
