"""The storage interface: the few operations tidemark's own files need, over any backend.

Every tidemark file around a job (markers in a checkpoint, the offsets and commits logs it
reads, the gate's side files, the result parts the UI shows) is small, written whole and read
whole, so the interface is whole-file: no streams, no appends.
"""

from __future__ import annotations

from typing import Protocol


class Storage(Protocol):
    """One filesystem. Paths are locations (``jobs.storage.location``) on it.

    ``write_text`` replaces the file as a whole. It is atomic (readers see the old content or
    the new one, never a part) where the filesystem renames atomically (local disks, HDFS);
    on an object store (S3A) it is one PUT, which is visible only once complete and so also
    never partial, but two writers race last-writer-wins (docs/storage.md)."""

    name: str
    """The backend, for messages: ``local``, ``hadoop``, ``webhdfs``."""

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def read_text(self, path: str) -> str:
        """The file's text; ``FileNotFoundError`` when it does not exist."""
        ...

    def read_bytes(self, path: str) -> bytes:
        """The file's bytes (a result file the UI reads: a Parquet part, a side file);
        ``FileNotFoundError`` when it does not exist."""
        ...

    def write_text(self, path: str, text: str) -> None:
        """Replace the file (parents created) with ``text``."""
        ...

    def delete(self, path: str) -> None:
        """Remove the file if it exists (never a directory tree)."""
        ...

    def list(self, path: str) -> list[str]:
        """Names (not paths) of the directory's entries, sorted; [] when it does not exist."""
        ...

    def mkdirs(self, path: str) -> None: ...

    def size_under(self, path: str) -> int:
        """Bytes of every file under the directory (0 when it does not exist)."""
        ...
