"""Spark's checkpoint logs as the runtime reads them: see :mod:`jobs.storage.manifest`, which
owns every file tidemark reads or keeps in a checkpoint (local or a Hadoop URI)."""

from jobs.storage.manifest import (
    BatchInfo,
    commit_watermark,
    committed_batches,
    has_run,
    is_committed,
    read_batch_info,
    state_size_bytes,
    strip_scheme,
    unfinished_batches,
    write_marker,
)

__all__ = [
    "BatchInfo",
    "commit_watermark",
    "committed_batches",
    "has_run",
    "is_committed",
    "read_batch_info",
    "state_size_bytes",
    "strip_scheme",
    "unfinished_batches",
    "write_marker",
]
