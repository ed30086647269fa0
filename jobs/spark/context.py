"""What one running job is: its identity, definition and where its files live.

Locations are strings (``jobs.storage.location``): a local path made absolute, or a Hadoop URI
kept as it is. Each remembers the setting it came from, so a location that is malformed or
unreachable fails with a message naming that setting (:meth:`JobContext.check_storage`, called
before the query starts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobs.config import Settings
from jobs.definition.model import Definition
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.plan import ExecutionPlan, choose_plan
from jobs.storage import (
    WEBHDFS_PROPERTY,
    StorageError,
    check_location,
    join,
    scheme,
    validate,
)
from jobs.storage.s3options import S3Options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class JobContext:
    job: str
    version: int
    store: str
    defn: Definition
    checkpoint: str
    """``<checkpoint root>/<store>`` (a new store is a new checkpoint)."""
    output_root: str
    """``<sink.path or results root/job>/<store>``: ``panes/``, ``late/``, ``dead_letters/``,
    ``late_counts/``, each partitioned by ``batch_id``."""
    plan: ExecutionPlan
    checkpoint_setting: str = "TIDEMARK_CHECKPOINT_ROOT"
    """The setting the checkpoint root came from (for messages)."""
    output_setting: str = "TIDEMARK_RESULTS_ROOT"
    """``sink.path``, or the setting the results root came from."""
    webhdfs_url: str | None = None
    """How Spark's Python workers reach ``hdfs://`` locations (``Settings.webhdfs_url``)."""
    s3: S3Options | None = None
    """How Spark's Python workers reach ``s3a://`` locations (``Settings.s3``)."""

    @classmethod
    def create(
        cls,
        defn: Definition,
        settings: Settings,
        *,
        version: int = 1,
        store: str | None = None,
        force_engine: bool = False,
    ) -> JobContext:
        if store is None:
            from jobs.definition.store import store_name  # colleague's module

            store = store_name(defn)
        if defn.sink.path:
            output_setting = "sink.path"
            try:
                base = validate(defn.sink.path, output_setting)
            except StorageError as exc:
                raise SparkRuntimeError(exc.detail, output_setting) from exc
        else:
            output_setting = settings.setting_name("results_root")
            base = join(settings.results_root, defn.name)
        plan = choose_plan(defn)
        if force_engine and plan.native:
            plan = type(plan)("engine", ("forced",))
        return cls(
            job=defn.name,
            version=version,
            store=store,
            defn=defn,
            checkpoint=join(settings.checkpoint_root, store),
            output_root=join(base, store),
            plan=plan,
            checkpoint_setting=settings.setting_name("checkpoint_root"),
            output_setting=output_setting,
            webhdfs_url=settings.webhdfs_url,
            s3=settings.s3(),
        )

    def prepare_storage(self, spark: SparkSession) -> None:
        """Before the query starts, in the thread that starts it: hand the WebHDFS address and,
        when a location is on S3, the S3 options to its tasks (local properties) and
        :meth:`check_storage`."""
        if self.webhdfs_url:
            spark.sparkContext.setLocalProperty(WEBHDFS_PROPERTY, self.webhdfs_url)
        if self.s3 is not None and "s3a" in (scheme(self.checkpoint), scheme(self.output_root)):
            for key, value in self.s3.task_properties().items():
                spark.sparkContext.setLocalProperty(key, value)
        self.check_storage()

    def check_storage(self) -> None:
        """Prove the checkpoint and output locations reachable and writable, before any batch:
        one :class:`SparkRuntimeError` naming the setting otherwise (a bad URI, a NameNode
        that is down, a bucket without access)."""
        for loc, setting in ((self.checkpoint, self.checkpoint_setting),
                             (self.output_root, self.output_setting)):
            try:
                check_location(loc, setting)
            except StorageError as exc:
                raise SparkRuntimeError(exc.detail, setting) from exc

    @property
    def panes_path(self) -> str:
        return f"{self.output_root}/panes"

    @property
    def late_path(self) -> str:
        return f"{self.output_root}/late"

    @property
    def dead_letter_path(self) -> str:
        return f"{self.output_root}/dead_letters"
