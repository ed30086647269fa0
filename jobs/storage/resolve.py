"""Which backend serves a location in this process, and checking a location before a job runs.

- a local path or ``file:`` URI: :class:`LocalStorage`;
- a Hadoop URI in a process with a SparkContext (the driver): :class:`HadoopStorage` through
  Spark's JVM, with the session's Hadoop configuration;
- an ``s3a://`` URI with S3 options from the caller (the UI's settings): :class:`S3Storage`
  (pyarrow) with them, whether or not the process has a Spark session;
- an ``s3a://`` URI elsewhere without a Spark session: :class:`S3Storage` with the options the
  driver handed the task (local properties ``tidemark.s3.*``), else the ``TIDEMARK_S3_*`` and
  AWS credentials variables;
- an ``hdfs://`` URI elsewhere: :class:`WebHdfsStorage` at the NameNode's HTTP address, which
  a Spark task (the gate and engine host in Python workers) finds in the local property
  ``tidemark.webhdfs`` the driver sets before it starts the query (Spark hands a thread's local
  properties to every task it runs, as it does the batch id), and any other process (the UI,
  the CLI) from its settings (``webhdfs_url``: the caller passes it) or, when the caller has
  none, ``TIDEMARK_WEBHDFS_URL`` (this package sits below ``jobs.config``).
Anything else is a :class:`StorageError` that says what is missing.
"""

from __future__ import annotations

import os
import uuid

from jobs.storage.base import Storage
from jobs.storage.errors import StorageError
from jobs.storage.local import LocalStorage
from jobs.storage.location import is_local, join, scheme, validate
from jobs.storage.s3options import S3Options, s3_options

WEBHDFS_ENV = "TIDEMARK_WEBHDFS_URL"
WEBHDFS_PROPERTY = "tidemark.webhdfs"
_LOCAL = LocalStorage()


def _active_spark_context() -> object | None:
    try:
        from pyspark import SparkContext
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    sc = SparkContext._active_spark_context
    return sc if sc is not None and getattr(sc, "_jsc", None) is not None else None


def _task_property(key: str) -> str | None:
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    ctx = TaskContext.get()
    value = ctx.getLocalProperty(key) if ctx is not None else None
    return str(value) if value else None


def storage_for(location: str, webhdfs: str | None = None,
                s3: S3Options | None = None) -> Storage:
    """The backend for ``location`` in this process; ``webhdfs``: the NameNode's HTTP address
    and ``s3``: the S3 endpoint and credentials from the caller's settings, used when there is
    no Spark session here."""
    if is_local(location):
        return _LOCAL
    if s3 is not None and scheme(location) == "s3a":
        from jobs.storage.s3 import S3Storage

        return S3Storage(s3)  # the caller's own S3 settings (the UI), Spark session or not
    sc = _active_spark_context()
    if sc is not None:
        from jobs.storage.hadoop import HadoopStorage

        return HadoopStorage(sc)
    if scheme(location) == "s3a":
        from jobs.storage.s3 import S3Storage

        return S3Storage(S3Options.from_task_properties(_task_property) or _s3_from_env())
    webhdfs = webhdfs or _task_property(WEBHDFS_PROPERTY) or os.environ.get(WEBHDFS_ENV)
    if scheme(location) == "hdfs" and webhdfs:
        from jobs.storage.webhdfs import WebHdfsStorage

        return WebHdfsStorage(webhdfs)
    raise StorageError(
        f"{location}: no way to reach it from this process (no Spark session here; for hdfs:// "
        f"set {WEBHDFS_ENV} to the NameNode's HTTP address, e.g. http://namenode:9870)")


def _s3_from_env() -> S3Options:
    """The S3 settings' variables and the AWS credentials variables of this process (the
    caller that has a settings file passes ``Settings.s3()`` instead)."""
    e = os.environ
    return s3_options(e.get("TIDEMARK_S3_ENDPOINT"), e.get("TIDEMARK_S3_REGION"),
                      e.get("TIDEMARK_S3_PATH_STYLE"), e, e.get("TIDEMARK_SECRETS_FILE"))


def check_location(location: str, setting: str, *, writable: bool = True) -> str:
    """Validate ``location`` (as given in ``setting``) and prove it reachable: create it and,
    with ``writable``, write and delete a probe file in it. Returns the normalised location;
    raises one :class:`StorageError` naming ``setting`` otherwise. Called before a job's first
    batch, so a bad URI or a filesystem that is down stops the job with a clear message
    instead of failing inside Spark."""
    loc = validate(location, setting)
    try:
        st = storage_for(loc)
        st.mkdirs(loc)
        if writable:
            probe = join(loc, f".tidemark-probe-{uuid.uuid4().hex}")
            st.write_text(probe, "ok")
            st.delete(probe)
    except StorageError as exc:
        raise StorageError(exc.detail, setting) from exc
    except Exception as exc:  # py4j / OS errors of any filesystem: one message naming the setting
        raise StorageError(f"{loc} is not reachable: {_first_line(exc)}", setting) from exc
    return loc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "py4j", "An error occurred")):
            return line[:400]
    return type(exc).__name__
