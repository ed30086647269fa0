"""Every storage backend keeps the same contract, on a local disk and on a real HDFS (through
Spark's JVM on the driver, and over WebHDFS as Spark's Python workers reach it)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from jobs.storage import Storage, join
from jobs.storage.hadoop import HadoopStorage
from jobs.storage.local import LocalStorage
from jobs.storage.minihdfs import MiniHdfs
from jobs.storage.webhdfs import WebHdfsStorage

pytestmark = pytest.mark.spark


@pytest.fixture(params=["local", "file-uri", "hadoop", "webhdfs"])
def backend(request: Any, tmp_path: Path) -> tuple[Storage, str]:
    kind = request.param
    if kind == "local":
        return LocalStorage(), str(tmp_path / "root")
    if kind == "file-uri":
        return LocalStorage(), f"file:{tmp_path / 'root'}"
    hdfs: MiniHdfs = request.getfixturevalue("hdfs")
    root = f"{hdfs.url}/contract/{uuid.uuid4().hex}"
    if kind == "hadoop":
        spark = request.getfixturevalue("spark")
        return HadoopStorage(spark.sparkContext), root
    return WebHdfsStorage(hdfs.http), root


def test_whole_file_round_trip_replace_list_and_delete(backend: tuple[Storage, str]) -> None:
    st, root = backend
    f = join(root, "a", "b", "x.json")
    assert not st.exists(f) and st.list(join(root, "a")) == [] and st.size_under(root) == 0
    with pytest.raises(FileNotFoundError):
        st.read_text(f)
    with pytest.raises(FileNotFoundError):
        st.read_bytes(f)
    st.write_text(f, '{"v": "ü"}')  # parents are created
    assert st.read_text(f) == '{"v": "ü"}' and st.exists(f) and not st.is_dir(f)
    assert st.read_bytes(f) == '{"v": "ü"}'.encode()
    assert st.is_dir(join(root, "a", "b"))
    st.write_text(f, "second")  # replaced as a whole, no temporary file left beside it
    assert st.read_text(f) == "second"
    st.write_text(join(root, "a", "b", "10"), "")
    st.write_text(join(root, "a", "b", "9"), "nine")
    assert st.list(join(root, "a", "b")) == ["10", "9", "x.json"]
    assert st.size_under(root) == len("second") + len("nine")
    st.delete(f)
    st.delete(f)  # deleting what is not there is not an error
    assert not st.exists(f) and st.list(join(root, "a", "b")) == ["10", "9"]
    st.mkdirs(join(root, "empty"))
    assert st.is_dir(join(root, "empty")) and st.list(join(root, "empty")) == []
