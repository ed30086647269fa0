"""Detached processes: launch, identity, liveness and the SIGTERM -> SIGKILL stop, with real
child processes (no catalog involved)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from jobs.lifecycle.process import ProcessControl

FAKE = str(Path(__file__).with_name("fake_job.py"))


def _wait_for(predicate, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _launch(pc: ProcessControl, tmp_path: Path, mode: str, job: str = "pjob") -> int:
    env = dict(os.environ, FAKE_MODE=mode)
    return pc.launch([sys.executable, FAKE, job], job=job, log_path=tmp_path / "p.log", env=env)


def test_launched_process_is_detached_logged_and_identified(tmp_path: Path) -> None:
    pc = ProcessControl()
    pid = _launch(pc, tmp_path, "nocatalog")
    try:
        assert os.getsid(pid) == pid  # its own session: survives the launcher's group
        assert pc.liveness(pid, "pjob", pc.host) == "alive"
        # identity is read from the process's environment, which exists once its exec is done
        # (a process still inside execve is trusted by pid); the job logs after its exec
        assert _wait_for(lambda: "mode nocatalog" in (tmp_path / "p.log").read_text())
        assert pc.liveness(pid, "another_job", pc.host) == "dead"  # a reused pid is not ours
        assert pc.liveness(pid, "pjob", "some-other-host") == "unknown"
        assert pid in pc.job_processes("pjob", None)
    finally:
        os.killpg(pid, signal.SIGKILL)


def test_crashed_process_is_dead_with_its_exit_code(tmp_path: Path) -> None:
    pc = ProcessControl()
    pid = _launch(pc, tmp_path, "crash")
    assert _wait_for(lambda: pc.liveness(pid, "pjob", pc.host) == "dead")
    info = pc.exit_info(pid)
    assert info is not None and info.code == 3 and info.describe() == "exit code 3"
    assert "boom" in (tmp_path / "p.log").read_text()


def test_stop_is_graceful_when_the_job_obeys_sigterm(tmp_path: Path) -> None:
    pc = ProcessControl()
    pid = _launch(pc, tmp_path, "nocatalog")
    try:
        # SIGTERM once the job is up (its handler installed), as a supervisor would
        assert _wait_for(lambda: "mode nocatalog" in (tmp_path / "p.log").read_text())
        assert pc.stop(pid, "pjob", pc.host, timeout_ms=5_000) == "terminated"
        assert pc.liveness(pid, "pjob", pc.host) == "dead"
        assert pc.stop(pid, "pjob", pc.host, timeout_ms=5_000) == "not_running"  # idempotent
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def test_stop_escalates_to_sigkill_after_the_timeout(tmp_path: Path) -> None:
    pc = ProcessControl()
    script = "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('sig' + 'term ignored', flush=True); time.sleep(60)"
    pid = pc.launch([sys.executable, "-c", script, "pjob"], job="pjob", log_path=tmp_path / "p.log")
    assert _wait_for(lambda: "sigterm ignored" in (tmp_path / "p.log").read_text())
    started = time.monotonic()
    assert pc.stop(pid, "pjob", pc.host, timeout_ms=500) == "killed"
    assert time.monotonic() - started < 5
    info = pc.exit_info(pid)
    assert info is not None and info.signal == signal.SIGKILL


def test_children_of_a_job_are_not_counted_as_launches(tmp_path: Path) -> None:
    # the Spark JVM inherits the job's environment; the orphan sweep must not take it for an
    # unrecorded launch (it would kill the JVM under a healthy job)
    pc = ProcessControl()
    script = (
        "import subprocess, sys, time; "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print('child', c.pid, flush=True); time.sleep(60)"
    )
    pid = pc.launch([sys.executable, "-c", script, "pjob"], job="pjob", log_path=tmp_path / "p.log")
    try:
        assert _wait_for(lambda: "child " in (tmp_path / "p.log").read_text())
        child = int((tmp_path / "p.log").read_text().split("child ")[1].split()[0])
        found = pc.job_processes("pjob", None)
        assert pid in found and child not in found
        # stopping the job takes its whole group down, the child included
        assert pc.stop(pid, "pjob", pc.host, timeout_ms=2_000) in ("terminated", "killed")
        assert _wait_for(lambda: not Path(f"/proc/{child}").exists() or
                         Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
