"""`make demo`: the whole platform on embedded defaults, and a clean stop on Ctrl-C.

What it starts, in order: the catalog (SQLite under the data dir, migrated), a first-run admin,
the example jobs of ``jobs/demo/specs`` (desired state running), a single-node Kafka broker
(KRaft, 127.0.0.1, a free port, data under ``<home>/kafka``; ``page_views`` reads its events
from it and sends its panes to it, jobs/demo/kafka.py), a generator that lands files (and
produces the ``page_views`` events) with out-of-order, late and malformed events, local Airflow (supervisor and migration DAGs,
which launch and supervise the Spark jobs), and the Streamlit UI on 127.0.0.1. Everything it
starts is a child it owns: Ctrl-C (or SIGTERM) stops the UI and Airflow, then the job processes
the supervisor launched, then the broker, and says what it stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jobs.catalog import Catalog, CatalogError
from jobs.config import Settings
from jobs.demo import kafka as demo_kafka
from jobs.demo.check import STATE_FILE, airflow_password
from jobs.demo.generator import Generator
from jobs.kafka.broker import KafkaBroker
from jobs.timeutil import SystemClock

ROOT = Path(__file__).resolve().parents[2]
SPECS = Path(__file__).resolve().parent / "specs"
DEMO_ACTOR = "demo"
DEMO_ADMIN = ("admin", "tidemark-demo")


def demo_spec(spec: Path, landing: Path) -> dict[str, Any]:
    """The example definition with its files source pointed at ``landing/<stream>``.

    The YAML files say ``data/landing/<stream>``, which is right only when the demo runs with
    the default ``TIDEMARK_HOME`` from the repo root. The job processes are started by Airflow
    from whatever directory it runs in, so the seeded definitions carry absolute paths: the
    generator and the jobs then meet in the same directory for any ``TIDEMARK_HOME``.
    """
    raw: dict[str, Any] = yaml.safe_load(spec.read_text(encoding="utf-8"))
    source = raw.get("source") or {}
    if source.get("kind") == "files" and source.get("path"):
        source["path"] = str(landing / Path(source["path"]).name)
    return raw


def seed(catalog: Catalog, specs: Path = SPECS, *, landing: Path | None = None) -> list[str]:
    """Create the example jobs that do not exist yet and ask for them to run. Idempotent: a job
    that exists is left as it is (a user's edits survive a restart of the demo), only its
    desired state is set to running again."""
    landing = landing or Settings.from_env().home / "landing"
    created = []
    for spec in sorted(specs.glob("*.yaml")):
        name = spec.stem
        try:
            catalog.job(name)
        except CatalogError as exc:
            if exc.code != "not_found":
                raise
            catalog.create_job(demo_spec(spec, landing), DEMO_ACTOR,
                               note="example job seeded by make demo")
            created.append(name)
        if catalog.job(name).desired_state != "running":
            catalog.set_desired_state(name, "running", DEMO_ACTOR, reason="make demo")
    return created


@dataclass
class GeneratorLoop:
    """Lands a file per stream every ``tick_s`` seconds until stopped."""

    generator: Generator
    tick_s: float = 2.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="demo-generator", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.tick_s):
            self.generator.tick()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, timeout: float = 20.0) -> None:
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def spawn(name: str, argv: list[str], log: Path, env: dict[str, str]) -> Child:
    log.parent.mkdir(parents=True, exist_ok=True)
    handle = log.open("ab")
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                            start_new_session=True)
    return Child(name, proc, log)


def start_ui(settings: Settings, port: int, env: dict[str, str]) -> Child:
    argv = [sys.executable, "-m", "streamlit", "run", str(ROOT / "ui" / "serve.py"),
            "--server.address", "127.0.0.1", "--server.port", str(port),
            "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "minimal"]
    return spawn("ui", argv, settings.home / "logs" / "ui.log", env)


def wait_until(what: str, check: Callable[[], bool], timeout_s: float, poll_s: float = 1.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(poll_s)
    raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")


@dataclass
class Demo:
    """What `make demo` started, so that a stop stops exactly that."""

    settings: Settings
    catalog: Catalog
    generator: GeneratorLoop
    children: list[Child] = field(default_factory=list)
    airflow: object | None = None
    broker: KafkaBroker | None = None

    def stop(self) -> list[str]:
        (self.settings.home / STATE_FILE).unlink(missing_ok=True)
        stopped = []
        for child in reversed(self.children):
            child.stop()
            stopped.append(child.name)
        if self.airflow is not None:
            self.airflow.stop()  # type: ignore[attr-defined]
            stopped.append("airflow")
        self.generator.stop()
        for publish in self.generator.generator.publish.values():
            close = getattr(publish, "close", None)
            if close is not None:  # the Kafka producer, before its broker stops
                close()
        stopped.append("generator")
        stopped += stop_job_runs(self.catalog)
        if self.broker is not None:  # after the jobs, which read from and write to it
            self.broker.stop()
            stopped.append("kafka")
        self.catalog.close()
        return stopped


def stop_job_runs(catalog: Catalog) -> list[str]:
    """Stop the Spark job processes the supervisor launched (they outlive Airflow's tasks by
    design, so the demo must stop them itself). Desired states stay as they are: the next
    `make demo` resumes every job from its checkpoint.

    All runs are stopped at once (each finishes its current micro-batch, up to 30 s), so a
    Ctrl-C waits for the slowest job rather than for the sum of them."""
    from concurrent.futures import ThreadPoolExecutor

    from jobs.lifecycle.process import ProcessControl

    control = ProcessControl()
    runs = catalog.active_runs()
    if not runs:
        return []
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        outcomes = list(pool.map(
            lambda r: control.stop(r.pid, r.job, r.host, timeout_ms=30_000), runs))
    stopped = []
    for run, outcome in zip(runs, outcomes, strict=True):
        catalog.end_run(run.id, "stopped", f"make demo stopped ({outcome})", actor=DEMO_ACTOR)
        stopped.append(f"{run.job} (pid {run.pid})")
    return stopped


def demo_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Settings of the orchestration for a demo on one small machine (a laptop, a 2-core CI
    runner) running three Spark jobs, Airflow and the UI side by side. Each one can be
    overridden from the environment.

    - job command: micro-batches every 5 s instead of every second, so three jobs leave CPU
      for the rest; 2 shuffle partitions (= state-store partitions) instead of 4, because the
      demo's state is tiny and every partition costs a task per batch.
    - heartbeat timeout 5 min instead of 2: on a busy machine a job's JVM start and first
      micro-batch alone can take two minutes, and a job killed while starting would restart
      forever. A process that dies is still noticed at the next supervisor run (its pid is
      gone); only a hung one waits longer.
    - no backoff before a restart: the supervisor's one-minute cadence is backoff enough for a
      demo, so a killed job is back at the next pass (the crash-loop limit still applies).
    """
    e = Settings.from_env().values if env is None else env
    command = [sys.executable, "-m", "jobs.run", "{job}", "--version", "{version}",
               "--trigger-interval", "5 seconds", "--shuffle-partitions", "2"]
    return {
        "TIDEMARK_JOB_COMMAND": e.get("TIDEMARK_JOB_COMMAND", json.dumps(command)),
        "TIDEMARK_HEARTBEAT_TIMEOUT_MS": e.get("TIDEMARK_HEARTBEAT_TIMEOUT_MS", "300000"),
        "TIDEMARK_BACKOFF_BASE_MS": e.get("TIDEMARK_BACKOFF_BASE_MS", "0"),
    }


def trigger_supervisor(airflow_url: str, user: str, password: str) -> bool:
    """Ask Airflow for a supervisor run now rather than at the next full minute (the scheduled
    runs may also have fired while the api-server was still starting, and failed). Best effort:
    the schedule starts the jobs anyway."""
    from jobs.demo.check import post_json

    try:
        token = post_json(f"{airflow_url}/auth/token", {"username": user, "password": password})
        post_json(f"{airflow_url}/api/v2/dags/tidemark_supervisor/dagRuns",
                  {"logical_date": None, "conf": {}}, token=str(token["access_token"]))
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


def start(settings: Settings, *, ui_port: int = 8501, airflow_port: int = 8080,
          tick_s: float = 2.0) -> Demo:
    from jobs.lifecycle.airflow_local import start_local_airflow

    settings.home.mkdir(parents=True, exist_ok=True)
    catalog = Catalog(settings.db_url, upgrade=True)
    fresh_admin = catalog.ensure_admin(*DEMO_ADMIN)
    created = seed(catalog, landing=settings.home / "landing")
    print(f"catalog: {settings.db_url} (jobs seeded: {', '.join(created) or 'already there'};"
          f" admin {'created' if fresh_admin else 'exists'})", flush=True)
    print("starting the Kafka broker...", flush=True)
    broker = demo_kafka.start_broker(settings.home)
    # the definitions name the broker as ${env:TIDEMARK_DEMO_KAFKA}: the UI, Airflow and the
    # jobs they launch inherit it from here
    os.environ[demo_kafka.BOOTSTRAP_ENV] = broker.bootstrap
    try:
        publish = {demo_kafka.STREAM: demo_kafka.producer(broker.bootstrap)}
        loop = GeneratorLoop(Generator(settings.home / "landing", SystemClock(), publish=publish),
                             tick_s=tick_s)
        loop.generator.tick()  # a first file at once, so the jobs have input when they start
    except BaseException:
        broker.stop()
        raise
    loop.start()
    demo = Demo(settings, catalog, loop, broker=broker)
    try:
        env = dict(os.environ, TIDEMARK_HOME=str(settings.home), TIDEMARK_DB_URL=settings.db_url)
        demo.children.append(start_ui(settings, ui_port, env))
        print("starting Airflow (api-server, scheduler, dag-processor, triggerer)...", flush=True)
        demo.airflow = start_local_airflow(settings, port=airflow_port,
                                           extra_env=demo_environment())
        state = {"pid": os.getpid(), "ui_url": f"http://127.0.0.1:{ui_port}",
                 "airflow_url": f"http://127.0.0.1:{airflow_port}", "db_url": settings.db_url,
                 "kafka_bootstrap": broker.bootstrap}
        (settings.home / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
        airflow_user = settings.value("TIDEMARK_AIRFLOW_USER") or "admin"
        trigger_supervisor(str(state["airflow_url"]), airflow_user,
                           airflow_password(settings, airflow_user))
    except BaseException:
        demo.stop()
        raise
    return demo


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m jobs.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--ui-port", type=int, default=None,
                        help="default: TIDEMARK_UI_PORT ([ui] port) or 8501")
    parser.add_argument("--airflow-port", type=int, default=None,
                        help="default: TIDEMARK_AIRFLOW_PORT ([airflow] port) or 8080")
    parser.add_argument("--tick", type=float, default=2.0, help="seconds between landed files")
    parser.add_argument("--check", action="store_true",
                        help="drive the running demo through the scripted tour (make demo-check)")
    parser.add_argument("--check-budget", type=float, default=None,
                        help="--check: seconds the whole tour may take (default 18 minutes)")
    parser.add_argument("--check-scale", type=float, default=1.0,
                        help="--check: stretch every step's bound (slow machines)")
    args = parser.parse_args(argv)
    from jobs.logsetup import configure_logging

    configure_logging("demo")
    settings = Settings.from_env()
    args.ui_port = args.ui_port or int(settings.value("TIDEMARK_UI_PORT") or 8501)
    args.airflow_port = args.airflow_port or int(settings.value("TIDEMARK_AIRFLOW_PORT") or 8080)
    if args.check:
        from jobs.demo.check import DEFAULT_BUDGET_S, run_tour

        return run_tour(settings, scale=args.check_scale,
                        budget_s=args.check_budget or DEFAULT_BUDGET_S)
    demo = start(settings, ui_port=args.ui_port, airflow_port=args.airflow_port, tick_s=args.tick)
    airflow_user = settings.value("TIDEMARK_AIRFLOW_USER") or "admin"
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(
        "\ntidemark demo is running\n"
        f"  UI       http://127.0.0.1:{args.ui_port}   login {DEMO_ADMIN[0]} / {DEMO_ADMIN[1]}\n"
        f"  Airflow  http://127.0.0.1:{args.airflow_port}   login {airflow_user} / "
        f"{airflow_password(settings, airflow_user)}\n"
        f"  Kafka    {demo.broker.bootstrap if demo.broker else '-'}   topics "
        f"{', '.join(demo_kafka.TOPICS)}\n"
        f"  data     {settings.home}\n"
        "Jobs start within a minute (the supervisor DAG runs every minute). Ctrl-C stops everything.",
        flush=True,
    )
    try:
        while not stop.wait(1.0):
            for child in demo.children:
                if child.process.poll() is not None:
                    print(f"{child.name} exited ({child.process.returncode}); see {child.log}",
                          file=sys.stderr)
                    stop.set()
    finally:
        print("stopping: " + ", ".join(demo.stop()), flush=True)
    return 0
