"""The stateful processor object Spark pickles: light to import, the engine loaded on a task's
first call.

Spark validates the operator's state schema at every query start by unpickling the processor
in a fresh Python process on the driver and calling its ``init`` and ``close`` (pyspark's
``transform_with_state_driver_worker``); that process runs inside the first micro-batch's
planning. Unpickling :class:`~jobs.spark.engine_path.processor.EngineProcessor` itself would
import the engine and the definition model there (numpy, sqlglot, ...) for one
``getValueState``. The shell imports only pyspark and ``config``, carries the
:class:`~jobs.spark.engine_path.config.HostConfig` as pickled bytes, and builds the real
processor in a task when Spark first calls it (the operator's workers have the engine
pre-loaded by their daemon, ``worker_daemon.engine_preload``).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.types import BinaryType, StructField, StructType

from jobs.spark.engine_path.config import STATE_NAME, HostConfig

if TYPE_CHECKING:
    import pandas as pd

    from jobs.spark.engine_path.processor import EngineProcessor

STATE_SCHEMA = StructType([StructField("blob", BinaryType(), True)])
"""The ``engine`` value state's schema: one bucket's state blob."""


class ProcessorShell(StatefulProcessor):
    """What ``transformWithStateInPandas`` gets: registers the state in ``init`` and hands
    every call to an :class:`~jobs.spark.engine_path.processor.EngineProcessor` made on the
    task's first call."""

    def __init__(self, cfg: HostConfig) -> None:
        self.cfg_bytes = pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL)
        self.handle: Any = None
        self.state: Any = None
        self.host: EngineProcessor | None = None

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.state = handle.getValueState(STATE_NAME, STATE_SCHEMA)
        self.host = None

    def _host(self) -> EngineProcessor:
        if self.host is None:
            from jobs.spark.engine_path.processor import EngineProcessor

            host = EngineProcessor(pickle.loads(self.cfg_bytes))  # noqa: S301 (our own bytes)
            host.attach(self.handle, self.state)
            self.host = host
        return self.host

    def handleInputRows(self, key: Any, rows: Any, timerValues: Any  # noqa: N803
                        ) -> Iterator[pd.DataFrame]:
        return self._host().handleInputRows(key, rows, timerValues)

    def handleExpiredTimer(self, key: Any, timerValues: Any,  # noqa: N803
                           expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:  # noqa: N803
        return self._host().handleExpiredTimer(key, timerValues, expiredTimerInfo)

    def close(self) -> None:
        """The task's side files (``EngineProcessor.close``); nothing outside a task: the
        driver's pre-init instance loads nothing."""
        from pyspark import TaskContext

        if self.host is None and TaskContext.get() is None:
            return
        self._host().close()
