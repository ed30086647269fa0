"""Detached processes: launch, identity, liveness and the SIGTERM -> SIGKILL stop, with real
child processes (no catalog involved)."""

from __future__ import annotations

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
        assert pc.liveness(pid, "another_job", pc.host) == "dead"  # a reused pid is not ours
        assert pc.liveness(pid, "pjob", "some-other-host") == "unknown"
        assert pc.job_processes("pjob", None) == [pid]
        assert _wait_for(lambda: "mode nocatalog" in (tmp_path / "p.log").read_text())
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
    assert pc.stop(pid, "pjob", pc.host, timeout_ms=5_000) == "terminated"
    assert pc.liveness(pid, "pjob", pc.host) == "dead"
    assert pc.stop(pid, "pjob", pc.host, timeout_ms=5_000) == "not_running"  # idempotent


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
