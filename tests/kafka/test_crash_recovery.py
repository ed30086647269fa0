"""Exactly once from Kafka: SIGKILL the whole driver at random moments inside several
micro-batches, restart it on the same checkpoint each time, and the panes, late records and
dead letters equal an uninterrupted run's over the same topic (offsets in the checkpoint).

Runs the real entry point (``python -m jobs.run JOB --until-idle``) on both paths: the native
one (tumbling windows, Spark's own aggregation) and the engine (session windows, count triggers,
retractions: tidemark's engine in Spark's state store)."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from jobs.kafka.broker import KafkaBroker
from tests.kafka.conftest import create_topic, produce
from tests.spark.test_crash_recovery import _launch, _results, _setup

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

ROOT = Path(__file__).resolve().parents[2]
PER_BATCH = 50


def _produce(broker: KafkaBroker, topic: str) -> int:
    rng = random.Random(11)
    records: list[tuple[int, bytes | None, bytes | None]] = []
    broken = 0
    for i in range(400):
        t = 1_000_000 + i * 300
        if rng.random() < 0.15:
            t -= rng.randint(5_000, 40_000)  # out of order, some of it late
        value = json.dumps({"k": f"k{rng.randint(0, 4)}", "v": rng.randint(1, 9), "et": t})
        if rng.random() < 0.02:
            value, broken = "{broken", broken + 1
        records.append((i % 2, None, value.encode()))
    produce(broker, topic, records)
    return broken


def _spec(name: str, broker: KafkaBroker, topic: str, engine: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name,
        "source": {"kind": "kafka", "format": "json", "schema": "k STRING, v INT, et BIGINT",
                   "options": {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                               "maxOffsetsPerTrigger": PER_BATCH}},
        "key": "k", "event_time": "et",
        "watermark": {"delay": "2s"},
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}, {"name": "n", "fn": "count"}],
    }
    if engine:
        spec.update({"window": {"type": "session", "gap": "3s"}, "allowed_lateness": "5s",
                     "trigger": {"emit": "custom", "early": {"count": 5}, "on_time": True,
                                 "late": {"count": 1}},
                     "accumulation": "retracting"})
    else:
        spec.update({"window": {"type": "tumbling", "size": "10s"}, "allowed_lateness": "3s"})
    return spec


@pytest.mark.parametrize("engine", [False, True], ids=["native", "engine"])
def test_sigkill_at_random_moments_equals_uninterrupted(
        tmp_path: Path, broker: KafkaBroker, engine: bool) -> None:
    from jobs.definition import load_definition
    from jobs.spark.plan import choose_plan

    topic = create_topic(broker, partitions=2)
    broken = _produce(broker, topic)
    job = "kcrashy"
    spec = _spec(job, broker, topic, engine=engine)
    assert choose_plan(load_definition(spec)).native is not engine

    ref_home = tmp_path / "ref"
    store = _setup(ref_home, spec)
    proc = _launch(ref_home, job, tmp_path / "ref.log")
    assert proc.wait(timeout=900) == 0, (tmp_path / "ref.log").read_text()[-3000:]

    home = tmp_path / "crash"
    _setup(home, spec)
    ckpt = home / "checkpoints" / store
    rng = random.Random(os.getpid())
    kills = []
    for batch in sorted(rng.sample(range(1, 7), 2)):  # two random batches, random moments
        proc = _launch(home, job, tmp_path / "crash.log")
        deadline = time.monotonic() + 600
        while not (ckpt / "offsets" / str(batch)).exists():  # batch started
            assert proc.poll() is None, (tmp_path / "crash.log").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(rng.uniform(0, 1.5))  # a random moment inside (or just after) the batch
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        kills.append((batch, (ckpt / "commits" / str(batch)).exists()))
    proc = _launch(home, job, tmp_path / "crash.log")
    assert proc.wait(timeout=900) == 0, (tmp_path / "crash.log").read_text()[-3000:]

    ref_panes, ref_late, ref_dead = _results(ref_home / "results" / job / store)
    panes, late, dead = _results(home / "results" / job / store)
    assert ref_panes, "the reference run produced no panes"
    assert len(ref_dead) == broken > 0
    assert panes == ref_panes, f"kills at {kills}"
    assert late == ref_late
    assert dead == ref_dead
