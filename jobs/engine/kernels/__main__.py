"""``python -m jobs.engine.kernels``: compile the kernels into numba's cache (``make
install`` runs it once), so no test or job process pays the first compile (~15 s of CPU)."""

from __future__ import annotations

import numpy as np

from jobs.definition.model import Aggregation, Definition, Trigger, Window
from jobs.engine.kernels.session import SessionKernelEngine
from jobs.engine.records import RecordBatch


def warm() -> int:
    """Run every kernel once with the argument types the engines pass; returns the panes."""
    defn = Definition(
        name="warm", key="k", event_time="t", window=Window("session", gap=10),
        aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x")),
        trigger=Trigger(emit="final"),
    )
    eng = SessionKernelEngine(defn)
    out = eng.ingest(RecordBatch(keys=["a", "b"], event_times=np.array([1, 30]),
                                 columns={"s": [1, 2.5]}, processing_time=1))
    return len(out) + len(eng.end_of_input())


if __name__ == "__main__":
    print(f"jobs.engine.kernels: kernels compiled and cached ({warm()} panes)")
