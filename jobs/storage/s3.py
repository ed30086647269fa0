"""The S3 backend for processes without a JVM: pyarrow's ``S3FileSystem``.

Spark's Python workers (the gate, the engine host) and the UI read and write ``s3a://``
locations with it; the driver uses Hadoop's S3A through Spark's JVM instead
(:mod:`jobs.storage.hadoop`), with the same endpoint and credentials (:mod:`s3options`).
``write_text`` is one PUT of the whole object: S3 makes an object visible only when its upload
completes, so a reader never sees a partial file (there is no rename to make atomic).
Directories are key prefixes; ``mkdirs`` leaves an empty ``dir/`` marker object, as S3A does.
"""

from __future__ import annotations

from typing import Any

from jobs.storage.errors import StorageError
from jobs.storage.s3options import S3Options


def _key(path: str) -> str:
    """``bucket/key`` of an ``s3a://bucket/key`` location (pyarrow's path form)."""
    return path.split("://", 1)[1].rstrip("/") if "://" in path else path.rstrip("/")


class S3Storage:
    name = "s3"

    def __init__(self, options: S3Options) -> None:
        from pyarrow import fs

        self._fs_mod = fs
        endpoint = options.endpoint
        kwargs: dict[str, Any] = {"region": options.region,
                                  "force_virtual_addressing": not options.path_style}
        if endpoint:
            scheme, _, rest = endpoint.partition("://")
            kwargs.update(endpoint_override=rest, scheme=scheme)
        if options.access_key and options.secret_key:
            kwargs.update(access_key=options.access_key, secret_key=options.secret_key)
        self.fs = fs.S3FileSystem(**kwargs)

    def _info(self, path: str) -> Any:
        try:
            return self.fs.get_file_info(_key(path))
        except OSError as exc:
            raise StorageError(f"S3 {path}: {exc}") from exc

    def exists(self, path: str) -> bool:
        return bool(self._info(path).type != self._fs_mod.FileType.NotFound)

    def is_dir(self, path: str) -> bool:
        return bool(self._info(path).type == self._fs_mod.FileType.Directory)

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def read_bytes(self, path: str) -> bytes:
        if self._info(path).type != self._fs_mod.FileType.File:
            raise FileNotFoundError(path)
        with self.fs.open_input_stream(_key(path)) as f:
            return bytes(f.read())

    def write_text(self, path: str, text: str) -> None:
        with self.fs.open_output_stream(_key(path)) as f:
            f.write(text.encode("utf-8"))

    def delete(self, path: str) -> None:
        if self._info(path).type == self._fs_mod.FileType.File:
            self.fs.delete_file(_key(path))

    def list(self, path: str) -> list[str]:
        sel = self._fs_mod.FileSelector(_key(path), allow_not_found=True)
        try:
            infos = self.fs.get_file_info(sel)
        except NotADirectoryError:
            return []
        return sorted(i.base_name for i in infos)

    def mkdirs(self, path: str) -> None:
        self.fs.create_dir(_key(path), recursive=True)

    def size_under(self, path: str) -> int:
        sel = self._fs_mod.FileSelector(_key(path), allow_not_found=True, recursive=True)
        try:
            infos = self.fs.get_file_info(sel)
        except NotADirectoryError:
            return 0
        return sum(i.size or 0 for i in infos if i.type == self._fs_mod.FileType.File)
