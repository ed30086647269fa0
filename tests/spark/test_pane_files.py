"""Which pane files count: the file sink's log, orphans of a killed attempt, the writer a
checkpoint keeps. Pure file handling (no Spark): the logs are written here in the format
Spark's ``FileStreamSinkLog`` writes (checked against a real run in test_native_path.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.spark.pane_files import (
    SINK_FILE,
    SINK_LOG,
    choose_pane_sink,
    committed_files,
    committed_rows,
    pane_files,
    remove_uncommitted,
)


def _file(panes: Path, batch: int, name: str, rows: int = 1) -> Path:
    f = panes / f"batch_id={batch}" / name
    f.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"n": list(range(rows))}), f)
    (f.parent / f".{name}.crc").write_bytes(b"crc")
    return f


def _log(panes: Path, name: str, entries: list[tuple[Path, str]]) -> None:
    log = panes / SINK_LOG
    log.mkdir(parents=True, exist_ok=True)
    lines = ["v1"] + [json.dumps({"path": p.absolute().as_uri(), "size": 1, "isDir": False,
                                  "modificationTime": 0, "blockReplication": 1,
                                  "blockSize": 1, "action": action})
                      for p, action in entries]
    (log / name).write_text("\n".join(lines), encoding="utf-8")


def test_the_log_decides_which_files_are_panes(tmp_path: Path) -> None:
    panes = tmp_path / "my store" / "panes"  # a space: the log's paths are percent-encoded
    a = _file(panes, 0, "part-a.parquet", rows=2)
    b = _file(panes, 1, "part-b.parquet", rows=3)
    c = _file(panes, 2, "part-c.parquet", rows=4)
    orphan = _file(panes, 2, "part-orphan.parquet", rows=5)
    _log(panes, "0", [(a, "add")])
    _log(panes, "1", [(b, "add")])
    _log(panes, "2", [(c, "add")])
    assert "%20" in (panes / SINK_LOG / "0").read_text()
    assert committed_files(panes) == {a.absolute(), b.absolute(), c.absolute()}
    assert pane_files(panes) == [a.absolute(), b.absolute(), c.absolute()]
    assert orphan.absolute() not in pane_files(panes)
    assert committed_rows(panes, 2) == 4  # the orphan's 5 rows are not panes
    assert committed_rows(panes, 7) == 0


def test_a_compact_file_replaces_the_files_before_it(tmp_path: Path) -> None:
    panes = tmp_path / "panes"
    a = _file(panes, 0, "part-a.parquet")
    b = _file(panes, 1, "part-b.parquet")
    c = _file(panes, 2, "part-c.parquet")
    _log(panes, "0", [(a, "add")])  # superseded (Spark may delete it)
    _log(panes, "1.compact", [(a, "add"), (b, "add")])
    _log(panes, "2", [(c, "add"), (b, "delete")])
    assert committed_files(panes) == {a.absolute(), c.absolute()}
    (panes / SINK_LOG / "0").unlink()
    assert pane_files(panes) == [a.absolute(), c.absolute()]


def test_without_a_log_every_batch_file_is_a_pane_file(tmp_path: Path) -> None:
    panes = tmp_path / "panes"
    a = _file(panes, 0, "part-a.parquet")
    (panes / "batch_id=0" / "_SUCCESS").write_text("")
    assert committed_files(panes) is None
    assert pane_files(panes) == [a.absolute()]
    assert remove_uncommitted(panes) == []
    assert a.exists()


def test_remove_uncommitted_deletes_orphans_and_their_checksums(tmp_path: Path) -> None:
    panes = tmp_path / "panes"
    a = _file(panes, 0, "part-a.parquet")
    stale = _file(panes, 0, "part-stale.parquet")
    lone = _file(panes, 1, "part-lone.parquet")  # a batch killed before its log entry
    _log(panes, "0", [(a, "add")])
    assert sorted(remove_uncommitted(panes)) == sorted([stale.absolute(), lone.absolute()])
    assert a.exists() and (a.parent / f".{a.name}.crc").exists()
    assert not stale.exists() and not (stale.parent / f".{stale.name}.crc").exists()
    assert not (panes / "batch_id=1").exists()
    assert pane_files(panes) == [a.absolute()]


def test_a_checkpoint_keeps_the_writer_it_started_with(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    assert choose_pane_sink(str(fresh), file_possible=True) == "file"
    assert json.loads((fresh / SINK_FILE).read_text()) == {"panes": "file"}
    assert choose_pane_sink(str(fresh), file_possible=False) == "file"  # the caller refuses

    old = tmp_path / "old"  # ran before the marker existed: foreachBatch output
    (old / "offsets").mkdir(parents=True)
    (old / "offsets" / "0").write_text("v1\n{}\n")
    assert choose_pane_sink(str(old), file_possible=True) == "batch"
    assert choose_pane_sink(str(old), file_possible=True) == "batch"

    no_jvm = tmp_path / "no_jvm"
    assert choose_pane_sink(str(no_jvm), file_possible=False) == "batch"
    assert choose_pane_sink(str(no_jvm), file_possible=True) == "batch"

    assert choose_pane_sink("hdfs://nn/ckpt/x", file_possible=True) == "batch"
