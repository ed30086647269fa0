"""Where the driver's per-batch planning goes: the hand-written Kafka query against tidemark's
native path, batch by batch (a diagnostic, not a throughput benchmark).

Both queries read the same topic as ``benchmarks/spark_throughput.py``'s Kafka variants (a
broker started for the run, ``maxOffsetsPerTrigger`` = events / files), each in its own driver
process, one after the other. Per data batch, from a streaming query listener on the driver:
- the progress event's ``durationMs`` phases;
- the batch's own planning tracker (``IncrementalExecution.tracker``): time per phase and per
  Catalyst rule of the streaming query's plan (its analysis, optimization and planning);
- Catalyst's global rule meter (``RuleExecutor.getCurrentMetrics``): every plan the JVM
  optimised in that batch, the ``foreachBatch`` pane write's own plan included;
- Spark's code generator (``CodegenMetrics``): classes compiled and their milliseconds;
- CPU of the stream execution thread and of py4j's callback threads (``/proc``).
The listener runs after the batch ended (asynchronously): a batch's deltas may hold the first
moments of the next one; sums over a run are exact.

After the run: the size of the last batch's executed and optimised plans (nodes,
expressions, distinct expression classes, by class), the whole run's rule times
(``RuleExecutor.dumpTimeSpent``, parsed) and the time to generate each whole-stage codegen
subtree's Java source again (``WholeStageCodegenExec.doCodeGen``, which every batch runs
before the compile cache answers), repeated to a median.

Usage: python benchmarks/kafka_planning.py [--events 200000] [--files 20]
       [--variants spark_native_kafka,tidemark_native_kafka] --output FILE
A variant may name the tidemark checkout its child imports (``tidemark_native_kafka@/work/main``):
two versions of the code side by side in one invocation, on the same topic.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CODE_ENV = "KAFKA_PLANNING_CODE"
"""A child's tidemark checkout (``variant@directory`` on the command line; this one without)."""
sys.path.insert(0, os.environ.get(CODE_ENV, str(ROOT)))
import jobs  # noqa: E402,F401  (bound to that checkout before spark_throughput puts ROOT first)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_kafka_variants import (  # noqa: E402  (after the path)
    jvm_pid,
    jvm_thread_cpu,
    kafka_options,
    start_kafka,
)
from spark_throughput import SCHEMA, generate, spec  # noqa: E402


def _scala_map(jvm: Any, m: Any) -> dict[str, Any]:
    return dict(jvm.scala.jdk.javaapi.CollectionConverters.asJava(m))


def _rule_meter(jvm: Any) -> dict[str, int]:
    m = jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.getCurrentMetrics()
    return {"time_ns": int(m.time()), "runs": int(m.numRuns()),
            "effective_runs": int(m.numEffectiveRuns()), "effective_ns": int(m.timeEffective())}


def _codegen(jvm: Any) -> dict[str, float]:
    h = jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    n = int(h.getCount())
    return {"compiled": n, "compile_ms": n * float(h.getSnapshot().getMean())}


def _tracker(execution: Any, jvm: Any) -> dict[str, Any]:
    """Phases (ms) and rules (ns, invocations) of one batch's planning tracker."""
    tracker = execution.tracker()
    phases = {k: int(v.durationMs()) for k, v in _scala_map(jvm, tracker.phases()).items()}
    rules = {k: [int(v.totalTimeNs()), int(v.numInvocations()), int(v.numEffectiveInvocations())]
             for k, v in _scala_map(jvm, tracker.rules()).items()}
    return {"phases_ms": phases, "rules": rules}


def plan_shape(plan_json: str) -> dict[str, Any]:
    """Nodes, expressions and distinct expression classes of a plan's ``toJSON``: the plan is a
    pre-order list of nodes; each expression field holds a pre-order list of one expression's
    nodes (counted as they are; fields that are not children, such as a UDF's encoders, are
    not expressions of the plan and not walked)."""
    nodes = json.loads(plan_json)
    classes: Counter[str] = Counter()
    per_node: list[list[Any]] = []

    def walk(value: Any) -> int:
        if isinstance(value, list):
            if value and all(isinstance(v, dict) and "num-children" in v for v in value):
                for v in value:
                    classes[v["class"].rsplit(".", 1)[-1]] += 1
                return len(value)
            return sum(walk(v) for v in value)
        if isinstance(value, dict):
            return sum(walk(v) for v in value.values())
        return 0

    for n in nodes:
        count = sum(walk(v) for k, v in n.items() if k not in ("class", "num-children"))
        per_node.append([n["class"].rsplit(".", 1)[-1], count])
    return {"nodes": len(per_node), "expressions": sum(classes.values()),
            "distinct_expression_classes": len(classes), "expressions_by_node": per_node,
            "expressions_by_class": dict(classes.most_common())}


def replan(spark: Any, execution: Any, reps: int = 25, warm: int = 5) -> dict[str, Any]:
    """The last batch's logical plan analysed, optimised and planned again ``reps`` times in
    this (warm) JVM, as every batch does: medians in ms per phase, and each rule's time summed
    over the runs after ``warm`` (ms per run)."""
    jvm = spark.sparkContext._jvm
    state = spark._jsparkSession.sessionState()
    tracker_cls = jvm.org.apache.spark.sql.catalyst.QueryPlanningTracker
    no_callback = getattr(tracker_cls, "$lessinit$greater$default$1")()
    qe = jvm.org.apache.spark.sql.execution.QueryExecution
    times: dict[str, list[float]] = {"analysis": [], "optimization": [], "planning": []}
    rules: Counter[str] = Counter()
    for i in range(reps):
        tracker = tracker_cls(no_callback)
        t0 = time.perf_counter()
        analyzed = state.analyzer().executeAndCheck(execution.logical().clone(), tracker)
        t1 = time.perf_counter()
        optimized = state.optimizer().executeAndTrack(analyzed, tracker)
        t2 = time.perf_counter()
        # the micro-batch write node is planned by the stream itself: plan what it writes
        if optimized.getClass().getSimpleName().startswith("WriteToMicroBatch"):
            optimized = optimized.children().apply(0)
        qe.createSparkPlan(execution.planner(), optimized)
        t3 = time.perf_counter()
        if i < warm:
            continue
        for name, ms in zip(times, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            times[name].append(ms * 1000)
        for k, v in _scala_map(jvm, tracker.rules()).items():
            rules[k.rsplit(".", 1)[-1]] += int(v.totalTimeNs())
    n = reps - warm
    return {"median_ms": {k: round(statistics.median(v), 2) for k, v in times.items()},
            "rules_ms": {k: round(v / n / 1e6, 3) for k, v in rules.most_common(30)},
            "rules_total_ms": round(sum(rules.values()) / n / 1e6, 2)}


DUMP_LINE = re.compile(r"^(\S+)\s+(\d+)\s*/\s*(\d+)\s+(\d+)\s*/\s*(\d+)\s*$")


def parse_dump(text: str) -> dict[str, list[int]]:
    """``RuleExecutor.dumpTimeSpent``: rule -> [total ns, effective ns, runs, effective runs]."""
    out: dict[str, list[int]] = {}
    for line in text.splitlines():
        m = DUMP_LINE.match(line.strip())
        if m:
            out[m.group(1).rsplit(".", 1)[-1]] = [int(m.group(3)), int(m.group(2)),
                                                   int(m.group(5)), int(m.group(4))]
    return out


def _codegen_subtrees(plan: Any) -> list[Any]:
    found: list[Any] = []
    stack = [plan]
    while stack:
        p = stack.pop()
        if p.getClass().getSimpleName() == "WholeStageCodegenExec":
            found.append(p)
        children = p.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return found


def codegen_source_ms(plan: Any, reps: int = 15) -> list[dict[str, Any]]:
    """Median time to generate each whole-stage subtree's Java source again (py4j included)."""
    out = []
    for wsc in _codegen_subtrees(plan):
        times = []
        size = 0
        for _ in range(reps):
            t = time.perf_counter()
            code = wsc.doCodeGen()._2()
            times.append((time.perf_counter() - t) * 1000)
            size = len(code.body())
        out.append({"stage": int(wsc.codegenStageId()), "source_chars": size,
                    "median_ms": round(statistics.median(times[3:]), 2)})
    return out


# ---------------------------------------------------------------- one variant (child process)

def run_child(variant: str, data: Path, work: Path) -> dict[str, Any]:
    from pyspark.sql.streaming import StreamingQueryListener

    from jobs.config import Settings
    from jobs.spark.session import build_session

    settings = Settings.from_env({"TIDEMARK_HOME": str(work), "TIDEMARK_SPARK_MASTER": "local[2]"})
    spark = build_session(settings, app_name=f"planning-{variant}", shuffle_partitions=2)
    jvm: Any = spark.sparkContext._jvm
    pid = jvm_pid(spark)
    batches: list[dict[str, Any]] = []
    last: dict[str, Any] = {"rules": _rule_meter(jvm), "codegen": _codegen(jvm),
                            "threads": jvm_thread_cpu(pid)}

    class Probe(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            p = event.progress
            if int(p.numInputRows or 0) <= 0:
                return
            row: dict[str, Any] = {"batch": int(p.batchId), "durations_ms": dict(p.durationMs)}
            rules, codegen, threads = _rule_meter(jvm), _codegen(jvm), jvm_thread_cpu(pid)
            row["catalyst_all_ms"] = round((rules["time_ns"] - last["rules"]["time_ns"]) / 1e6, 1)
            row["catalyst_all_runs"] = rules["runs"] - last["rules"]["runs"]
            row["codegen_compiled"] = codegen["compiled"] - last["codegen"]["compiled"]
            row["codegen_compile_ms"] = round(
                codegen["compile_ms"] - last["codegen"]["compile_ms"], 1)
            row["thread_cpu_s"] = {g: round(threads.get(g, 0.0) - last["threads"].get(g, 0.0), 3)
                                   for g in ("stream_thread", "py4j_callbacks", "jit_c2",
                                             "jit_c1", "tasks")}
            last.update(rules=rules, codegen=codegen, threads=threads)
            jq = spark.streams.get(str(p.id))
            execution = jq._jsq.streamingQuery().lastExecution() if jq is not None else None
            if execution is not None and int(execution.currentBatchId()) == int(p.batchId):
                row["tracker"] = _tracker(execution, jvm)
            batches.append(row)

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    spark.streams.addListener(Probe())
    jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.resetMetrics()
    last["rules"] = _rule_meter(jvm)
    started = time.monotonic()
    if variant == "spark_native_kafka":
        from spark_kafka_variants import start_spark_native_kafka

        q = start_spark_native_kafka(spark, work, SCHEMA)
        q.awaitTermination()
    else:
        from jobs.definition import load_definition
        from jobs.spark.context import JobContext
        from jobs.spark.runner import JobRunner, RunOptions

        raw = spec("bench", data, full=False)
        raw["source"] = {"kind": "kafka", "format": "json", "schema": SCHEMA,
                         "options": kafka_options()}
        runner = JobRunner(spark, JobContext.create(load_definition(raw), settings),
                           RunOptions(until_idle=True))
        runner.run()
        assert runner.query is not None
        q = runner.query
    elapsed = time.monotonic() - started
    time.sleep(2)  # the listener's last events
    execution = q._jsq.streamingQuery().lastExecution()
    result: dict[str, Any] = {"variant": variant, "elapsed_s": round(elapsed, 2),
                              "jobs_from": str(Path(jobs.__file__).parents[1]),
                              "batches": batches}
    result["executed_plan"] = plan_shape(execution.executedPlan().toJSON())
    result["optimized_plan"] = plan_shape(execution.optimizedPlan().toJSON())
    result["executed_plan_text"] = execution.executedPlan().treeString()
    result["rules_whole_run"] = parse_dump(
        jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.dumpTimeSpent())
    result["codegen_source"] = codegen_source_ms(execution.executedPlan())
    result["replan"] = replan(spark, execution)
    spark.stop()
    return result


# ---------------------------------------------------------------- summary

def summarise(r: dict[str, Any], skip: int = 2) -> dict[str, Any]:
    """Per-batch medians and run sums (the first ``skip`` data batches left out of medians:
    they hold the query's first analysis and the JIT's cold start)."""
    rows = r["batches"]
    steady = rows[skip:]

    def med(values: list[float]) -> float | None:
        return round(statistics.median(values), 2) if values else None

    phases = sorted({k for b in rows for k in b["durations_ms"]})
    trackers = [b["tracker"] for b in steady if "tracker" in b]
    tracker_phases = sorted({k for t in trackers for k in t["phases_ms"]})
    rule_names = {k for t in trackers for k in t["rules"]}
    rule_ms = {k: med([t["rules"].get(k, [0])[0] / 1e6 for t in trackers]) for k in rule_names}
    top = dict(sorted(rule_ms.items(), key=lambda kv: -(kv[1] or 0))[:25])
    return {
        "data_batches": len(rows),
        "batches_with_tracker": len(trackers),
        "median_durations_ms": {p: med([b["durations_ms"].get(p, 0) for b in steady])
                                for p in phases},
        "sum_durations_ms": {p: sum(b["durations_ms"].get(p, 0) for b in rows) for p in phases},
        "median_tracker_phases_ms": {p: med([t["phases_ms"].get(p, 0) for t in trackers])
                                     for p in tracker_phases},
        "median_tracker_rules_ms_sum": med([sum(v[0] for v in t["rules"].values()) / 1e6
                                            for t in trackers]),
        "median_tracker_rule_invocations": med([sum(v[1] for v in t["rules"].values())
                                                for t in trackers]),
        "median_catalyst_all_ms": med([b["catalyst_all_ms"] for b in steady]),
        "sum_catalyst_all_ms": round(sum(b["catalyst_all_ms"] for b in rows), 1),
        "median_catalyst_all_runs": med([b["catalyst_all_runs"] for b in steady]),
        "sum_codegen_compiled": sum(b["codegen_compiled"] for b in rows),
        "sum_codegen_compile_ms": round(sum(b["codegen_compile_ms"] for b in rows), 1),
        "sum_thread_cpu_s": {g: round(sum(b["thread_cpu_s"][g] for b in rows), 2)
                             for g in rows[0]["thread_cpu_s"]} if rows else {},
        "median_stream_thread_cpu_ms": med([b["thread_cpu_s"]["stream_thread"] * 1000
                                            for b in steady]),
        "top_tracker_rules_median_ms": top,
        "executed_plan": r["executed_plan"],
        "optimized_plan": {k: v for k, v in r["optimized_plan"].items()
                           if k != "expressions_by_node"},
        "replan": r["replan"],
        "codegen_source": r["codegen_source"],
        "codegen_source_ms_total": round(sum(c["median_ms"] for c in r["codegen_source"]), 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--variants", default="spark_native_kafka,tidemark_native_kafka")
    ap.add_argument("--output")
    ap.add_argument("--child")
    ap.add_argument("--data")
    ap.add_argument("--work")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.child:
        work = Path(args.work) / args.child
        work.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(run_child(args.child, Path(args.data), work)))
        return 0
    if not args.output:
        ap.error("--output is required")
    base = Path(tempfile.mkdtemp(prefix="tidemark-planning-"))
    broker = None
    try:
        data = base / "data"
        generate(data, args.events, args.keys, args.files)
        broker = start_kafka(base, data, args.events, args.files)
        runs: dict[str, Any] = {}
        for i, name in enumerate(args.variants.split(",")):
            v, _, checkout = name.partition("@")
            code_root = str(Path(checkout).resolve()) if checkout else str(ROOT)
            out = base / f"{i}-{v}.json"
            load = os.getloadavg()[0]
            code = subprocess.call(
                [sys.executable, __file__, "--child", v, "--data", str(data), "--work",
                 str(base / str(i)), "--out", str(out)], cwd=code_root,
                env={**os.environ, "PYTHONPATH": code_root, CODE_ENV: code_root})
            if code != 0:
                runs[name] = {"error": f"exit code {code}"}
                continue
            r = json.loads(out.read_text())
            r["load_avg_1m"] = [round(load, 2), round(os.getloadavg()[0], 2)]
            r["summary"] = summarise(r)
            r["code"] = r.pop("jobs_from", code_root)
            runs[name] = r
        report = {"benchmark": "kafka_planning",
                  "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "events": args.events, "files": args.files, "runs": runs}
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
        print(json.dumps({v: r.get("summary", r) for v, r in runs.items()}, indent=2))
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
