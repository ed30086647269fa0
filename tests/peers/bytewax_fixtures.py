"""Expected outputs of random streams, computed by Bytewax 0.21.1 itself, as JSON fixtures.

Run from the repository root (``make peer-fixtures`` does the same)::

    .venv/bin/python tests/peers/bytewax_fixtures.py

It creates a virtualenv *outside* the repository (``$TIDEMARK_PEERS_HOME``, default
``~/.cache/tidemark-peers/bytewax-0.21.1``), installs ``bytewax==0.21.1`` into it, generates
the streams from fixed seeds (so a re-run writes the same file), runs each through a Bytewax
dataflow in that virtualenv and writes ``tests/peers/fixtures/bytewax_0_21_1.json``. The file
is regenerated, never edited by hand; ``tests/peers/test_bytewax_differential.py`` replays the
same streams through tidemark and compares.

The streams are what Bytewax can express and tidemark models the same way: one watermark per
key (``EventClock`` = ``watermark: {strategy: bounded, scope: key, delay: wait}``), a record
before its key's watermark is late and joins no window (``lateness_basis: event``), windows emit
once when they close (``emit: final``, no allowed lateness), system time never moves (a fixed
``now_getter``: a plain log read faster than real time, so no idle advance). Event times are
whole minutes and the session gap is 4.5 minutes, so no distance between two records ever
equals the gap: Bytewax joins records exactly one gap apart into one session, tidemark keeps
them apart (docs/semantics.md, "Peers").
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

BYTEWAX = "bytewax==0.21.1"
HERE = Path(__file__).resolve().parent
OUT = HERE / "fixtures" / "bytewax_0_21_1.json"
BASE = "2024-01-01T00:00:00+00:00"
STREAMS = 36
WINDOWS: list[dict[str, Any]] = [
    {"type": "tumbling", "size_s": 300},
    {"type": "tumbling", "size_s": 600},
    {"type": "hopping", "size_s": 600, "step_s": 300},
    {"type": "hopping", "size_s": 900, "step_s": 300},
    {"type": "session", "gap_s": 270},
    {"type": "session", "gap_s": 450},
]


def venv_python() -> Path:
    home = Path(os.environ.get(
        "TIDEMARK_PEERS_HOME", Path.home() / ".cache" / "tidemark-peers" / "bytewax-0.21.1"))
    py = home / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    probe = subprocess.run([str(py), "-c", "import bytewax"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(py), "-m", "pip", "install", "-q", BYTEWAX], check=True)
    return py


def streams() -> list[dict[str, Any]]:
    """Random streams from fixed seeds: keys a/b/c, whole-minute event times that mostly move
    forward, with out-of-order records (a few minutes back) and late ones (far back)."""
    out = []
    for i in range(STREAMS):
        rnd = random.Random(1000 + i)
        window = WINDOWS[i % len(WINDOWS)]
        delay_s = rnd.choice([0, 0, 60, 180, 300])
        now = {k: 0 for k in "abc"}
        recs = []
        for j in range(rnd.randint(12, 40)):
            k = rnd.choice("abc")
            roll = rnd.random()
            if roll < 0.65:
                now[k] += rnd.randint(0, 4)
                t = now[k]
            elif roll < 0.9:
                t = max(0, now[k] - rnd.randint(1, 5))  # out of order
            else:
                t = max(0, now[k] - rnd.randint(6, 30))  # late
            recs.append({"id": j, "k": k, "t_s": t * 60, "v": rnd.randint(-5, 20)})
        out.append({"case": f"s{i:02d}-{window['type']}", "window": window,
                    "delay_s": delay_s, "records": recs})
    return out


def run_bytewax(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Inside the Bytewax virtualenv: each case through ``collect_window`` (one key stream, in
    the records' order, one item a batch)."""
    from datetime import datetime, timedelta

    import bytewax.operators as op
    import bytewax.operators.windowing as win
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    base = datetime.fromisoformat(BASE)
    results = []
    for case in cases:
        w = case["window"]
        if w["type"] == "tumbling":
            windower: Any = win.TumblingWindower(timedelta(seconds=w["size_s"]), base)
        elif w["type"] == "hopping":
            windower = win.SlidingWindower(timedelta(seconds=w["size_s"]),
                                           timedelta(seconds=w["step_s"]), base)
        else:
            windower = win.SessionWindower(timedelta(seconds=w["gap_s"]))
        clock = win.EventClock(
            lambda r: base + timedelta(seconds=r["t_s"]),
            wait_for_system_duration=timedelta(seconds=case["delay_s"]),
            now_getter=lambda: base,
        )
        flow = Dataflow("peer")
        items = op.input("in", flow, TestingSource(case["records"]))
        keyed = op.key_on("key", items, lambda r: r["k"])
        wo = win.collect_window("w", keyed, clock, windower)
        down: list[Any] = []
        meta: list[Any] = []
        late: list[Any] = []
        op.output("down", wo.down, TestingSink(down))
        op.output("meta", wo.meta, TestingSink(meta))
        op.output("late", wo.late, TestingSink(late))
        run_main(flow)
        bounds = {(k, wid): m for k, (wid, m) in meta}
        panes = []
        for k, (wid, recs) in down:
            m = bounds[(k, wid)]
            panes.append({
                "key": k,
                "open_s": int((m.open_time - base).total_seconds()),
                "close_s": int((m.close_time - base).total_seconds()),
                "ids": sorted(r["id"] for r in recs),
                "sum": sum(r["v"] for r in recs),
            })
        lates = []
        for k, (wid, r) in late:
            start = None
            if w["type"] != "session":
                step = w.get("step_s", w.get("size_s"))
                start = wid * step
            lates.append({"key": k, "id": r["id"], "window_start_s": start})
        panes.sort(key=lambda p: (p["key"], p["open_s"], p["close_s"]))
        lates.sort(key=lambda x: (x["key"], x["id"], x["window_start_s"] or 0))
        results.append({**case, "expected": {"panes": panes, "late": lates}})
    return results


def main() -> None:
    if "--inside" in sys.argv:
        from importlib.metadata import version

        json.dump({"peer": f"bytewax {version('bytewax')}",
                   "cases": run_bytewax(json.load(sys.stdin))}, sys.stdout)
        return
    py = venv_python()
    proc = subprocess.run([str(py), str(Path(__file__).resolve()), "--inside"],
                          input=json.dumps(streams()), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bytewax run failed:\n{proc.stderr}")
    got = json.loads(proc.stdout)
    cases = got["cases"]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "generated_by": "tests/peers/bytewax_fixtures.py (do not edit by hand)",
        "peer": got["peer"],
        "base": BASE,
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{OUT}: {len(cases)} streams")


if __name__ == "__main__":
    main()
