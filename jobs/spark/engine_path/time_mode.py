"""The engine operator's time mode, fixed per checkpoint (Spark refuses to restart a
checkpoint with another one).

``ProcessingTime`` when the definition needs the clock
(:func:`~jobs.definition.execution.needs_clock`: processing clock, idle advance, ``after`` /
``every`` triggers): Spark then runs a batch at every trigger even without input, and each
bucket's one timer is at ``now + 1``, so every bucket is called at every micro-batch and
windows close on the wall clock without new records. ``EventTime`` otherwise: a bucket's timer
is at ``watermark + 1``, so it is called for its records and for watermark advances only.
"""

from __future__ import annotations

import logging

from jobs.definition.execution import needs_clock
from jobs.definition.model import Definition
from jobs.storage.manifest import TIME_FILE, TimeMode, engine_time_mode

__all__ = ["TIME_FILE", "TimeMode", "time_mode"]

_log = logging.getLogger(__name__)


def time_mode(defn: Definition, checkpoint: str) -> TimeMode:
    """The time mode to run with: ``ProcessingTime`` when the definition needs the clock and
    the checkpoint is new.

    The clock is state-shaping (``jobs/definition/execution.py``), so every version on one store
    wants the same mode. The checkpoint's recorded mode still wins, for checkpoints whose store
    was named before that rule (their versions may differ; ``jobs.storage.manifest`` holds the
    rule for a checkpoint without the file): one that runs in ``EventTime`` keeps it, and its
    processing-time triggers and idle advance are then evaluated only when a bucket is called
    (records, watermark advances); a warning says so."""
    wanted: TimeMode = "ProcessingTime" if needs_clock(defn) else "EventTime"
    mode = engine_time_mode(checkpoint, wanted)
    if mode != wanted and wanted == "ProcessingTime":
        _log.warning(
            "checkpoint %s runs in EventTime mode (its store was named before the clock was "
            "state-shaping): this version's after/every triggers and idle advance fire only "
            "when a record or a watermark advance reaches the bucket, not on the wall clock; "
            "save the change as a new store to get them on time", checkpoint)
    return mode
