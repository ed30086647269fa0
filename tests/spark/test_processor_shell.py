"""The processor Spark pickles: unpickled where Spark validates the state schema (a fresh
Python process on the driver) it imports neither the engine nor the definition model, and its
pre-init (``init`` then ``close`` outside a task) registers the state Spark reads back."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from pyspark import cloudpickle

from jobs.definition import load_definition
from jobs.spark.engine_path.config import STATE_NAME, HostConfig
from jobs.spark.engine_path.processor_shell import STATE_SCHEMA, ProcessorShell
from jobs.spark.session import python_worker_env

HEAVY = ("jobs.engine", "jobs.definition", "jobs.spark.engine_path.processor", "sqlglot", "numpy")


def config() -> HostConfig:
    defn = load_definition({
        "name": "s", "source": {"kind": "files", "path": "/tmp/s", "format": "json",
                                "schema": "team STRING, et LONG, v LONG"},
        "key": "team", "event_time": "et", "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "v"}]})
    return HostConfig(
        defn=defn, agg_names=("total",), agg_has_input=(True,), agg_integral=(True,),
        source_columns=("team", "et", "v"), input_columns=("__bucket",), checkpoint="c",
        side_root="s", arrival=False)


def shell() -> ProcessorShell:
    return ProcessorShell(config())


class Handle:
    """pyspark's processor handle as the driver's pre-init uses it: state registrations."""

    def __init__(self) -> None:
        self.states: list[tuple[str, Any]] = []

    def getValueState(self, name: str, schema: Any) -> str:  # noqa: N802
        self.states.append((name, schema))
        return f"state:{name}"


PRE_INIT = """
import pickle, sys
proc = pickle.loads(sys.stdin.buffer.read())
states = []
class Handle:
    def getValueState(self, name, schema):
        states.append((name, schema))
proc.init(Handle())
proc.close()
print(repr(states))
print(",".join(m for m in {heavy!r} if m in sys.modules))
"""


def test_pre_init_in_a_fresh_process_loads_neither_engine_nor_definition() -> None:
    env = python_worker_env()
    out = subprocess.run(
        [sys.executable, "-c", PRE_INIT.format(heavy=HEAVY)], input=cloudpickle.dumps(shell()),
        capture_output=True, check=True, env={"PYTHONPATH": env["PYTHONPATH"]})
    states, loaded = out.stdout.decode().splitlines()
    assert states == repr([(STATE_NAME, STATE_SCHEMA)])
    assert loaded == ""


def test_first_call_builds_the_processor_with_the_same_config() -> None:
    proc = shell()
    cfg = config()
    assert proc.host is None
    proc.init(Handle())
    host = proc._host()
    assert host.cfg == cfg and host.cfg is not cfg
    assert host.state == f"state:{STATE_NAME}" and host.mode == "external"
    assert proc._host() is host
