"""How every tidemark process reaches ``s3a://`` locations: one endpoint, region and
addressing style, and credentials that are referenced, never written into a definition.

The settings (``jobs.config``) give the endpoint, region and path style
(``TIDEMARK_S3_ENDPOINT``, ``TIDEMARK_S3_REGION``, ``TIDEMARK_S3_PATH_STYLE``). Credentials
come from the AWS SDKs' standard variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``)
or, when those are unset, from lines of the same names in the secrets file
(``TIDEMARK_SECRETS_FILE``). The same options become Hadoop's ``fs.s3a.*`` configuration for
the driver and executors' JVMs (:meth:`S3Options.spark_conf`), local properties of the query's
tasks for Spark's Python workers (:meth:`S3Options.task_properties`; Spark redacts property
names containing ``secret`` or ``access.key`` in its UI and event log), and pyarrow's
``S3FileSystem`` for Python processes without a JVM (:mod:`jobs.storage.s3`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from jobs.storage.errors import StorageError

ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"
SECRET_KEY_ENV = "AWS_SECRET_ACCESS_KEY"  # noqa: S105 - the variable's name, not a secret
ENDPOINT_SETTING = "TIDEMARK_S3_ENDPOINT"
TASK_PREFIX = "tidemark.s3."
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class S3Options:
    endpoint: str | None = None
    """``http(s)://host:port`` of an S3-compatible server; None: AWS's regional endpoint."""
    region: str = DEFAULT_REGION
    path_style: bool = False
    """``http://endpoint/bucket/key`` instead of ``http://bucket.endpoint/key`` (most
    S3-compatible servers need it)."""
    access_key: str | None = None
    secret_key: str | None = None

    def __repr__(self) -> str:  # never print a credential
        return (f"S3Options(endpoint={self.endpoint!r}, region={self.region!r}, "
                f"path_style={self.path_style}, credentials={self.access_key is not None})")

    def spark_conf(self) -> dict[str, str]:
        """``spark.hadoop.fs.s3a.*`` for the session (Hadoop's S3A connector)."""
        conf = {"spark.hadoop.fs.s3a.endpoint.region": self.region,
                "spark.hadoop.fs.s3a.path.style.access": str(self.path_style).lower()}
        if self.endpoint:
            conf["spark.hadoop.fs.s3a.endpoint"] = self.endpoint
            conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(
                urlsplit(self.endpoint).scheme == "https").lower()
        if self.access_key and self.secret_key:
            conf["spark.hadoop.fs.s3a.access.key"] = self.access_key
            conf["spark.hadoop.fs.s3a.secret.key"] = self.secret_key
        return conf

    def delta_options(self) -> dict[str, str]:
        """delta-rs's ``storage_options`` for an ``s3://`` table at these options."""
        opts = {"AWS_REGION": self.region,
                "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": str(not self.path_style).lower()}
        if self.endpoint:
            opts["AWS_ENDPOINT_URL"] = self.endpoint
            opts["AWS_ALLOW_HTTP"] = str(self.endpoint.startswith("http://")).lower()
        if self.access_key and self.secret_key:
            opts["AWS_ACCESS_KEY_ID"] = self.access_key
            opts["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        return opts

    def task_properties(self) -> dict[str, str]:
        """Local properties that hand these options to the query's Python workers."""
        props = {f"{TASK_PREFIX}region": self.region,
                 f"{TASK_PREFIX}path.style": str(self.path_style).lower()}
        if self.endpoint:
            props[f"{TASK_PREFIX}endpoint"] = self.endpoint
        if self.access_key and self.secret_key:
            props[f"{TASK_PREFIX}access.key"] = self.access_key
            props[f"{TASK_PREFIX}secret.key"] = self.secret_key
        return props

    @classmethod
    def from_task_properties(cls, get: Callable[[str], str | None]) -> S3Options | None:
        """The options a driver handed to this task, or None when it handed none."""
        region = get(f"{TASK_PREFIX}region")
        if not region:
            return None
        return cls(endpoint=get(f"{TASK_PREFIX}endpoint") or None, region=region,
                   path_style=get(f"{TASK_PREFIX}path.style") == "true",
                   access_key=get(f"{TASK_PREFIX}access.key") or None,
                   secret_key=get(f"{TASK_PREFIX}secret.key") or None)


def s3_options(endpoint: str | None, region: str | None, path_style: str | None,
               env: Mapping[str, str], secrets_file: str | None,
               setting: str = ENDPOINT_SETTING) -> S3Options:
    """Options from the settings' values (text, as the environment gives them) and the
    credentials from ``env`` or the secrets file; a bad endpoint is an error naming
    ``setting``."""
    if endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise StorageError(f"{endpoint!r} is not an http:// or https:// URL", setting)
        endpoint = endpoint.rstrip("/")
    access, secret = env.get(ACCESS_KEY_ENV), env.get(SECRET_KEY_ENV)
    if not (access and secret) and secrets_file and Path(secrets_file).is_file():
        lines = _secrets(Path(secrets_file))
        access, secret = lines.get(ACCESS_KEY_ENV), lines.get(SECRET_KEY_ENV)
    return S3Options(endpoint=endpoint or None, region=region or DEFAULT_REGION,
                     path_style=(path_style or "").lower() in ("1", "true", "yes", "on"),
                     access_key=access or None, secret_key=secret or None)


def _secrets(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out
