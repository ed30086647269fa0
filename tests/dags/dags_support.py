"""Paths the DAG tests share (a uniquely named module: test files import from here, never from
``conftest``, which is ambiguous when several test directories are collected together)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
FAKE = ROOT / "tests" / "lifecycle" / "fake_job.py"
