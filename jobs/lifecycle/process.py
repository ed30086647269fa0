"""Detached job processes: launch, identify, check, stop.

A job process must outlive whoever launched it (an Airflow task ends in seconds, the job runs
for weeks), so it is started in its own session (``start_new_session=True``) with its output in
a log file, and nothing in memory keeps track of it: the catalog's run row (pid, host, log) is
the only handle. Everything here therefore works from a pid alone.

Pids are reused by the kernel, so a pid is only trusted if the process is that job's: it
carries ``TIDEMARK_JOB=<job>`` in its environment (set at launch, read from ``/proc``) or, for a
job started by hand (``tidemark run JOB``), has the job name among its arguments. Otherwise a
stranger that happened to get the pid could be mistaken for the job, or worse, be killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jobs.lifecycle.errors import LifecycleError

JOB_ENV = "TIDEMARK_JOB"
"""Set in a launched job's environment: the job it runs (identity check, orphan sweep)."""
VERSION_ENV = "TIDEMARK_VERSION"
"""Set in a launched job's environment: the version it must run."""
LAUNCHED_ENV = "TIDEMARK_LAUNCHED"
"""``1`` in a launched job's environment: the launcher records the run (with the child's pid)
in the catalog, so the job attaches to that run instead of creating one
(:func:`jobs.lifecycle.attach.find_own_run`)."""
CATALOG_ENV = "TIDEMARK_DB_URL"
"""The catalog a launched job reports to (also scopes the orphan sweep to one catalog)."""

Liveness = Literal["alive", "dead", "unknown"]
"""``unknown``: the process is on another host, so only its heartbeat can tell."""

StopOutcome = Literal["not_running", "terminated", "killed", "unknown"]


@dataclass(frozen=True, slots=True)
class ExitInfo:
    """How a process ended, when we can know (only a parent can read a child's exit status)."""

    code: int | None
    signal: int | None

    def describe(self) -> str:
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"killed by {name}"
        return f"exit code {self.code}"


def this_host() -> str:
    return socket.gethostname()


class ProcessControl:
    """Launches and controls job processes on this host.

    ``sleep`` and ``monotonic`` are injectable so a stop timeout can be tested without waiting,
    but they default to the real ones: stopping a real process takes real time.
    """

    def __init__(
        self,
        host: str | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        poll_interval_s: float = 0.1,
    ) -> None:
        self.host = host or this_host()
        self._sleep = sleep
        self._monotonic = monotonic
        self._poll = poll_interval_s
        self._exits: dict[int, ExitInfo] = {}

    # ---- launch ---------------------------------------------------------------------------
    def launch(
        self,
        argv: Sequence[str],
        *,
        job: str,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> int:
        """Start ``argv`` detached, stdout+stderr appended to ``log_path``; return its pid."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        child_env = dict(os.environ if env is None else env)
        child_env[JOB_ENV] = job
        with open(log_path, "ab") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            log.write(f"--- {stamp} launching {job}: {' '.join(argv)}\n".encode())
            log.flush()
            try:
                proc = subprocess.Popen(  # noqa: S603 - argv is our own launch command, no shell
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=child_env,
                    cwd=str(cwd) if cwd else None,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise LifecycleError(f"job {job}: cannot launch {argv[0]!r}: {exc}") from exc
        # Popen keeps no reference we rely on; a zombie left by a fast exit is reaped in
        # liveness() (we are its parent as long as this process lives).
        return proc.pid

    # ---- inspect --------------------------------------------------------------------------
    def liveness(self, pid: int | None, job: str, host: str | None) -> Liveness:
        """Is the process ``pid`` of ``job`` still there?"""
        if host is not None and host != self.host:
            return "unknown"
        if pid is None or pid <= 0:
            return "dead"
        self._reap(pid)
        if pid in self._exits:
            return "dead"
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "dead"
        except PermissionError:
            return "dead"  # exists, but not ours: the pid was reused by someone else
        if _proc_state(pid) == "Z":
            return "dead"
        return "alive" if _is_job_process(pid, job) else "dead"

    def exit_info(self, pid: int | None) -> ExitInfo | None:
        """Exit status of a process this object launched and saw die, else None."""
        if pid is None:
            return None
        self._reap(pid)
        return self._exits.get(pid)

    def job_processes(self, job: str, catalog: str | None) -> list[int]:
        """Pids of live processes launched for ``job`` (by any launcher) reporting to
        ``catalog``: the orphan sweep compares them with the runs the catalog knows.

        Only session leaders count: every launch starts a new session, and the job's own
        children (the Spark JVM, Python workers) inherit its environment but not its session
        leadership; they go with their leader."""
        proc = Path("/proc")
        if not proc.is_dir():
            return []
        found = []
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if _proc_env_value(pid, JOB_ENV) != job or _proc_state(pid) in (None, "Z"):
                continue
            if _proc_session(pid) != pid:
                continue  # a child of a job (its JVM): it inherited the env, it is not a launch
            if catalog is not None and _proc_env_value(pid, CATALOG_ENV) != catalog:
                continue
            found.append(pid)
        return sorted(found)

    def _reap(self, pid: int) -> None:
        if pid in self._exits:
            return
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return  # not our child (launched by another process): cannot read its status
        if got == pid:
            if os.WIFSIGNALED(status):
                self._exits[pid] = ExitInfo(code=None, signal=os.WTERMSIG(status))
            else:
                self._exits[pid] = ExitInfo(code=os.WEXITSTATUS(status), signal=None)

    # ---- stop -----------------------------------------------------------------------------
    def stop(
        self, pid: int | None, job: str, host: str | None, timeout_ms: int
    ) -> StopOutcome:
        """SIGTERM the job (it finishes its batch and exits), SIGKILL its whole process group
        after ``timeout_ms``.

        SIGTERM goes to the job process only: its children (the Spark JVM) must stay up while it
        stops the query cleanly. SIGKILL goes to the group so no orphan JVM keeps a checkpoint
        open. Idempotent: stopping a dead run is a no-op (``not_running``).
        """
        state = self.liveness(pid, job, host)
        if state == "unknown":
            return "unknown"
        if state == "dead" or pid is None:
            return "not_running"
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return "not_running"
        deadline = self._monotonic() + timeout_ms / 1000
        while self._monotonic() < deadline:
            if self.liveness(pid, job, host) == "dead":
                self._kill_group_leftovers(pid)
                return "terminated"
            self._sleep(self._poll)
        if self.liveness(pid, job, host) == "dead":
            self._kill_group_leftovers(pid)
            return "terminated"
        self._kill_group(pid)
        end = self._monotonic() + 5.0
        while self._monotonic() < end and self.liveness(pid, job, host) != "dead":
            self._sleep(self._poll)
        return "killed"

    def kill(self, pid: int | None, job: str, host: str | None) -> StopOutcome:
        """SIGKILL the job's process group at once (a hung job does not answer SIGTERM)."""
        return self.stop(pid, job, host, timeout_ms=0)

    @staticmethod
    def _kill_group(pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    @staticmethod
    def _kill_group_leftovers(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


class _Unreadable:
    pass


_UNREADABLE = _Unreadable()


def _proc_state(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name is in parentheses and may hold spaces; the state follows the last ')'
    return text[text.rfind(")") + 2 :].split(" ", 1)[0]


def _proc_session(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    # after the command: state ppid pgrp session ...
    return int(fields[3]) if len(fields) > 3 else None


def _is_job_process(pid: int, job: str) -> bool:
    token = _proc_env_value(pid, JOB_ENV)
    if token is _UNREADABLE:
        return True  # no /proc, or a process mid-exec: trust the pid
    if token is not None:
        return token == job
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return job.encode() in args


def _proc_env_value(pid: int, name: str) -> str | None | _Unreadable:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except FileNotFoundError:
        return None if Path("/proc/self/environ").exists() else _UNREADABLE
    except OSError:
        return _UNREADABLE
    if not raw:
        # a process still inside execve: its parent already returned from Popen (the exec
        # error pipe closes early in execve) but the new environment is not mapped yet
        return _UNREADABLE
    prefix = name.encode() + b"="
    for item in raw.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode(errors="replace")
    return None


def tail(path: Path | str | None, lines: int = 5, max_bytes: int = 4096) -> str:
    """The last lines of a log file (for "why did it die" messages); '' if unreadable."""
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])
