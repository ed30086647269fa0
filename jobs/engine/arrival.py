"""How records are grouped into arrival units (docs/semantics.md, "Arrival model").

An arrival unit is what the global watermark judges together: every record of a unit is
judged against the watermark as it stood before the unit, and the watermark moves once, when
the unit ends. A live Spark job's unit is its micro-batch; a plain event log read by
``tidemark replay`` is one record per unit. Replay and the previews can mirror a job's
micro-batches with the other groupings here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from jobs.engine.errors import EngineError

ArrivalKind = Literal["record", "batch"]


@dataclass(frozen=True, slots=True)
class Arrival:
    """``record``: every record is a unit. ``batch``: the records between two control lines
    are a micro-batch, cut further every ``every`` records when it is set."""

    kind: ArrivalKind = "record"
    every: int | None = None

    @classmethod
    def parse(cls, text: str) -> Arrival:
        """``record``, ``batch`` or ``batch:N`` (N >= 1), as ``tidemark replay --arrival``."""
        t = text.strip()
        if t == "record":
            return cls("record")
        if t == "batch":
            return cls("batch")
        if t.startswith("batch:"):
            n = t[len("batch:"):]
            if n.isdigit() and int(n) >= 1:
                return cls("batch", int(n))
        raise EngineError(
            f"arrival: {text!r} is not one of 'record', 'batch' or 'batch:N' (N >= 1 records)"
        )

    def __str__(self) -> str:
        if self.kind == "record":
            return "record"
        return "batch" if self.every is None else f"batch:{self.every}"

    def describe(self) -> str:
        """One line for a user: which arrival model produced a result."""
        if self.kind == "record":
            return "one record at a time (a plain event log)"
        if self.every is None:
            return "micro-batches: the records between two clock lines arrive together"
        return f"micro-batches of {self.every} records"

    def cuts(self, n: int) -> list[tuple[int, int]]:
        """The units of a run of ``n`` records with no control line between them, as
        ``(lo, hi)`` positions."""
        size = 1 if self.kind == "record" else (self.every or n)
        size = max(size, 1)
        return [(lo, min(lo + size, n)) for lo in range(0, n, size)]
