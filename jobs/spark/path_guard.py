"""Which execution path wrote a checkpoint, and refusing to run the other one on it.

Since the path became state-shaping (``jobs/definition/execution.py``) two versions on the
same store always take the same path. The guard is for what the store name cannot see: a
catalog whose versions were named before that rule (a native v1 and an engine v2 of the same
shape still share one stored store name), ``force_engine`` runs, or a checkpoint root shared by
hand. Without it Spark fails deep inside the first batch with
``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA`` (and the engine path has by then
written its time-mode file into the native checkpoint); with it the job refuses to start, with
a message that says what to do, and writes nothing.

The path is recorded in ``tidemark_path.json`` when a query first starts on a checkpoint. A
checkpoint from before that file is recognised by the file each path already wrote: the native
path's key-layout file, the engine path's time-mode file.
"""

from __future__ import annotations

import json

from jobs.definition.execution import ExecutionPath
from jobs.spark.checkpoint import has_run, local_root, write_marker
from jobs.spark.engine_host import TIME_FILE as _ENGINE_HINT
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.key_layout import LAYOUT_FILE as _NATIVE_HINT

PATH_FILE = "tidemark_path.json"


def recorded_path(checkpoint: str) -> ExecutionPath | None:
    """The path whose state the checkpoint holds (None: new, unknown, or not a local path)."""
    root = local_root(checkpoint)
    if root is None:
        return None
    marker = root / PATH_FILE
    if marker.exists():
        value = json.loads(marker.read_text(encoding="utf-8")).get("path")
        return value if value in ("native", "engine") else None
    if not has_run(root):
        return None
    if (root / _NATIVE_HINT).exists():
        return "native"
    if (root / _ENGINE_HINT).exists():
        return "engine"
    return None


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
    root = local_root(checkpoint)
    if root is not None and found is None:
        write_marker(root, PATH_FILE, {"path": path})
