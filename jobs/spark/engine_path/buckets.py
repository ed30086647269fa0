"""Buckets and shuffle partitions: which grouping value each bucket of a checkpoint has.

Spark places a grouping value on shuffle partition ``pmod(hash(value), partitions)``, so the
value of bucket ``i`` is chosen to land on partition ``i % partitions``
(:func:`spread_bucket_keys`; the plain values 0 and 1 both land on partition 1 of 2). The
bucket count and values are fixed per checkpoint by its layout file (:func:`bucket_layout`;
the file and its rule for older checkpoints belong to ``jobs.storage.manifest``).
"""

from __future__ import annotations

from typing import Any

from jobs.spark.extract import KEY
from jobs.storage.manifest import BUCKETS_FILE, engine_buckets

LAYOUT_FILE = BUCKETS_FILE
"""In the checkpoint's root: the bucket count and the grouping value of each bucket, fixed
when the checkpoint is created (a restart must group keys exactly as before)."""

_M = 0xFFFFFFFF


def _murmur3_long(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of a BIGINT (Murmur3_x86_32.hashLong, seed 42): the hash
    ``HashPartitioning`` takes ``pmod`` of to place a grouping key on a shuffle partition."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _M

    def mix(h1: int, k1: int) -> int:
        k1 = (k1 * 0xCC9E2D51) & _M
        k1 = rotl(k1, 15)
        k1 = (k1 * 0x1B873593) & _M
        h1 ^= k1
        h1 = rotl(h1, 13)
        return (h1 * 5 + 0xE6546B64) & _M

    v = value & 0xFFFFFFFFFFFFFFFF
    h = mix(mix(seed & _M, v & _M), v >> 32)
    h ^= 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def spread_bucket_keys(buckets: int, partitions: int) -> list[int]:
    """A grouping value per bucket such that bucket ``i`` lands on shuffle partition
    ``i % partitions``: the buckets share the partitions evenly. (The plain values 0..n-1 do
    not: with 2 partitions, 0 and 1 both hash to partition 1, so one task ran every bucket.)"""
    found: dict[int, list[int]] = {p: [] for p in range(partitions)}
    need = {p: len(range(p, buckets, partitions)) for p in range(partitions)}
    v = 0
    while any(len(found[p]) < need[p] for p in found):
        p = _murmur3_long(v) % partitions
        if len(found[p]) < need[p]:
            found[p].append(v)
        v += 1
    return [found[i % partitions][i // partitions] for i in range(buckets)]


def bucket_layout(spark: Any, checkpoint: str, buckets: int) -> tuple[int, list[int] | None]:
    """(bucket count, grouping value per bucket or ``None`` for the plain ``0..n-1``) of the
    checkpoint, fixed when it is created (``jobs.storage.manifest.engine_buckets``): a new
    checkpoint gets values spread over ``spark.sql.shuffle.partitions``."""

    def spread() -> tuple[list[int], int]:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
        return spread_bucket_keys(buckets, partitions), partitions

    return engine_buckets(checkpoint, buckets, spread)


def bucket_column(spark: Any, checkpoint: str, buckets: int) -> Any:
    """The grouping column: the key's bucket (``pmod(xxhash64(key), n)``), as the bucket's
    grouping value of the checkpoint's layout."""
    from pyspark.sql import functions as F

    n, keys = bucket_layout(spark, checkpoint, buckets)
    bucket = F.pmod(F.xxhash64(KEY), F.lit(n))
    if keys is None:
        return bucket
    return F.element_at(F.array(*[F.lit(v).cast("bigint") for v in keys]),
                        (bucket + F.lit(1)).cast("int"))

