"""Run Airflow locally on embedded defaults, with tidemark's DAGs loaded (``make demo``).

SQLite metadata DB under ``$AIRFLOW_HOME`` (default ``<TIDEMARK_HOME>/airflow``), LocalExecutor,
the api-server on 127.0.0.1, a scheduler, a dag-processor and a triggerer (the triggerer runs
the outbox watcher of the migration DAG). Nothing to install or configure: every setting is an
environment variable computed here (``scripts/airflow-env.sh`` exports the same ones for a
shell), so a developer's ``~/airflow`` is never touched.

    python -m jobs.lifecycle.airflow_local [--port 8080]     # run until Ctrl-C
    python -m jobs.lifecycle.airflow_local --print-env        # the exports, for a shell
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.config import Settings
from jobs.lifecycle.errors import LifecycleError

ROOT = Path(__file__).resolve().parents[2]
DAGS_FOLDER = ROOT / "dags"
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
DEFAULT_PORT = 8080


def airflow_env(
    settings: Settings | None = None,
    *,
    port: int | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment every Airflow component (and the `airflow` CLI) runs with."""
    env = dict(os.environ if base is None else base)
    settings = settings or Settings.from_env(env)
    port = port or int(settings.value("TIDEMARK_AIRFLOW_PORT") or DEFAULT_PORT)
    home = settings.airflow_home
    home.mkdir(parents=True, exist_ok=True)
    secret_file = home / "jwt_secret"
    if not secret_file.exists():  # one secret shared by every component (tokens must verify)
        secret_file.write_text(secrets.token_urlsafe(32))
        secret_file.chmod(0o600)
    passwords = home / "simple_auth_manager_passwords.json"
    user = settings.value("TIDEMARK_AIRFLOW_USER") or "admin"
    if not passwords.exists():
        password = settings.value("TIDEMARK_AIRFLOW_PASSWORD") or "admin"
        passwords.write_text(json.dumps({user: password}))
        passwords.chmod(0o600)
    bin_dir = str(Path(sys.executable).parent)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env.update(
        {
            "TIDEMARK_HOME": str(settings.home),
            "TIDEMARK_DB_URL": settings.db_url,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": env.get("AIRFLOW__CORE__PARALLELISM", "4"),
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{(home / 'airflow.db').absolute()}",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": secret_file.read_text().strip(),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{user}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": env.get(
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL", "30"
            ),
            # the components start `airflow` from PATH, and import `jobs` (the outbox trigger)
            "PATH": os.pathsep.join([bin_dir, env.get("PATH", "")]),
            "PYTHONPATH": os.pathsep.join([str(ROOT), *[p for p in paths if p != str(ROOT)]]),
        }
    )
    return env


@dataclass
class LocalAirflow:
    env: dict[str, str]
    port: int
    log_dir: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=5) as resp:
                data: dict[str, Any] = json.loads(resp.read())
                return data
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def healthy(self) -> bool:
        h = self.health()
        if not h:
            return False
        parts = ("metadatabase", "scheduler", "triggerer", "dag_processor")
        return all((h.get(p) or {}).get("status") == "healthy" for p in parts)

    def wait_healthy(self, timeout_s: float = 180.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise LifecycleError(
                        f"airflow {name} exited with {proc.returncode}; see {self.log_dir / (name + '.log')}"
                    )
            if self.healthy():
                return
            time.sleep(1.0)
        raise LifecycleError(f"local Airflow not healthy after {timeout_s:.0f}s: {self.health()}")

    def cli(self, *args: str, timeout: float = 120.0) -> str:
        """Run ``airflow ARGS`` in this environment; its stdout."""
        out = subprocess.run(
            [str(Path(sys.executable).parent / "airflow"), *args],
            env=self.env, capture_output=True, text=True, timeout=timeout,
        )
        if out.returncode != 0:
            raise LifecycleError(f"airflow {' '.join(args)} failed: {out.stderr[-2000:]}")
        return out.stdout

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM every component's process group, SIGKILL what is left after ``timeout_s``."""
        for proc in self.processes.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for proc in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        for proc in self.processes.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def __enter__(self) -> LocalAirflow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_local_airflow(
    settings: Settings | None = None,
    *,
    port: int | None = None,
    components: Sequence[str] = COMPONENTS,
    extra_env: Mapping[str, str] | None = None,
    wait: bool = True,
    timeout_s: float = 180.0,
) -> LocalAirflow:
    """Migrate the metadata DB and start the components (each in its own session, output in
    ``$AIRFLOW_HOME/logs/<component>.log``); waits until healthy unless ``wait`` is False."""
    env = airflow_env(settings, port=port)
    env.update(extra_env or {})
    port = int(env["AIRFLOW__API__PORT"])
    home = Path(env["AIRFLOW_HOME"])
    log_dir = home / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    airflow = str(Path(sys.executable).parent / "airflow")
    migrate = subprocess.run(
        [airflow, "db", "migrate"], env=env, capture_output=True, text=True, timeout=600
    )
    if migrate.returncode != 0:
        raise LifecycleError(f"airflow db migrate failed: {migrate.stderr[-2000:]}")
    local = LocalAirflow(env=env, port=port, log_dir=log_dir)
    try:
        for name in components:
            log = open(log_dir / f"{name}.log", "ab")  # noqa: SIM115 - kept open by the child
            local.processes[name] = subprocess.Popen(
                [airflow, name], env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
            log.close()
        if wait:
            local.wait_healthy(timeout_s)
    except BaseException:
        local.stop()
        raise
    return local


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.lifecycle.airflow_local", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None, help=f"api-server port (default {DEFAULT_PORT})")
    parser.add_argument("--print-env", action="store_true", help="print the exports and exit")
    parser.add_argument("--check", action="store_true", help="start, wait until healthy, stop")
    args = parser.parse_args(argv)
    if args.print_env:
        env = airflow_env(port=args.port)
        keys = sorted(k for k in env if k.startswith(("AIRFLOW", "TIDEMARK")) or k in ("PATH", "PYTHONPATH"))
        for k in keys:
            print(f"export {k}={shlex.quote(env[k])}")
        return 0
    local = start_local_airflow(port=args.port)
    print(f"Airflow is up at {local.url} (user admin); logs in {local.log_dir}", flush=True)
    if args.check:
        local.stop()
        return 0
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        while not stop:
            for name, proc in local.processes.items():
                if proc.poll() is not None:
                    print(f"airflow {name} exited ({proc.returncode}); stopping", file=sys.stderr)
                    stop = True
            time.sleep(1.0)
    finally:
        local.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
