"""The WebHDFS backend: HDFS over the NameNode's REST API, for processes without a JVM.

Spark's Python workers (the gate, the engine host) read the offsets log and write side files
of ``hdfs://`` locations, but have no Hadoop client. They reach the same HDFS over WebHDFS
(HTTP, standard library only): ``TIDEMARK_WEBHDFS_URL`` names the NameNode's HTTP address
(``http://namenode:9870``); the driver passes it to its executors. Replacing a file writes a
temporary sibling and renames it over the target (WebHDFS's RENAME does not overwrite, so the
target is deleted first): a reader never sees a partial file; the side files it is used for are
read by the driver only after the tasks that write them have ended.
"""

from __future__ import annotations

import getpass
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from jobs.storage.errors import StorageError
from jobs.storage.location import name, parent

TIMEOUT_SECONDS = 60.0


class WebHdfsStorage:
    name = "webhdfs"

    def __init__(self, base_url: str, user: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.user = user or os.environ.get("HADOOP_USER_NAME") or getpass.getuser()

    def _url(self, path: str, op: str, **params: str) -> str:
        p = urllib.parse.urlsplit(path).path if "://" in path else path
        query = urllib.parse.urlencode({"op": op, "user.name": self.user, **params})
        return f"{self.base_url}/webhdfs/v1{urllib.parse.quote(p or '/')}?{query}"

    def _call(self, method: str, path: str, op: str, data: bytes | None = None,
              **params: str) -> Any:
        req = urllib.request.Request(self._url(path, op, **params), data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/octet-stream")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise FileNotFoundError(path) from exc
            raise StorageError(f"WebHDFS {op} {path}: HTTP {exc.code} "
                               f"{exc.read()[:300].decode('utf-8', 'replace')}") from exc
        except OSError as exc:
            raise StorageError(f"WebHDFS {op} {path}: {self.base_url} unreachable ({exc})") \
                from exc

    def _status(self, path: str) -> dict[str, Any] | None:
        try:
            return dict(json.loads(self._call("GET", path, "GETFILESTATUS"))["FileStatus"])
        except FileNotFoundError:
            return None

    def exists(self, path: str) -> bool:
        return self._status(path) is not None

    def is_dir(self, path: str) -> bool:
        st = self._status(path)
        return st is not None and st.get("type") == "DIRECTORY"

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def read_bytes(self, path: str) -> bytes:
        return bytes(self._call("GET", path, "OPEN"))

    def _create(self, path: str, data: bytes) -> None:
        loc = json.loads(self._call("PUT", path, "CREATE", overwrite="true",
                                    noredirect="true"))["Location"]
        req = urllib.request.Request(loc, data=data, method="PUT")
        req.add_header("Content-Type", "application/octet-stream")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS) as resp:
                resp.read()
        except OSError as exc:
            raise StorageError(f"WebHDFS CREATE {path}: {exc}") from exc

    def write_text(self, path: str, text: str) -> None:
        tmp = f"{parent(path)}/.{name(path)}.tmp-{os.getpid()}"
        self._create(tmp, text.encode("utf-8"))
        self.delete(path)
        done = json.loads(self._call("PUT", tmp, "RENAME",
                                     destination=urllib.parse.urlsplit(path).path or path))
        if not done.get("boolean"):
            raise StorageError(f"WebHDFS RENAME {tmp} -> {path} refused")

    def delete(self, path: str) -> None:
        self._call("DELETE", path, "DELETE", recursive="false")

    def list(self, path: str) -> list[str]:
        try:
            out = json.loads(self._call("GET", path, "LISTSTATUS"))
        except FileNotFoundError:
            return []
        return sorted(s["pathSuffix"] for s in out["FileStatuses"]["FileStatus"])

    def mkdirs(self, path: str) -> None:
        self._call("PUT", path, "MKDIRS")

    def size_under(self, path: str) -> int:
        try:
            out = json.loads(self._call("GET", path, "GETCONTENTSUMMARY"))
        except FileNotFoundError:
            return 0
        return int(out["ContentSummary"]["length"])
