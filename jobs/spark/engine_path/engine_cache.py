"""A Python worker's engines, kept between micro-batches.

Restoring a bucket's engine from its blob is the biggest fixed cost of a call, and Python
workers are reused across micro-batches, so a worker that gets the same bucket again continues
with its engine object. The entry is keyed by (checkpoint, bucket) and holds the token of the
blob saved last (``state_blob``): the processor uses it only when the store still holds that
very save; after a crash, a task retry or a re-run batch the store holds an older save (a
different token) and the engine is restored from the blob, exactly as without the cache.
"""

from __future__ import annotations

from typing import Any

from jobs.engine.protocol import WindowingEngine
from jobs.spark.engine_path.batch_input import plain

CacheKey = tuple[str, str]

ENGINE_CACHE_SIZE = 64
"""At most this many engines per worker (buckets of every query the worker served)."""

_ENGINES: dict[CacheKey, tuple[bytes, WindowingEngine]] = {}
"""The worker's one cache: (checkpoint, bucket) -> (token of the blob saved last, the engine
that blob was made from). Module state, reached by the processor through this module's
functions (a module is imported once per worker, never pickled with the processor)."""


def cache_key(checkpoint: str, grouping_key: Any) -> CacheKey:
    """The entry of one bucket of one checkpoint (``grouping_key``: Spark's grouping tuple)."""
    return (checkpoint, repr(tuple(plain(k) for k in grouping_key)))


def take_cached(ck: CacheKey) -> tuple[bytes, WindowingEngine] | None:
    """Remove and return the entry: a call that fails half way can then never leave a
    half-updated engine behind for the next one."""
    return _ENGINES.pop(ck, None)


def remember(ck: CacheKey, token: bytes, eng: WindowingEngine) -> None:
    """Keep ``eng`` as the engine of the save ``token`` (the oldest entry goes when full)."""
    _ENGINES.pop(ck, None)
    while len(_ENGINES) >= ENGINE_CACHE_SIZE:
        del _ENGINES[next(iter(_ENGINES))]
    _ENGINES[ck] = (token, eng)
