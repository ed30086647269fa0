"""What every windowing engine offers its host: the general :class:`~jobs.engine.Engine`, the
vectorized one and any other engine ``make_engine`` may pick.

Hosts (the Spark runtime's stateful processor, ``tidemark state``, replay) are typed against
these protocols, never against one engine class, so an engine that implements them can be
picked without touching a host. The contract behind each call (arrival units, output order,
what ``emitted_at`` is) is docs/architecture.md's "Engine API" and docs/semantics.md.
"""

from __future__ import annotations

from typing import Any, Protocol

from jobs.engine.records import Emission, RecordBatch


class EngineSnapshot(Protocol):
    """An engine's state as a host saves it: ``snapshot()`` is JSON data that the same engine
    kind's ``restore`` turns back into a state (the general engine's state also packs)."""

    def snapshot(self) -> dict[str, Any]: ...


class WindowingEngine(Protocol):
    """The calls a host drives an engine with, and what it reads back."""

    @property
    def state(self) -> EngineSnapshot:
        """The live state (a host snapshots it between calls to resume a new engine)."""
        ...

    @property
    def watermark(self) -> int | None:
        """The global watermark; ``None`` while minus infinity and after the end."""
        ...

    @property
    def max_event_time(self) -> int | None: ...

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """Move processing time to ``now_ms`` (never back): timers due, idle advance."""
        ...

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """One arrival unit, in arrival order."""
        ...

    def advance_watermark(self, wm_ms: int) -> list[Emission]: ...

    def end_of_input(self) -> list[Emission]: ...

    def open_windows(self) -> list[dict[str, Any]]:
        """The windows the state holds (``tidemark state``)."""
        ...

    def drain_late_counts(self) -> list[dict[str, Any]]:
        """Late-record counts since the last drain (the host writes them as side lines)."""
        ...

    def late_totals(self) -> list[dict[str, Any]]: ...
