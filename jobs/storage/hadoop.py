"""The Hadoop FileSystem backend, through the JVM of this process's SparkContext (the driver).

It uses the SparkContext's Hadoop configuration, so everything the job's Spark sees
(``spark.hadoop.*``: the NameNode, S3A credentials providers, ...) applies to tidemark's own
files too. Replacing a file writes a temporary sibling and renames it over the target with
``FileContext.rename(..., OVERWRITE)``: atomic on HDFS; on S3A a copy, so there the file is
written in place instead (one PUT, visible only when complete).
"""

from __future__ import annotations

from typing import Any

from jobs.storage.location import name, parent, scheme


class HadoopStorage:
    name = "hadoop"

    def __init__(self, sc: Any) -> None:
        self._jvm = sc._jvm
        self._gateway = sc._gateway
        self._conf = sc._jsc.hadoopConfiguration()

    def _path(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def _fs(self, path: str) -> Any:
        return self._path(path).getFileSystem(self._conf)

    def exists(self, path: str) -> bool:
        return bool(self._fs(path).exists(self._path(path)))

    def is_dir(self, path: str) -> bool:
        fs = self._fs(path)
        p = self._path(path)
        return bool(fs.exists(p) and fs.getFileStatus(p).isDirectory())

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def read_bytes(self, path: str) -> bytes:
        fs = self._fs(path)
        p = self._path(path)
        if not fs.exists(p):
            raise FileNotFoundError(path)
        stream = fs.open(p)
        try:
            data = self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
        finally:
            stream.close()
        return bytes(data)

    def write_text(self, path: str, text: str) -> None:
        fs = self._fs(path)
        data = bytearray(text.encode("utf-8"))
        if scheme(path) == "s3a":
            self._put(fs, self._path(path), data)
            return
        tmp = self._path(f"{parent(path)}/.{name(path)}.tmp-tidemark")
        self._put(fs, tmp, data)
        rename = getattr(self._jvm.org.apache.hadoop.fs, "Options$Rename")
        opts = self._gateway.new_array(rename, 1)
        opts[0] = rename.OVERWRITE
        fc = self._jvm.org.apache.hadoop.fs.FileContext.getFileContext(
            self._path(path).toUri(), self._conf)
        fc.rename(tmp, self._path(path), opts)

    @staticmethod
    def _put(fs: Any, p: Any, data: bytearray) -> None:
        out = fs.create(p, True)
        try:
            out.write(data)
        finally:
            out.close()

    def delete(self, path: str) -> None:
        fs = self._fs(path)
        p = self._path(path)
        if fs.exists(p):
            fs.delete(p, False)

    def list(self, path: str) -> list[str]:
        fs = self._fs(path)
        p = self._path(path)
        if not fs.exists(p):
            return []
        return sorted(str(s.getPath().getName()) for s in fs.listStatus(p))

    def mkdirs(self, path: str) -> None:
        self._fs(path).mkdirs(self._path(path))

    def size_under(self, path: str) -> int:
        fs = self._fs(path)
        p = self._path(path)
        if not fs.exists(p):
            return 0
        return int(fs.getContentSummary(p).getLength())
