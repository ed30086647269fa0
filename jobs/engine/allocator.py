"""glibc malloc settings for the processes that run the engines (``tidemark replay``, Spark's
Python worker daemon).

The compiled engines build fresh numpy arrays for every unit, many of them megabytes. With
glibc's defaults a block that large is ``mmap``-ed (the threshold starts at 128 KiB and grows
with freed mapped blocks up to 32 MiB) or taken from the top of the heap, which ``free`` trims
back to the OS past twice that threshold, so each unit's arrays come from fresh zero pages:
tens of thousands of minor page faults per million events, a measurable share of the engine's
CPU (docs/performance.md, "Memory allocator").
:func:`tune_malloc` raises both thresholds (``mallopt``) so that blocks up to
:data:`MMAP_THRESHOLD` come from the heap and freed memory stays in the process for the next
unit, up to :data:`TRIM_THRESHOLD` of free space at the heap's top. The cost is resident
memory: a process keeps about its peak instead of returning it between units.

Linux with glibc only; elsewhere, with ``TIDEMARK_MALLOC_TUNING=off``, or when the environment
already sets glibc's own malloc variables (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_`` or a ``glibc.malloc`` tunable in
``GLIBC_TUNABLES``: the operator chose), it does nothing. It never raises. Settings made
before a fork are inherited by the child.
"""

from __future__ import annotations

import ctypes
import os

TUNING_ENV = "TIDEMARK_MALLOC_TUNING"
"""``off`` leaves glibc's defaults."""

MMAP_THRESHOLD = 256 * 2**20
"""Blocks smaller than this come from the heap, not from their own ``mmap``."""
TRIM_THRESHOLD = 256 * 2**20
"""Free space at the heap's top kept by ``free`` (more is returned to the OS)."""

# mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

_GLIBC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")

_applied: bool | None = None


def _glibc() -> ctypes.CDLL | None:
    """The process's C library when it is glibc, else None."""
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return None
        return ctypes.CDLL("libc.so.6")
    except (ValueError, OSError, AttributeError):
        return None


def tune_malloc() -> bool:
    """Apply the thresholds once per process; True when glibc accepted them (now or on an
    earlier call), False when they were not applied (not glibc, opted out, set by the
    environment, or refused)."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if os.environ.get(TUNING_ENV, "").strip().lower() == "off":
        return False
    if any(var in os.environ for var in _GLIBC_ENV):
        return False
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    libc = _glibc()
    if libc is None:
        return False
    try:
        # the mmap threshold first: setting either one turns glibc's dynamic threshold off
        ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
        ok = libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
    except (AttributeError, OSError):
        return False
    _applied = ok
    return ok
