"""glibc malloc settings vs the replay engines: CPU, minor page faults and peak RSS.

The compiled engines allocate fresh numpy arrays every unit; with glibc's defaults large
blocks come from ``mmap`` (or from the heap top, trimmed back to the OS when freed), so every
unit pays page faults to get zeroed pages again. This harness runs one case of
``replay_throughput.py`` (its definitions and data) through the columnar API (the object API on engines without one) in a fresh
subprocess per setting, alternating the settings round by round (each round in a rotated
order, so no setting always runs first), and records per drive: process CPU time, minor page
faults (``getrusage`` ``ru_minflt``) and the process's peak RSS.

Settings (``SETTINGS``): ``base`` (glibc defaults), environment variables read by glibc at
start (``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_TOP_PAD_`` /
``MALLOC_ARENA_MAX``), ``mallopt`` through ``ctypes`` at the start of the process, and ``tune_malloc``
(``jobs.engine.allocator.tune_malloc()``, what ``tidemark replay`` applies). Every other setting
runs with ``TIDEMARK_MALLOC_TUNING=off``, so that harness code calling ``tune_malloc`` cannot
mix into it.

Run: ``.venv/bin/python benchmarks/allocator_replay.py --rounds 4``
(writes ``benchmarks/results/allocator_replay.json``).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # replay_throughput, run from here

MIB = 2**20
RESULTS = Path(__file__).parent / "results" / "allocator_replay.json"

# name -> (environment variables, mallopt (param, value) pairs applied at start)
SETTINGS: dict[str, tuple[dict[str, str], list[tuple[int, int]]]] = {
    "base": ({}, []),
    "env_32m": ({"MALLOC_MMAP_THRESHOLD_": str(32 * MIB), "MALLOC_TRIM_THRESHOLD_": str(64 * MIB)},
                []),
    "env_64m": ({"MALLOC_MMAP_THRESHOLD_": str(64 * MIB), "MALLOC_TRIM_THRESHOLD_": str(64 * MIB)},
                []),
    "env_256m": ({"MALLOC_MMAP_THRESHOLD_": str(256 * MIB),
                  "MALLOC_TRIM_THRESHOLD_": str(256 * MIB)}, []),
    "arena_1": ({"MALLOC_ARENA_MAX": "1"}, []),
    # M_MMAP_THRESHOLD = -3, M_TRIM_THRESHOLD = -1, M_TOP_PAD = -2
    "mallopt_32m": ({}, [(-3, 32 * MIB), (-1, 64 * MIB)]),
    "mallopt_32m_pad": ({}, [(-3, 32 * MIB), (-1, 64 * MIB), (-2, 16 * MIB)]),
    "mallopt_256m": ({}, [(-3, 256 * MIB), (-1, 256 * MIB)]),
    # jobs.engine.allocator.tune_malloc(), as `tidemark replay` calls it
    "tune_malloc": ({}, []),
}
CASES = {
    # case -> engine kind of replay_throughput.run_case
    "sliding_final": "kernels",
    "session_final": "kernels",
    "tumbling_count_triggers_retracting": "vectorized",
}


def one(case: str, kind: str, n: int, keys: int, batch: int, drives: int,
        mallopt: list[tuple[int, int]], tune: bool = False) -> dict[str, Any]:
    """One process: the settings, then ``drives`` columnar drives of ``case``."""
    applied = []
    if mallopt:
        libc = ctypes.CDLL("libc.so.6")
        applied = [int(libc.mallopt(p, v)) for p, v in mallopt]
    if tune:
        from jobs.engine.allocator import tune_malloc

        applied = [int(tune_malloc())]
    import replay_throughput as rt

    defn = rt.definition(case)
    batches = rt.make_data(n, keys, batch, "str")
    cls: Any
    if kind == "kernels":
        cls = rt.SlidingKernelEngine if defn.window.type == "sliding" else rt.SessionKernelEngine
    else:
        cls = rt.fast_engine(defn)
    cls(defn).ingest(batches[0])  # compiled code loaded before timing
    columnar = hasattr(cls, "ingest_columns")
    gc.collect()
    rusage = resource.getrusage(resource.RUSAGE_SELF)
    baseline_rss = rusage.ru_maxrss
    runs = []
    for _ in range(drives):
        eng = cls(defn)
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t = time.process_time()
        if columnar:
            rt.drive_columns(eng, batches)
        else:
            rt.drive(eng, batches, False)
        cpu = time.process_time() - t
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        del eng
        runs.append({"cpu_s": round(cpu, 4), "minflt": r1.ru_minflt - r0.ru_minflt,
                     "sys_s": round(r1.ru_stime - r0.ru_stime, 4)})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"engine_class": cls.__name__, "api": "columnar" if columnar else "objects",
            "mallopt_returned": applied, "runs": runs,
            "baseline_rss_mb": round(baseline_rss / 1024, 1), "peak_rss_mb": round(peak / 1024, 1),
            "load_avg_1m": round(os.getloadavg()[0], 2)}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per case and setting: medians over rounds of the first drive and of the best drive, and
    per round the ratio of each setting's best CPU to ``base``'s in the same round."""
    out: dict[str, Any] = {}
    for case in sorted({r["case"] for r in rows}):
        per: dict[str, Any] = {}
        base = {r["round"]: min(x["cpu_s"] for x in r["runs"])
                for r in rows if r["case"] == case and r["setting"] == "base"}
        for setting in SETTINGS:
            rs = [r for r in rows if r["case"] == case and r["setting"] == setting]
            if not rs:
                continue
            best = [min(x["cpu_s"] for x in r["runs"]) for r in rs]
            ratios = [round(min(x["cpu_s"] for x in r["runs"]) / base[r["round"]], 3)
                      for r in rs if r["round"] in base]
            per[setting] = {
                "median_first_cpu_s": round(statistics.median(r["runs"][0]["cpu_s"] for r in rs), 4),
                "median_best_cpu_s": round(statistics.median(best), 4),
                "median_first_minflt": int(statistics.median(r["runs"][0]["minflt"] for r in rs)),
                "median_later_minflt": int(statistics.median(
                    statistics.median(x["minflt"] for x in r["runs"][1:]) for r in rs))
                if len(rs[0]["runs"]) > 1 else None,
                "median_first_sys_s": round(statistics.median(r["runs"][0]["sys_s"] for r in rs), 4),
                "median_later_sys_s": round(statistics.median(
                    x["sys_s"] for r in rs for x in r["runs"][1:]), 4)
                if len(rs[0]["runs"]) > 1 else None,
                "total_cpu_s_all_drives": round(sum(x["cpu_s"] for r in rs for x in r["runs"]), 3),
                "median_peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
                "best_cpu_ratio_vs_base_per_round": ratios,
                "rounds_faster_than_base": sum(1 for x in ratios if x < 1.0),
            }
        out[case] = per
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--drives", type=int, default=3, help="columnar drives per process")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--output", type=Path, default=RESULTS)
    ap.add_argument("--resummarize", action="store_true",
                    help="recompute the summary of --output from its runs")
    ap.add_argument("--one", nargs=2, metavar=("CASE", "SETTING"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        case, setting = args.one
        print(json.dumps(one(case, CASES[case], args.events, args.keys, args.batch, args.drives,
                             SETTINGS[setting][1], setting == "tune_malloc")))
        return
    if args.resummarize:
        doc = json.loads(args.output.read_text())
        doc["summary"] = summarize(doc["runs"])
        args.output.write_text(json.dumps(doc, indent=2) + "\n")
        return
    settings = [s for s in args.settings.split(",") if s]
    rows: list[dict[str, Any]] = []
    for case in [c for c in args.cases.split(",") if c]:
        for rnd in range(args.rounds):
            k = rnd % len(settings)
            for setting in settings[k:] + settings[:k]:
                env = {**os.environ, **SETTINGS[setting][0]}
                if setting != "tune_malloc":
                    env["TIDEMARK_MALLOC_TUNING"] = "off"
                cmd = [sys.executable, __file__, "--events", str(args.events), "--keys",
                       str(args.keys), "--batch", str(args.batch), "--drives", str(args.drives),
                       "--one", case, setting]
                res = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
                row = {"case": case, "setting": setting, "round": rnd,
                       **json.loads(res.stdout.strip().splitlines()[-1])}
                print(json.dumps(row), flush=True)
                rows.append(row)
                write(args, rows)


def write(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({
        "benchmark": "allocator_replay",
        "machine": {"python": platform.python_version(), "glibc": platform.libc_ver()[1],
                    "cpu": platform.processor() or platform.machine()},
        "params": {"events": args.events, "keys": args.keys, "batch": args.batch,
                   "drives": args.drives, "rounds": args.rounds, "key_type": "str",
                   "api": "columnar (ingest_columns) where the engine has it, else objects (ingest)"},
        "settings": {k: {"env": v[0], "mallopt": v[1]} for k, v in SETTINGS.items()},
        "note": "cpu_s = time.process_time of one drive; minflt = ru_minflt delta of that "
                "drive; peak_rss_mb = ru_maxrss of the process (input data included)",
        "summary": summarize(rows),
        "runs": rows,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
