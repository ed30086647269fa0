"""Open windows held in a job's state store at a snapshot, read in a child process.

The Spark runtime reads checkpoints through Spark's State Data Source (``tidemark state JOB
--version V --batch N --json``). The UI runs that command as a subprocess instead of importing
pyspark: a JVM inside the Streamlit server would cost ~1 GB for the life of the server, tie
its lifetime to a page click, and break the rule that the UI process never loads Spark. The
command takes a while (Spark start-up), so progress is reported through ``on_tick``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

TIMEOUT_S = 600.0


class StateReadError(RuntimeError):
    """The state could not be read (the command's own message)."""


def state_command(job: str, version: int, batch_id: int) -> list[str]:
    return [sys.executable, "-m", "jobs", "state", job, "--version", str(version),
            "--batch", str(batch_id), "--json"]


def read_open_windows(
    job: str,
    version: int,
    batch_id: int,
    *,
    on_tick: Callable[[float], None] | None = None,
    timeout_s: float = TIMEOUT_S,
    env: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Open windows of ``job`` v``version`` at committed batch ``batch_id``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(state_command(job, version, batch_id), stdout=out, stderr=err,
                                env=dict(os.environ if env is None else env), text=True)
        started = time.monotonic()
        try:
            while proc.poll() is None:
                elapsed = time.monotonic() - started
                if elapsed > timeout_s:
                    raise StateReadError(f"reading the state took longer than {timeout_s:.0f} s")
                if on_tick is not None:
                    on_tick(elapsed)
                time.sleep(0.5)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            lines = [ln for ln in err.read().splitlines() if ln.startswith("tidemark")]
            raise StateReadError(lines[-1] if lines else f"exit code {proc.returncode}")
        # Spark may print to stdout too; the command's windows are the JSON object lines
        return [json.loads(ln) for ln in out.read().splitlines() if ln.startswith("{")]
