"""The one error type of the lifecycle package."""

from __future__ import annotations


class LifecycleError(RuntimeError):
    """A lifecycle operation that cannot proceed; the message names the job, run or migration."""
