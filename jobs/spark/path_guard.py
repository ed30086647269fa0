"""Which execution path wrote a checkpoint, and refusing to run the other one on it.

Since the path became state-shaping (``jobs/definition/execution.py``) two versions on the
same store always take the same path. The guard is for what the store name cannot see: a
catalog whose versions were named before that rule (a native v1 and an engine v2 of the same
shape still share one stored store name), ``force_engine`` runs, or a checkpoint root shared by
hand. Without it Spark fails deep inside the first batch with
``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA`` (and the engine path has by then
written its time-mode file into the native checkpoint); with it the job refuses to start, with
a message that says what to do, and writes nothing.

The path is recorded in ``tidemark_path.json`` when a query first starts on a checkpoint (the
checkpoint manifest, ``jobs/storage/manifest.py``, also holds how a checkpoint from before that
file is recognised).
"""

from __future__ import annotations

from jobs.definition.execution import ExecutionPath
from jobs.spark.errors import SparkRuntimeError
from jobs.storage.manifest import PATH_FILE, record_path, recorded_path

__all__ = ["PATH_FILE", "claim_path", "recorded_path"]


def claim_path(checkpoint: str, path: ExecutionPath, *, job: str, version: int,
               reasons: tuple[str, ...] = ()) -> None:
    """Refuse to run ``path`` on a checkpoint another path wrote; else record ``path``."""
    found = recorded_path(checkpoint)
    if found is not None and found != path:
        why = f" ({'; '.join(reasons)})" if reasons else ""
        raise SparkRuntimeError(
            f"checkpoint {checkpoint} holds the state of the {found} path, but version "
            f"{version} of {job} runs on the {path} path{why}. Spark cannot continue one from "
            "the other: save this change as a new version with its own store and activate it "
            "as a migration, or roll back to a version on the same path", "store")
    if found is None:
        record_path(checkpoint, path)
