"""Where a JVM's CPU went, from a Java Flight Recorder file: CPU samples by thread group and by
top method / package, per-thread CPU (threads that ended included), JIT compilations by
compiler and package, GC pauses.

``/proc`` (benchmarks/spark_kafka_variants.py ``jvm_thread_cpu``) only sees the threads alive
when it is read; a recording also keeps the threads that ended (per-task threads) and names
what the JIT compiled, which is what comparing two queries' JVM cost needs. Record a run with
``JAVA_TOOL_OPTIONS="-XX:StartFlightRecording=filename=X.jfr,settings=profile,dumponexit=true"``
(the ``profile`` settings log only compilations over 100 ms: a copy of ``profile.jfc`` with
``jdk.Compilation``'s threshold at ``0 ms`` lists them all; ``jdk.ThreadCPULoad`` at ``1 s``
catches short threads). Reads the file with the JDK's ``jfr print --json``; stdlib only.

Usage: python benchmarks/jfr_breakdown.py FILE.jfr [--top N] [--output OUT.json]
       [--stack-depth D] [--jfr PATH] [--window-thread PREFIX]
By default only the streaming query's run counts (the span of its ``stream execution thread``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

THREAD_GROUPS = (
    ("C2 CompilerThread", "jit_c2"), ("C1 CompilerThread", "jit_c1"),
    ("GC Thread", "gc"), ("G1 ", "gc"), ("VM Thread", "vm"),
    ("Executor task launch worker", "tasks"), ("stream execution thread", "stream_thread"),
    ("dag-scheduler", "scheduler"), ("Thread-", "py4j_callbacks"), ("py4j", "py4j"),
    ("stdout writer", "python_runner"), ("stderr reader", "python_runner"),
    ("Worker Monitor", "python_runner"), ("Idle Worker Monitor", "python_runner"),
    ("python", "python_runner"), ("state", "state_server"), ("State", "state_server"),
    ("rocksdb", "rocksdb"), ("RocksDB", "rocksdb"), ("shuffle", "shuffle"),
    ("block-manager", "block_manager"), ("dispatcher-", "rpc"), ("rpc-", "rpc"),
    ("netty", "rpc"), ("spark-listener", "listener_bus"), ("Spark Context Cleaner", "cleaner"),
    ("JFR", "jfr"), ("Common-Cleaner", "cleaner"), ("Sweeper", "vm"),
)
"""Thread-name prefixes (JFR's full Java or OS thread names) by what the thread does; the rest
are ``other`` and listed by :func:`name_pattern`."""

WINDOW_THREAD = "stream execution thread"
"""By default only the events of a streaming query's run count (see :class:`Recording`)."""

GENERATED = re.compile(r"GeneratedClass|SpecificUnsafeProjection|SpecificSafeProjection|"
                       r"SpecificPredicate|SpecificOrdering|GeneratedIterator")


INCLUSIVE = re.compile(r"org\.apache\.(spark|arrow)|tidemark")
"""Classes whose methods are counted on every sample whose stack holds them (``inclusive``:
where a thread's time goes, below the top frame's library code)."""


def thread_group(name: str) -> str:
    return next((g for pat, g in THREAD_GROUPS if name.startswith(pat)), "other")


def name_pattern(name: str) -> str:
    """A thread name with its numbers as ``N``: per-task threads collapse to one pattern."""
    return re.sub(r"\d+(\.\d+)?", "N", name)


def jfr_events(path: Path, events: str, jfr: str, stack_depth: int = 5) -> list[dict[str, Any]]:
    """The events ``events`` (comma-separated names) of recording ``path``, as JSON values."""
    out = subprocess.run([jfr, "print", "--json", "--stack-depth", str(stack_depth),
                          "--events", events, str(path)],
                         check=True, capture_output=True, text=True).stdout
    return [e for e in json.loads(out)["recording"]["events"]]


EVENTS = ("jdk.ExecutionSample,jdk.ThreadCPULoad,jdk.ThreadStart,jdk.ThreadEnd,jdk.CPULoad,"
          "jdk.Compilation,jdk.CompilerStatistics,jdk.GarbageCollection,jdk.CPUInformation")
"""The events the breakdown reads, printed in one pass of ``jfr print``."""


class Recording:
    """A recording's events, those of the window only: the span of the threads whose name
    starts with ``window_thread`` (a streaming query's ``stream execution thread``: the query's
    run, without the JVM's start and what follows the query), or all with an empty pattern."""

    def __init__(self, path: Path, jfr: str, window_thread: str = "", depth: int = 64) -> None:
        self.path = path
        self.by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in jfr_events(path, EVENTS, jfr, depth):
            self.by_type[e["type"]].append(e)
        self.window: tuple[float, float] | None = None
        if window_thread:
            times = [instant(e["values"]["startTime"])
                     for name in ("jdk.ThreadCPULoad", "jdk.ExecutionSample")
                     for e in self.by_type[name]
                     if thread_name(e["values"].get("eventThread")
                                    or e["values"].get("sampledThread")).startswith(window_thread)]
            if times:
                self.window = (min(times), max(times))

    def events(self, name: str, windowed: bool = True) -> list[dict[str, Any]]:
        out = self.by_type.get(name, [])
        if self.window is None or not windowed:
            return out
        lo, hi = self.window
        return [e for e in out if lo <= instant(e["values"]["startTime"]) <= hi]


def seconds(value: Any) -> float:
    """A JFR duration (``PT1.5S``, ``PT2M3.1S``, or a number of nanoseconds) in seconds."""
    if isinstance(value, (int, float)):
        return float(value) / 1e9
    m = re.fullmatch(r"-?PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", str(value))
    if not m:
        return 0.0
    h, mi, s = m.groups()
    return int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)


def instant(value: str) -> float:
    """A JFR timestamp (ISO-8601, nanoseconds) as epoch seconds."""
    head, _, frac = value.rstrip("Z").partition(".")
    base = datetime.fromisoformat(head + "+00:00").timestamp()
    return base + (float("0." + frac) if frac else 0.0)


def thread_name(t: dict[str, Any] | None) -> str:
    if not t:
        return "?"
    return str(t.get("javaName") or t.get("osName") or "?")


def class_name(method: dict[str, Any]) -> str:
    return str((method.get("type") or {}).get("name") or "?").replace("/", ".")


def package(method: dict[str, Any]) -> str:
    cls = class_name(method)
    if GENERATED.search(cls):
        return "(spark generated code)"
    pkg = ((method.get("type") or {}).get("package") or {}).get("name")
    return str(pkg).replace("/", ".") if pkg else cls.rpartition(".")[0] or "(default)"


def family(pkg: str) -> str:
    """A package's first three components (``org.apache.spark``, ``java.util.concurrent``)."""
    return pkg if pkg.startswith("(") else ".".join(pkg.split(".")[:3])


def method_name(method: dict[str, Any]) -> str:
    return f"{class_name(method)}.{method.get('name', '?')}"


def top(counter: Counter[str] | dict[str, float], n: int, scale: float = 1.0) -> dict[str, float]:
    items = sorted(counter.items(), key=lambda kv: -kv[1])[:n]
    return {k: round(v * scale, 2) for k, v in items}


def cpu_count(rec: Recording) -> int:
    info = rec.events("jdk.CPUInformation", windowed=False)
    if info:
        return int(info[0]["values"].get("hwThreads") or os.cpu_count() or 1)
    return os.cpu_count() or 1


def load_integral(events: list[dict[str, Any]], ncpu: int, key: Any,
                  started: dict[Any, float] | None = None) -> dict[Any, float]:
    """CPU seconds from periodic load events (fractions of the whole machine over the time
    since the previous reading). The JVM reads all threads together once a period but writes
    an event only for a thread that used 1 ms or more, so each event weighs the time since the
    previous reading of any thread (events within 50 ms are one reading), the first one of a
    thread at most the time since it started (``started``, when known)."""
    rows = sorted(((instant(e["values"]["startTime"]), e["values"]) for e in events),
                  key=lambda r: r[0])
    readings: list[float] = []
    for t, _ in rows:
        if not readings or t - readings[-1] > 0.05:
            readings.append(t)
    gaps = [b - a for a, b in zip(readings, readings[1:], strict=False)]
    period = sorted(gaps)[len(gaps) // 2] if gaps else 1.0
    out: dict[Any, float] = defaultdict(float)
    seen: set[Any] = set()
    i = 0
    for t, v in rows:
        while i + 1 < len(readings) and readings[i + 1] <= t:
            i += 1
        weight = readings[i] - readings[i - 1] if i > 0 else period
        k = key(v)
        if k not in seen and started is not None and k in started:
            weight = max(0.0, min(weight, t - started[k]))
        seen.add(k)
        load = float(v.get("user", v.get("jvmUser", 0.0))) + \
            float(v.get("system", v.get("jvmSystem", 0.0)))
        out[k] += load * weight * ncpu
    return out


def samples_breakdown(rec: Recording, n: int) -> dict[str, Any]:
    events = rec.events("jdk.ExecutionSample")
    by_group: Counter[str] = Counter()
    by_pattern: Counter[str] = Counter()
    top_methods: Counter[str] = Counter()
    top_packages: Counter[str] = Counter()
    top_families: Counter[str] = Counter()
    group_methods: dict[str, Counter[str]] = defaultdict(Counter)
    group_packages: dict[str, Counter[str]] = defaultdict(Counter)
    group_inclusive: dict[str, Counter[str]] = defaultdict(Counter)
    for e in events:
        v = e["values"]
        name = thread_name(v.get("sampledThread"))
        group = thread_group(name)
        by_group[group] += 1
        by_pattern[name_pattern(name)] += 1
        frames = (v.get("stackTrace") or {}).get("frames") or []
        if not frames:
            continue
        m = frames[0]["method"]
        pkg = package(m)
        top_methods[method_name(m)] += 1
        top_packages[pkg] += 1
        top_families[family(pkg)] += 1
        group_methods[group][method_name(m)] += 1
        group_packages[group][family(pkg)] += 1
        # inclusive: each Spark / tidemark / Arrow method on the stack, once per sample
        group_inclusive[group].update({method_name(f["method"]) for f in frames
                                       if INCLUSIVE.match(class_name(f["method"]))})
    return {
        "count": len(events),
        "by_thread_group": top(by_group, 100),
        "by_thread_name": top(by_pattern, n),
        "top_methods": top(top_methods, n),
        "top_packages": top(top_packages, n),
        "top_families": top(top_families, n),
        "by_group_top_methods": {g: top(c, max(5, n // 3)) for g, c in group_methods.items()},
        "by_group_top_families": {g: top(c, max(5, n // 3)) for g, c in group_packages.items()},
        "by_group_inclusive_methods": {g: top(c, n) for g, c in group_inclusive.items()},
    }


def thread_cpu(rec: Recording, ncpu: int, n: int) -> dict[str, Any]:
    """CPU seconds per thread group from ``jdk.ThreadCPULoad`` (threads that ended included, up
    to their last reading: the CPU of a thread's last period before it ends is not in it), and
    how many threads of each group were seen and ended."""
    loads = rec.events("jdk.ThreadCPULoad")
    starts = {(e["values"].get("thread") or {}).get("javaThreadId"): instant(e["values"]["startTime"])
              for e in rec.events("jdk.ThreadStart", windowed=False)}
    per = load_integral(loads, ncpu, lambda v: v["eventThread"].get("javaThreadId"), starts)
    names = {v["eventThread"].get("javaThreadId"): thread_name(v["eventThread"])
             for v in (e["values"] for e in loads)}
    ended = {(e["values"].get("thread") or {}).get("javaThreadId")
             for e in rec.events("jdk.ThreadEnd")}
    by_group: dict[str, float] = defaultdict(float)
    ended_group: dict[str, float] = defaultdict(float)
    by_pattern: dict[str, float] = defaultdict(float)
    threads: Counter[str] = Counter()
    for tid, cpu in per.items():
        name = names[tid]
        g = thread_group(name)
        by_group[g] += cpu
        by_pattern[name_pattern(name)] += cpu
        threads[g] += 1
        if tid in ended:
            ended_group[g] += cpu
    return {
        "total_s": round(sum(per.values()), 2),
        "by_thread_group_s": top(by_group, 100),
        "ended_threads_by_group_s": top(ended_group, 100),
        "by_thread_name_s": top(by_pattern, n),
        "threads_by_group": dict(threads.most_common()),
        "threads_ended": len(ended),
    }


def jvm_cpu(rec: Recording, ncpu: int) -> dict[str, float]:
    """The whole JVM's CPU seconds over the recording (``jdk.CPULoad``, once a second)."""
    loads = rec.events("jdk.CPULoad")
    total = load_integral(loads, ncpu, lambda v: "jvm")
    return {"jvm_cpu_s": round(total.get("jvm", 0.0), 2), "readings": len(loads)}


def jit_breakdown(rec: Recording, n: int) -> dict[str, Any]:
    events = rec.events("jdk.Compilation")
    by_compiler: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    by_pkg: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    by_family: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    by_method: dict[str, float] = defaultdict(float)
    for e in events:
        v = e["values"]
        dur = seconds(v.get("duration"))
        size = int(v.get("codeSize") or 0)
        comp = str(v.get("compiler") or "?")
        pkg = package(v["method"])
        for bucket in (by_compiler[comp], by_pkg[f"{comp} {pkg}"],
                       by_family[f"{comp} {family(pkg)}"]):
            bucket["count"] += 1
            bucket["s"] += dur
            bucket["code_kb"] += size / 1024
        by_method[f"{comp} {method_name(v['method'])}"] += dur

    def rows(d: dict[str, dict[str, float]], k: int) -> dict[str, dict[str, float]]:
        items = sorted(d.items(), key=lambda kv: -kv[1]["s"])[:k]
        return {name: {f: round(x, 3) for f, x in vals.items()} for name, vals in items}

    stats = rec.events("jdk.CompilerStatistics")
    last = stats[-1]["values"] if stats else {}
    return {
        "compilations": len(events),
        "by_compiler": rows(by_compiler, 10),
        "by_family": rows(by_family, len(by_family)),
        "by_package": rows(by_pkg, len(by_pkg)),
        "top_methods_s": top(by_method, n),
        "compiler_statistics": {k: (seconds(x) if k.endswith("Spent") or k.endswith("Time")
                                    else x) for k, x in last.items() if k != "startTime"},
    }


def gc_breakdown(rec: Recording) -> dict[str, float]:
    events = rec.events("jdk.GarbageCollection")
    return {"collections": len(events),
            "pause_s": round(sum(seconds(e["values"].get("sumOfPauses")) for e in events), 3),
            "duration_s": round(sum(seconds(e["values"].get("duration")) for e in events), 3)}


def breakdown(path: Path, jfr: str, n: int = 25, depth: int = 64,
              window_thread: str = WINDOW_THREAD) -> dict[str, Any]:
    rec = Recording(path, jfr, window_thread, depth)
    ncpu = cpu_count(rec)
    return {
        "file": str(path),
        "window_s": round(rec.window[1] - rec.window[0], 2) if rec.window else None,
        "cpus": ncpu,
        "jvm": jvm_cpu(rec, ncpu),
        "thread_cpu": thread_cpu(rec, ncpu, n),
        "samples": samples_breakdown(rec, n),
        "jit": jit_breakdown(rec, n),
        "gc": gc_breakdown(rec),
    }


def find_jfr() -> str:
    home = os.environ.get("JAVA_HOME")
    for cand in ((f"{home}/bin/jfr",) if home else ()) + (
            "/usr/lib/jvm/java-17-openjdk-amd64/bin/jfr",):
        if os.path.exists(cand):
            return cand
    return shutil.which("jfr") or "jfr"


def summary(r: dict[str, Any], n: int) -> str:
    s, t, j = r["samples"], r["thread_cpu"], r["jit"]
    lines = [f"{r['file']} (window {r['window_s']} s): JVM CPU {r['jvm']['jvm_cpu_s']} s on {r['cpus']} CPUs; "
             f"thread CPU {t['total_s']} s ({t['threads_ended']} threads ended); "
             f"{s['count']} execution samples; {j['compilations']} compilations; "
             f"GC pauses {r['gc']['pause_s']} s"]

    def block(title: str, d: dict[str, Any]) -> None:
        lines.append(title)
        for k, v in list(d.items())[:n]:
            lines.append(f"  {v!s:>28}  {k}")
    block("thread CPU s by group (ThreadCPULoad):", t["by_thread_group_s"])
    block("  ...of threads that ended:", t["ended_threads_by_group_s"])
    block("thread CPU s by name:", t["by_thread_name_s"])
    block("execution samples by group:", s["by_thread_group"])
    block("top methods (top frame):", s["top_methods"])
    block("top packages (top frame):", s["top_packages"])
    block("JIT by compiler:", j["by_compiler"])
    block("JIT by package family:", j["by_family"])
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--output")
    ap.add_argument("--stack-depth", type=int, default=64)
    ap.add_argument("--jfr", default=find_jfr(), help="the JDK's jfr tool")
    ap.add_argument("--window-thread", default=WINDOW_THREAD,
                    help="count only the span of the threads named so ('' = whole recording)")
    args = ap.parse_args()
    r = breakdown(args.file, args.jfr, args.top, args.stack_depth, args.window_thread)
    print(summary(r, args.top))
    if args.output:
        Path(args.output).write_text(json.dumps(r, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
