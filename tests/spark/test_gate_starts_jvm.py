"""The JVM gate (``Gate.java``) and the window kinds compute the same window starts.

The native path judges lateness in the JVM; everything else (both engines, the Python gate)
uses :class:`jobs.definition.windows.FixedStarts`. A small probe class calls the gate's own
``Gate.starts`` on many random (event time, size, step, align) cases read from stdin, and its
answers must equal the starts of the windows that ``FixedStarts.starts_array`` says hold each
event time, in the same order (latest first).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from jobs.definition.windows import FixedStarts
from jobs.jvmdeps.jdk import jdk_tool
from jobs.spark.jvm import ensure_jar

PROBE = """\
package tidemark.spark;

import java.io.BufferedReader;
import java.io.InputStreamReader;

public final class GateStartsProbe {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            String[] p = line.split(" ");
            long[] s = Gate.starts(Long.parseLong(p[0]), Long.parseLong(p[1]),
                                   Long.parseLong(p[2]), Long.parseLong(p[3]));
            for (int i = 0; i < s.length; i++) out.append(i == 0 ? "" : " ").append(s[i]);
            out.append('\\n');
        }
        System.out.print(out);
    }
}
"""


def _cases(n: int, seed: int) -> list[tuple[int, int, int, int]]:
    """Random cases over a wide range (negative times, alignment after the event, one to
    many windows per instant) plus the boundaries of a window."""
    rng = np.random.default_rng(seed)
    cases: list[tuple[int, int, int, int]] = []
    for _ in range(n):
        size = int(rng.choice([1, 7, 1000, 60_000, 86_400_000, int(rng.integers(1, 10**9))]))
        step = max(1, size // int(rng.integers(1, 12))) if rng.random() < 0.7 else size
        align = int(rng.integers(-(2**50), 2**50)) if rng.random() < 0.5 else 0
        t = int(rng.integers(-(2**60), 2**60)) if rng.random() < 0.5 else int(
            rng.integers(-(10**13), 10**13))
        cases.append((t, size, step, align))
    for size, step, align in [(10, 5, 0), (10, 3, 1), (60_000, 60_000, 30_000), (7, 2, -3)]:
        for t in range(-25, 26):
            cases.append((t, size, step, align))
    return cases


def _expected(cases: list[tuple[int, int, int, int]]) -> list[list[int]]:
    out = []
    for t, size, step, align in cases:
        starts, valid = FixedStarts(size, step, align).starts_array(np.array([t], dtype=np.int64))
        out.append([int(s) for s in starts[0][valid[0]]])
    return out


def test_fixed_starts_agree_with_the_scalar_form() -> None:
    """The NumPy and scalar forms of the one implementation agree (scalar: ascending)."""
    for t, size, step, align in _cases(2000, seed=7):
        fs = FixedStarts(size, step, align)
        assert sorted(_expected([(t, size, step, align)])[0]) == fs.starts(t)


def test_jvm_gate_starts_match_the_window_kinds(tmp_path: Path) -> None:
    javac, java = jdk_tool("javac"), jdk_tool("java")
    if javac is None or java is None:
        pytest.skip("no JDK: the runner uses the Python gate")
    jar = ensure_jar()
    assert jar is not None
    import pyspark

    classpath = os.pathsep.join([str(jar), str(Path(pyspark.__file__).parent / "jars" / "*")])
    src = tmp_path / "tidemark" / "spark" / "GateStartsProbe.java"
    src.parent.mkdir(parents=True)
    src.write_text(PROBE, encoding="utf-8")
    classes = tmp_path / "classes"
    subprocess.run([javac, "-nowarn", "--release", "17", "-cp", classpath, "-d", str(classes),
                    str(src)], check=True, capture_output=True, text=True)
    cases = _cases(20_000, seed=20261125)
    run = subprocess.run(
        [java, "-cp", os.pathsep.join([str(classes), classpath]), "tidemark.spark.GateStartsProbe"],
        input="".join(f"{t} {size} {step} {align}\n" for t, size, step, align in cases),
        check=True, capture_output=True, text=True, timeout=300,
    )
    got = [[int(v) for v in line.split()] for line in run.stdout.splitlines()]
    expected = _expected(cases)
    assert len(got) == len(cases)
    mismatches = [(c, g, e) for c, g, e in zip(cases, got, expected, strict=True) if g != e]
    assert not mismatches, mismatches[:5]
