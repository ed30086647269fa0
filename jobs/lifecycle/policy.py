"""How hard the supervisor tries: heartbeat staleness, backoff, crash-loop limit, stop timeout.

Kept apart from the code that acts on it so the DAGs, the CLI and the tests can all pass their
own numbers (tests use milliseconds, production minutes) without touching the logic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from jobs.config import Settings


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    heartbeat_timeout_ms: int = 120_000
    """A run whose last heartbeat (or start, before its first heartbeat) is older than this is
    considered hung: it is killed and restarted. Spark batches on a busy job can take a minute,
    so the default leaves room for two."""
    backoff_base_ms: int = 10_000
    """Delay before the first restart after a crash; doubles with every further crash."""
    backoff_max_ms: int = 600_000
    crash_loop_limit: int = 5
    """This many consecutive crashed runs mark the job failed (an operator has to start it
    again): restarting a job that dies on start forever only hides the problem."""
    healthy_after_ms: int = 300_000
    """A run that lived at least this long before dying was healthy: it resets the crash count
    (as systemd and Kubernetes do), so a job that crashes once a day is never marked failed."""
    stop_timeout_ms: int = 30_000
    """Grace between SIGTERM (finish the current batch) and SIGKILL."""

    def backoff_ms(self, consecutive_crashes: int) -> int:
        """Delay before restart number ``consecutive_crashes`` (1 = first restart): base * 2^(n-1),
        capped; 0 when nothing crashed (a plain start waits for nothing)."""
        if consecutive_crashes <= 0:
            return 0
        exp = min(consecutive_crashes - 1, 30)
        return int(min(self.backoff_max_ms, self.backoff_base_ms * (2**exp)))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RestartPolicy:
        """Override any field with ``TIDEMARK_<FIELD>`` (e.g. ``TIDEMARK_CRASH_LOOP_LIMIT=3``,
        or ``crash_loop_limit`` in the settings file's ``[supervisor]``); ``env`` None reads
        tidemark's settings."""
        e = Settings.from_env().values if env is None else env
        policy = cls()
        changes: dict[str, int] = {}
        for name in cls.__dataclass_fields__:
            raw = e.get(f"TIDEMARK_{name.upper()}")
            if raw is not None:
                try:
                    changes[name] = int(raw)
                except ValueError as exc:
                    raise ValueError(f"TIDEMARK_{name.upper()}: not an integer: {raw!r}") from exc
        return replace(policy, **changes) if changes else policy
