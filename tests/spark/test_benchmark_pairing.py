"""The Spark benchmark's paired ratios (benchmarks/spark_throughput.py): a variant is compared
with the baselines' runs of its own round, so a machine that slows down over the invocation
does not show up as a ratio, and a failed run drops its round instead of pairing it with
another round's baseline."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("spark_throughput",
                                                  ROOT / "benchmarks" / "spark_throughput.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(variant: str, round_no: int, eps: float | None) -> dict[str, Any]:
    r: dict[str, Any] = {"variant": variant, "round": round_no}
    if eps is None:
        r["error"] = "exit code 1"
    else:
        r["events_per_s"] = eps
    return r


def test_ratios_pair_runs_of_the_same_round() -> None:
    bench = _bench()
    # the machine halves its speed from round to round; every variant keeps its proportion
    runs = []
    for n, speed in enumerate((100.0, 50.0, 25.0)):
        runs += [_run("spark_native", n, speed), _run("spark_native_tuned", n, speed * 1.25),
                 _run("tidemark_native", n, speed * 1.1)]
    paired = bench.paired_ratios(runs, ["spark_native", "spark_native_tuned", "tidemark_native"])
    assert paired["tidemark_native"]["vs_spark_native"] == {"by_round": [1.1, 1.1, 1.1],
                                                            "median": 1.1}
    assert paired["tidemark_native"]["vs_spark_native_tuned"]["median"] == 0.88
    assert "vs_spark_native" not in paired.get("spark_native", {})  # not against itself
    assert paired["spark_native_tuned"]["vs_spark_native"]["median"] == 1.25


def test_alternate_order_lets_each_variant_of_a_pair_run_first_as_often_as_second() -> None:
    bench = _bench()
    pair = ["spark_native_tuned", "tidemark_engine"]
    orders = [bench.round_order(pair, n, "alternate") for n in range(4)]
    assert orders == [pair, pair[::-1], pair, pair[::-1]]
    first = [o[0] for o in orders]
    assert first.count("tidemark_engine") == first.count("spark_native_tuned") == 2
    assert [bench.round_order(pair, n, "fixed") for n in range(3)] == [pair] * 3
    three = ["a", "b", "c"]
    assert bench.round_order(three, 1, "alternate") == ["c", "b", "a"]
    assert three == ["a", "b", "c"]  # the caller's list is left as it was


def test_a_failed_run_drops_its_round() -> None:
    bench = _bench()
    runs = [_run("spark_native", 0, 80.0), _run("tidemark_native", 0, 60.0),
            _run("spark_native", 1, None), _run("tidemark_native", 1, 70.0),
            _run("spark_native", 2, 90.0), _run("tidemark_native", 2, 99.0)]
    paired = bench.paired_ratios(runs, ["spark_native", "tidemark_native"])
    assert paired["tidemark_native"]["vs_spark_native"] == {"by_round": [0.75, 1.1],
                                                            "median": 0.925}
    assert "vs_spark_native_tuned" not in paired["tidemark_native"]  # no such baseline ran


def test_kafka_variants_pair_with_the_hand_written_kafka_query_on_wall_and_cpu() -> None:
    bench = _bench()
    runs = []
    for n, speed in enumerate((100.0, 40.0)):
        for variant, share, cpu in (("spark_native_kafka", 1.0, 20.0),
                                    ("tidemark_native_kafka", 0.8, 15.0)):
            r = _run(variant, n, speed * share)
            r["events_per_cpu_s"] = cpu
            runs.append(r)
    paired = bench.paired_ratios(runs, ["spark_native_kafka", "tidemark_native_kafka"])
    mine = paired["tidemark_native_kafka"]
    assert mine["vs_spark_native_kafka"] == {"by_round": [0.8, 0.8], "median": 0.8}
    assert mine["vs_spark_native_kafka_per_cpu_s"]["median"] == 0.75
    assert "vs_spark_native" not in mine  # the file baseline did not run


def test_phase_totals_sum_the_driver_phases_of_batches_that_read_input() -> None:
    bench = _bench()
    progress = [
        {"numInputRows": 100, "durationMs": {"addBatch": 700, "queryPlanning": 40,
                                             "triggerExecution": 800, "walCommit": 20}},
        {"numInputRows": 0, "durationMs": {"latestOffset": 3, "triggerExecution": 3}},
        {"numInputRows": 50, "durationMs": {"addBatch": 300, "queryPlanning": 10,
                                            "triggerExecution": 350, "setOffsetRange": 2}},
    ]
    totals = bench.phase_totals(progress)
    # the idle batch (no input) is left out; the known phases come first, others after
    assert totals == {"triggerExecution": 1150, "addBatch": 1000, "queryPlanning": 50,
                      "walCommit": 20, "setOffsetRange": 2}
    assert list(totals)[:3] == ["triggerExecution", "addBatch", "queryPlanning"]
