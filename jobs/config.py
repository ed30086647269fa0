"""tidemark's settings: one validated object from a TOML file and ``TIDEMARK_*`` variables.

Precedence, highest first: the environment, the TOML file named by ``TIDEMARK_CONFIG`` (none by
default), the embedded defaults. A value that is wrong (a location with a bad URI, a Spark key
that is not ``spark.*``, an unknown key in the file) is a :class:`ConfigError` naming the
variable or file key, raised when the settings are loaded, i.e. before any job starts.

The settings file (every key optional)::

    home = "/srv/tidemark"
    db_url = "postgresql+psycopg://tidemark@db/tidemark"
    checkpoint_root = "hdfs://namenode:8020/tidemark/checkpoints"
    results_root = "hdfs://namenode:8020/tidemark/results"
    spark_master = "spark://spark-master:7077"
    webhdfs_url = "http://namenode:9870"
    airflow_home = "/srv/tidemark/airflow"

    [spark]                               # every job's Spark configuration (any spark.* key)
    "spark.executor.memory" = "2g"
    "spark.jars" = "/opt/jars/extra.jar"

    [jobs.team_scores.spark]              # one job's, over the platform's
    "spark.executor.memory" = "4g"

    [supervisor]                          # and [log], [ui], [airflow], [migration]: see
    crash_loop_limit = 3                  # OTHER_SETTINGS for every key and its variable

:data:`VARIABLES` lists every environment variable tidemark's code reads, with what it does
(docs/storage.md has the same table). The locations, the database and Spark are typed fields of
:class:`Settings`; every other setting (:data:`OTHER_SETTINGS`) is checked for its type here
and handed, as text under its variable's name (:attr:`Settings.values`), to the module that
owns its meaning (the supervisor's policy, log rotation, the UI's sessions, ...), which parses
it exactly as it parses the variable. Eight variables are not settings: ``TIDEMARK_JOB``,
``TIDEMARK_VERSION`` and ``TIDEMARK_LAUNCHED`` are written by the launcher into a job's
environment, ``TIDEMARK_DEMO_KAFKA`` by ``make demo`` (its broker's address),
``TIDEMARK_JAR_CACHE`` is read by ``make install``'s bundle fetch (``jobs.jvmdeps``, below this
module), and ``TIDEMARK_ENGINE_PROFILE`` by the engine path's Python workers when the Spark
benchmark profiles them (``jobs.spark.engine_path.profiling``), and
``TIDEMARK_WORKER_PRELOAD`` by Spark's Python worker daemon: the engine path's operator
carries ``engine:<window type>``, its packing stage ``arrow`` (``jobs.spark.worker_daemon``), and
``TIDEMARK_MALLOC_TUNING`` by the processes that run the engines (``jobs.engine.allocator``).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.storage import StorageError, validate
from jobs.storage.s3options import S3Options, s3_options

CONFIG_ENV = "TIDEMARK_CONFIG"

VARIABLES: dict[str, str] = {
    "TIDEMARK_CONFIG": "path of the TOML settings file (none: defaults and environment only)",
    "TIDEMARK_HOME": "data directory: catalog, checkpoints, results, logs (default ./data)",
    "TIDEMARK_DB_URL": "catalog database URL (default sqlite:///<home>/catalog.db)",
    "TIDEMARK_CHECKPOINT_ROOT": "checkpoint root: a local path or hdfs://, s3a://, file: URI "
                                "(default <home>/checkpoints)",
    "TIDEMARK_RESULTS_ROOT": "results root for sinks without sink.path, late and dead-letter "
                             "files: a local path or URI (default <home>/results)",
    "TIDEMARK_SPARK_MASTER": "Spark master (default local[*])",
    "TIDEMARK_SPARK_CONF": "JSON object of spark.* settings for every job, over the file's "
                           "[spark] table",
    "TIDEMARK_WEBHDFS_URL": "the NameNode's HTTP address (http://namenode:9870): how Spark's "
                            "Python workers and the UI reach hdfs:// locations",
    "TIDEMARK_S3_ENDPOINT": "s3a:// locations: an S3-compatible server's http(s):// URL "
                            "(default: AWS's regional endpoint); credentials from "
                            "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the secrets file",
    "TIDEMARK_S3_REGION": "s3a:// locations: the region (default us-east-1)",
    "TIDEMARK_S3_PATH_STYLE": "s3a:// locations: 1 addresses buckets by path "
                              "(http://endpoint/bucket/key), as most S3-compatible servers need",
    "AIRFLOW_HOME": "the local Airflow's home (default <home>/airflow)",
    "TIDEMARK_UI_PORT": "demo: the UI's port (jobs/demo/launcher.py)",
    "TIDEMARK_AIRFLOW_PORT": "demo: Airflow's port (jobs/demo/launcher.py)",
    "TIDEMARK_AIRFLOW_USER": "local Airflow login (jobs/lifecycle/airflow_local.py)",
    "TIDEMARK_AIRFLOW_PASSWORD": "local Airflow password (jobs/lifecycle/airflow_local.py)",
    "TIDEMARK_ADMIN_PASSWORD": "the UI admin's initial password (ui/services.py)",
    "TIDEMARK_USER": "the actor recorded in the audit log by the CLI (jobs/cli)",
    "TIDEMARK_JVM_CDS": "off: drivers start without the class-data sharing archive "
                        "(jobs/spark/cds.py)",
    "TIDEMARK_GATE": "python: the native path uses the Python gate (jobs/spark/jvm.py)",
    "TIDEMARK_JSON_PARSER": "spark: JSON files and Kafka values are parsed by Spark's "
                            "parser alone, without tidemark's plain-case parser "
                            "(jobs/spark/fast_json.py)",
    "TIDEMARK_JAR_CACHE": "where make install puts JVM bundles (jobs/jvmdeps)",
    "TIDEMARK_ENGINE_PROFILE": "benchmark only: a directory where the engine path's workers "
                               "write per-task CPU profiles "
                               "(jobs/spark/engine_path/profiling.py)",
    "TIDEMARK_WORKER_PRELOAD": "engine[:<window type>] or arrow (set on the engine path's "
                               "operator / packing stage): Spark's Python worker daemon loads "
                               "the engine kernels (all, or that window's; or only "
                               "pyarrow and pandas) once before it forks workers "
                               "(jobs/spark/worker_daemon.py)",
    "TIDEMARK_MALLOC_TUNING": "off: tidemark replay and the engine path's worker daemon keep "
                              "glibc's malloc defaults instead of keeping freed memory for the "
                              "engines' arrays (jobs/engine/allocator.py)",
    "TIDEMARK_JOB_COMMAND": "how the supervisor launches a job, JSON list "
                            "(jobs/lifecycle/policy.py)",
    "TIDEMARK_HEARTBEAT_TIMEOUT_MS": "supervisor: heartbeat timeout (jobs/lifecycle/policy.py)",
    "TIDEMARK_BACKOFF_BASE_MS": "supervisor: restart back-off base (jobs/lifecycle/policy.py)",
    "TIDEMARK_BACKOFF_MAX_MS": "supervisor: restart back-off cap (jobs/lifecycle/policy.py)",
    "TIDEMARK_CRASH_LOOP_LIMIT": "supervisor: crashes before a job is failed "
                                 "(jobs/lifecycle/policy.py)",
    "TIDEMARK_HEALTHY_AFTER_MS": "supervisor: a run this old that dies resets the crash count "
                                 "(jobs/lifecycle/policy.py)",
    "TIDEMARK_STOP_TIMEOUT_MS": "supervisor: grace between SIGTERM and SIGKILL "
                                "(jobs/lifecycle/policy.py)",
    "TIDEMARK_MIGRATION_POLL_S": "migration DAG: poll interval (dags/tidemark_migration.py)",
    "TIDEMARK_MIGRATION_TIMEOUT_S": "migration DAG: timeout (dags/tidemark_migration.py)",
    "TIDEMARK_JOB": "set by the launcher in a job's environment (jobs/lifecycle/process.py)",
    "TIDEMARK_VERSION": "set by the launcher in a job's environment (jobs/lifecycle/process.py)",
    "TIDEMARK_LAUNCHED": "set by the launcher in a job's environment (jobs/lifecycle/attach.py)",
    "TIDEMARK_DEMO_KAFKA": "set by `make demo` for its jobs and UI: the demo broker's address, "
                           "which the demo's Kafka job references as ${env:TIDEMARK_DEMO_KAFKA} "
                           "(jobs/demo/kafka.py)",
    "TIDEMARK_LOG_LEVEL": "log level of every tidemark process (jobs/logsetup.py)",
    "TIDEMARK_LOG_MAX_BYTES": "job logs: size past which a log is rotated (jobs/logsetup.py)",
    "TIDEMARK_LOG_BACKUPS": "job logs: rotated copies kept (jobs/logsetup.py)",
    "TIDEMARK_LOG_KEEP": "job logs: launch logs kept per job (jobs/logsetup.py)",
    "TIDEMARK_SECRETS_FILE": "file of NAME=value lines that ${secret:NAME} references read "
                             "(jobs/kafka/secrets.py)",
    "TIDEMARK_UI_SESSION_SECRET": "UI: the key that signs the session cookie (ui/web_session.py)",
    "TIDEMARK_UI_SESSION_IDLE": "UI: idle expiry of a sign-in (ui/web_session.py)",
    "TIDEMARK_UI_SESSION_MAX": "UI: absolute expiry of a sign-in (ui/web_session.py)",
    "TIDEMARK_UI_SECURE_COOKIE": "UI: 1 marks the session cookie Secure (ui/web_session.py)",
    "TIDEMARK_UI_OIDC_METADATA_URL": "UI single sign-on: the provider's metadata URL (ui/sso.py)",
    "TIDEMARK_UI_OIDC_CLIENT_ID": "UI single sign-on: client id (ui/sso.py)",
    "TIDEMARK_UI_OIDC_CLIENT_SECRET": "UI single sign-on: client secret (ui/sso.py)",
    "TIDEMARK_UI_OIDC_REDIRECT_URI": "UI single sign-on: redirect URI (ui/sso.py)",
    "TIDEMARK_UI_SSO_LABEL": "UI single sign-on: the sign-in button's label (ui/sso.py)",
    "TIDEMARK_UI_SSO_NAME_CLAIM": "UI single sign-on: the claim that names the user (ui/sso.py)",
    "TIDEMARK_UI_SSO_ROLE_CLAIM": "UI single sign-on: the claim holding groups (ui/sso.py)",
    "TIDEMARK_UI_SSO_ROLES": "UI single sign-on: group=role pairs (ui/sso.py)",
}
"""Every environment variable tidemark reads, with what it does."""

OTHER_SETTINGS: dict[str, tuple[str, str]] = {
    "TIDEMARK_USER": ("user", "str"),
    "TIDEMARK_SECRETS_FILE": ("secrets_file", "str"),
    "TIDEMARK_S3_ENDPOINT": ("s3.endpoint", "str"),
    "TIDEMARK_S3_REGION": ("s3.region", "str"),
    "TIDEMARK_S3_PATH_STYLE": ("s3.path_style", "bool"),
    "TIDEMARK_GATE": ("gate", "str"),
    "TIDEMARK_JSON_PARSER": ("json_parser", "str"),
    "TIDEMARK_JVM_CDS": ("jvm_cds", "bool"),
    "TIDEMARK_LOG_LEVEL": ("log.level", "str"),
    "TIDEMARK_LOG_MAX_BYTES": ("log.max_bytes", "int"),
    "TIDEMARK_LOG_BACKUPS": ("log.backups", "int"),
    "TIDEMARK_LOG_KEEP": ("log.keep", "int"),
    "TIDEMARK_HEARTBEAT_TIMEOUT_MS": ("supervisor.heartbeat_timeout_ms", "int"),
    "TIDEMARK_BACKOFF_BASE_MS": ("supervisor.backoff_base_ms", "int"),
    "TIDEMARK_BACKOFF_MAX_MS": ("supervisor.backoff_max_ms", "int"),
    "TIDEMARK_CRASH_LOOP_LIMIT": ("supervisor.crash_loop_limit", "int"),
    "TIDEMARK_HEALTHY_AFTER_MS": ("supervisor.healthy_after_ms", "int"),
    "TIDEMARK_STOP_TIMEOUT_MS": ("supervisor.stop_timeout_ms", "int"),
    "TIDEMARK_JOB_COMMAND": ("supervisor.job_command", "list"),
    "TIDEMARK_MIGRATION_POLL_S": ("migration.poll_s", "float"),
    "TIDEMARK_MIGRATION_TIMEOUT_S": ("migration.timeout_s", "float"),
    "TIDEMARK_AIRFLOW_PORT": ("airflow.port", "int"),
    "TIDEMARK_AIRFLOW_USER": ("airflow.user", "str"),
    "TIDEMARK_AIRFLOW_PASSWORD": ("airflow.password", "str"),
    "TIDEMARK_UI_PORT": ("ui.port", "int"),
    "TIDEMARK_ADMIN_PASSWORD": ("ui.admin_password", "str"),
    "TIDEMARK_UI_SESSION_SECRET": ("ui.session_secret", "str"),
    "TIDEMARK_UI_SESSION_IDLE": ("ui.session_idle", "str"),
    "TIDEMARK_UI_SESSION_MAX": ("ui.session_max", "str"),
    "TIDEMARK_UI_SECURE_COOKIE": ("ui.secure_cookie", "bool"),
    "TIDEMARK_UI_OIDC_METADATA_URL": ("ui.oidc_metadata_url", "str"),
    "TIDEMARK_UI_OIDC_CLIENT_ID": ("ui.oidc_client_id", "str"),
    "TIDEMARK_UI_OIDC_CLIENT_SECRET": ("ui.oidc_client_secret", "str"),
    "TIDEMARK_UI_OIDC_REDIRECT_URI": ("ui.oidc_redirect_uri", "str"),
    "TIDEMARK_UI_SSO_LABEL": ("ui.sso_label", "str"),
    "TIDEMARK_UI_SSO_NAME_CLAIM": ("ui.sso_name_claim", "str"),
    "TIDEMARK_UI_SSO_ROLE_CLAIM": ("ui.sso_role_claim", "str"),
    "TIDEMARK_UI_SSO_ROLES": ("ui.sso_roles", "str"),
}
"""Every setting that is not a typed field of :class:`Settings`: variable -> (settings file
key, type in the file). A dotted key is a key in a table (``log.keep`` is ``keep`` in
``[log]``). ``int`` and ``float`` values are checked here (file and environment); ``bool`` is a
TOML boolean in the file (passed on as ``1`` / ``0``); ``list`` a TOML array of strings (passed
on as JSON text, the variable's form)."""

_TABLES = {key.split(".")[0] for key, _ in OTHER_SETTINGS.values() if "." in key}
_FILE_KEYS = {"home", "db_url", "checkpoint_root", "results_root", "spark_master",
              "webhdfs_url", "airflow_home", "spark", "jobs",
              *(key for key, _ in OTHER_SETTINGS.values() if "." not in key), *_TABLES}


class ConfigError(ValueError):
    """A settings value that is wrong; ``setting`` is the variable or file key."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(f"{setting}: {message}")
        self.setting = setting


@dataclass(frozen=True)
class Settings:
    home: Path
    db_url: str
    checkpoint_root: str
    """A location (``jobs.storage.location``): an absolute local path or a Hadoop URI."""
    results_root: str
    spark_master: str
    airflow_home: Path
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    """Every job's Spark configuration (``[spark]`` and ``TIDEMARK_SPARK_CONF``)."""
    job_spark_conf: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Per job name, over ``spark_conf`` (``[jobs.<name>.spark]``)."""
    webhdfs_url: str | None = None
    values: Mapping[str, str] = field(default_factory=dict)
    """The :data:`OTHER_SETTINGS` that are set (environment over file), as text by variable
    name: the mapping the modules that own them parse."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Where each field's value came from (the variable or ``file key``), for messages."""

    def value(self, variable: str, default: str | None = None) -> str | None:
        """One of :data:`OTHER_SETTINGS` (``default`` when neither set nor in the file)."""
        if variable not in OTHER_SETTINGS:
            raise KeyError(f"{variable} is not one of tidemark's settings")
        return self.values.get(variable, default)

    def spark_conf_for(self, job: str | None) -> dict[str, str]:
        """The Spark configuration a job runs with: the platform's, then the job's own."""
        out = dict(self.spark_conf)
        if job is not None:
            out.update(self.job_spark_conf.get(job, {}))
        return out

    def s3(self, env: Mapping[str, str] | None = None) -> S3Options:
        """How this process reaches ``s3a://`` locations: the ``[s3]`` settings, and the
        credentials from ``env`` (default: the environment) or the secrets file."""
        return s3_options(self.values.get("TIDEMARK_S3_ENDPOINT"),
                          self.values.get("TIDEMARK_S3_REGION"),
                          self.values.get("TIDEMARK_S3_PATH_STYLE"),
                          os.environ if env is None else env,
                          self.values.get("TIDEMARK_SECRETS_FILE"))

    def setting_name(self, name: str) -> str:
        """The variable or file key a field came from (the variable when it is a default)."""
        return self.sources.get(name, _ENV_OF.get(name, name))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None,
                 config_file: str | os.PathLike[str] | None = None) -> Settings:
        e = dict(os.environ if env is None else env)
        path = config_file if config_file is not None else e.get(CONFIG_ENV)
        raw = _read_file(Path(path)) if path else {}
        src = f"{path}" if path else ""
        sources: dict[str, str] = {}

        def pick(name: str, default: Any) -> Any:
            var = _ENV_OF[name]
            if var in e:
                sources[name] = var
                return e[var]
            if name in raw:
                sources[name] = f"{src}: {name}"
                return raw[name]
            return default

        home = Path(str(pick("home", "data"))).absolute()
        checkpoint_root = _location(pick("checkpoint_root", str(home / "checkpoints")),
                                    sources.get("checkpoint_root", _ENV_OF["checkpoint_root"]))
        results_root = _location(pick("results_root", str(home / "results")),
                                 sources.get("results_root", _ENV_OF["results_root"]))
        webhdfs = pick("webhdfs_url", None)
        if webhdfs is not None and not str(webhdfs).startswith(("http://", "https://")):
            raise ConfigError(sources["webhdfs_url"],
                              f"{webhdfs!r} is not an http:// or https:// URL")
        spark_conf = _spark_table(raw.get("spark", {}), f"{src}: [spark]")
        if "TIDEMARK_SPARK_CONF" in e:
            try:
                env_conf = json.loads(e["TIDEMARK_SPARK_CONF"])
            except json.JSONDecodeError as exc:
                raise ConfigError("TIDEMARK_SPARK_CONF", f"not a JSON object ({exc})") from exc
            spark_conf.update(_spark_table(env_conf, "TIDEMARK_SPARK_CONF"))
        jobs_raw = raw.get("jobs", {})
        if not isinstance(jobs_raw, dict):
            raise ConfigError(f"{src}: [jobs]", "must be a table of job names")
        job_conf: dict[str, dict[str, str]] = {}
        for job, table in jobs_raw.items():
            where = f"{src}: [jobs.{job}]"
            if not isinstance(table, dict) or set(table) - {"spark"}:
                raise ConfigError(where, "holds only a [jobs.<name>.spark] table")
            job_conf[job] = _spark_table(table.get("spark", {}), f"{where}.spark")
        values = _other_settings(e, raw, src, sources)
        if values.get("TIDEMARK_S3_ENDPOINT"):
            try:
                s3_options(values["TIDEMARK_S3_ENDPOINT"], None, None, {}, None)
            except StorageError as exc:
                raise ConfigError(sources["TIDEMARK_S3_ENDPOINT"], exc.detail) from exc
        return cls(
            home=home,
            db_url=str(pick("db_url", f"sqlite:///{home / 'catalog.db'}")),
            checkpoint_root=checkpoint_root,
            results_root=results_root,
            spark_master=str(pick("spark_master", "local[*]")),
            airflow_home=Path(str(pick("airflow_home", home / "airflow"))).absolute(),
            spark_conf=spark_conf,
            job_spark_conf=job_conf,
            webhdfs_url=None if webhdfs is None else str(webhdfs).rstrip("/"),
            values=values,
            sources=sources,
        )


_ENV_OF = {
    "home": "TIDEMARK_HOME",
    "db_url": "TIDEMARK_DB_URL",
    "checkpoint_root": "TIDEMARK_CHECKPOINT_ROOT",
    "results_root": "TIDEMARK_RESULTS_ROOT",
    "spark_master": "TIDEMARK_SPARK_MASTER",
    "webhdfs_url": "TIDEMARK_WEBHDFS_URL",
    "airflow_home": "AIRFLOW_HOME",
}


def _read_file(path: Path) -> dict[str, Any]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(CONFIG_ENV, f"{path} cannot be read ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"not valid TOML ({exc})") from exc
    unknown = sorted(set(raw) - _FILE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}",
                          f"unknown key (known: {', '.join(sorted(_FILE_KEYS))})")
    for key, value in raw.items():
        if key in _TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: {key}", f"must be a table ([{key}])")
            known = sorted(k.split(".", 1)[1] for k, _ in OTHER_SETTINGS.values()
                           if k.startswith(f"{key}."))
            for inner in value:
                if inner not in known:
                    raise ConfigError(f"{path}: {key}.{inner}",
                                      f"unknown key (known in [{key}]: {', '.join(known)})")
        elif key not in ("spark", "jobs") and key not in _TOP_LEVEL_OTHER \
                and not isinstance(value, str):
            raise ConfigError(f"{path}: {key}", "must be a string")
    return raw


_TOP_LEVEL_OTHER = {key for key, _ in OTHER_SETTINGS.values() if "." not in key}


def _other_settings(env: Mapping[str, str], raw: Mapping[str, Any], src: str,
                    sources: dict[str, str]) -> dict[str, str]:
    """:data:`OTHER_SETTINGS` as text by variable, type-checked; ``sources`` gets each origin."""
    out: dict[str, str] = {}
    for var, (key, kind) in OTHER_SETTINGS.items():
        if var in env:
            text = env[var]
            if text.strip() and kind in ("int", "float"):
                _number(text, kind, var)
            sources[var] = var
            out[var] = text
            continue
        table, _, name = key.rpartition(".")
        holder = raw.get(table, {}) if table else raw
        if name not in holder:
            continue
        where = f"{src}: {key}"
        sources[var] = where
        out[var] = _file_text(holder[name], kind, where)
    return out


def _number(text: str, kind: str, setting: str) -> None:
    try:
        int(text) if kind == "int" else float(text)
    except ValueError:
        what = "an integer" if kind == "int" else "a number"
        raise ConfigError(setting, f"not {what}: {text!r}") from None


def _file_text(value: Any, kind: str, where: str) -> str:
    """A file value as the text its variable would hold."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(where, "must be true or false")
        return "1" if value else "0"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(where, "must be an integer")
        return str(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(where, "must be a number")
        return str(value)
    if kind == "list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(where, "must be an array of strings")
        return json.dumps(value)
    if not isinstance(value, str):
        raise ConfigError(where, "must be a string")
    return value


def _location(value: Any, setting: str) -> str:
    try:
        return validate(str(value))
    except StorageError as exc:
        raise ConfigError(setting, str(exc)) from exc


def _spark_table(table: Any, where: str) -> dict[str, str]:
    if not isinstance(table, dict):
        raise ConfigError(where, "must be a table of spark.* keys")
    out: dict[str, str] = {}
    for key, value in table.items():
        if not str(key).startswith("spark."):
            raise ConfigError(f"{where} {key}", "only spark.* keys are passed to Spark")
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, str | int | float):
            raise ConfigError(f"{where} {key}", "must be a string, number or boolean")
        out[str(key)] = str(value)
    return out
