"""CPU time of the compiled sliding engine (``sliding_final``, columnar output) on the replay
benchmark's input, for side-by-side runs of two code trees.

Run it once per tree (``PYTHONPATH=<tree> python benchmarks/sliding_columns_cpu.py --keys
10000 --key-kind str``), alternating trees: it prints one JSON line (best-of-N process CPU
seconds over ``drive_columns`` of :mod:`replay_throughput`, the counts and the load average).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import replay_throughput as R  # noqa: E402

from jobs.engine.allocator import tune_malloc  # noqa: E402
from jobs.engine.kernels.sliding import SlidingKernelEngine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--key-kind", choices=("str", "int"), default="str")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    applied = tune_malloc()  # as `tidemark replay` does; TIDEMARK_MALLOC_TUNING=off measures without
    defn = R.definition("sliding_final")
    batches = R.make_data(args.events, args.keys, 100_000, args.key_kind)
    SlidingKernelEngine(defn).ingest(batches[0])  # compiled code loaded before timing
    runs = []
    counts: dict[str, int] = {}
    for _ in range(args.repeats):
        eng = SlidingKernelEngine(defn)
        t = time.process_time()
        counts = R.drive_columns(eng, batches)
        runs.append(round(time.process_time() - t, 3))
        del eng
    best = min(runs)
    print(json.dumps({
        "label": args.label, "events": args.events, "keys": args.keys,
        "key_kind": args.key_kind, "malloc_tuned": applied, "cpu_s_runs": runs, "cpu_s_best": best,
        "events_per_s": round(args.events / best), "load_1min": round(os.getloadavg()[0], 2),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **counts,
    }), flush=True)


if __name__ == "__main__":
    main()
