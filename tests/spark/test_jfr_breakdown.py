"""benchmarks/jfr_breakdown.py on a real recording: a JVM whose only busy thread is a
Spark-like task thread that ends before the JVM does; the breakdown must give that thread's
CPU to the ``tasks`` group (as a thread that ended, which ``/proc`` no longer lists) and name
the method it spun in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import jfr_breakdown  # noqa: E402

JFR = jfr_breakdown.find_jfr()
JAVA = str(Path(JFR).with_name("java"))

BURN = """
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class Burn {
    static volatile double sink;
    static volatile long used;
    static void spin(long cpuMillis) {  // until the thread itself used cpuMillis of CPU
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        double x = 0;
        while (mx.getCurrentThreadCpuTime() < cpuMillis * 1_000_000L) {
            for (int i = 1; i < 1000; i++) x += Math.sqrt(i);
        }
        sink = x;
        used = mx.getCurrentThreadCpuTime();
    }
    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> spin(1000), "Executor task launch worker for task 0.0");
        t.start();
        t.join();
        System.out.println(used / 1e9);
        Thread.sleep(1200);  // a periodic reading after the task thread ended
    }
}
"""


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """The recording, and the CPU seconds the task thread measured itself."""
    if not Path(JAVA).exists():
        pytest.skip("no JDK")
    d = tmp_path_factory.mktemp("jfr")
    (d / "Burn.java").write_text(BURN)
    settings = d / "settings.jfc"
    profile = Path(JAVA).parents[1] / "lib" / "jfr" / "profile.jfc"
    # CPU readings every 200 ms, and every compilation logged (``profile`` logs only those
    # over 100 ms, which a one-second run may not have)
    text = profile.read_text()
    cpu_load = '<event name="jdk.ThreadCPULoad">\n      <setting name="enabled">true</setting>\n'
    threshold = 'control="compiler-compilation-threshold">'
    assert cpu_load + '      <setting name="period">10 s</setting>' in text
    assert threshold + "100 ms<" in text
    settings.write_text(text.replace(
        cpu_load + '      <setting name="period">10 s</setting>',
        cpu_load + '      <setting name="period">200 ms</setting>').replace(
        threshold + "100 ms<", threshold + "0 ms<"))
    out = d / "burn.jfr"
    subprocess.run([str(Path(JAVA).with_name("javac")), "-d", str(d), str(d / "Burn.java")],
                   check=True, capture_output=True, timeout=120)
    run = subprocess.run([JAVA, f"-XX:StartFlightRecording=filename={out},settings={settings}",
                          "-cp", str(d), "Burn"], check=True, capture_output=True, text=True,
                         timeout=120)
    return out, float(run.stdout.split()[-1])


def test_an_ended_task_thread_keeps_its_cpu_and_its_method(recording: tuple[Path, float]
                                                            ) -> None:
    path, used = recording
    r = jfr_breakdown.breakdown(path, JFR, n=10, window_thread="")
    cpu = r["thread_cpu"]
    # readings every 200 ms: the CPU of the thread's last period before it ended is lost;
    # the JVM's user time has 10 ms ticks and it never lets system time go back, which adds
    # up to ~10 ms a reading
    assert 0.6 * used <= cpu["by_thread_group_s"]["tasks"] <= 1.25 * used
    assert cpu["ended_threads_by_group_s"]["tasks"] == cpu["by_thread_group_s"]["tasks"]
    assert max(cpu["by_thread_group_s"], key=cpu["by_thread_group_s"].get) == "tasks"
    samples = r["samples"]
    assert max(samples["by_thread_group"], key=samples["by_thread_group"].get) == "tasks"
    spun = samples["by_group_top_methods"]["tasks"]
    # the leaf frames of the spin loop: Burn.spin itself, Math, or the CPU-time reading it
    # polls (sun.management / com.sun.management); which of them the samples land in varies
    own = ("Burn.spin", "java.lang.", "sun.management.", "com.sun.management.", "jdk.internal.")
    assert any(m.startswith(own) for m in spun), spun
    assert r["jit"]["compilations"] > 0


def test_the_window_is_the_named_threads_span(recording: tuple[Path, float]) -> None:
    path, _ = recording
    whole = jfr_breakdown.Recording(path, JFR)
    task = jfr_breakdown.Recording(path, JFR, "Executor task")
    assert whole.window is None and task.window is not None
    lo, hi = task.window
    inside = task.events("jdk.CPULoad")
    assert all(lo <= jfr_breakdown.instant(e["values"]["startTime"]) <= hi for e in inside)
    # the JVM's CPU is read every second; the program sleeps 1.2 s after the task thread ends
    assert len(inside) < len(whole.events("jdk.CPULoad"))
