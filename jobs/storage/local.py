"""The local-disk backend (plain paths and ``file:`` URIs): os and pathlib, atomic renames."""

from __future__ import annotations

import os
from pathlib import Path

from jobs.storage.location import local_path


class LocalStorage:
    name = "local"

    @staticmethod
    def _p(path: str) -> Path:
        return Path(local_path(path))

    def exists(self, path: str) -> bool:
        return self._p(path).exists()

    def is_dir(self, path: str) -> bool:
        return self._p(path).is_dir()

    def read_text(self, path: str) -> str:
        return self._p(path).read_text(encoding="utf-8")

    def read_bytes(self, path: str) -> bytes:
        return self._p(path).read_bytes()

    def write_text(self, path: str, text: str) -> None:
        p = self._p(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)

    def delete(self, path: str) -> None:
        self._p(path).unlink(missing_ok=True)

    def list(self, path: str) -> list[str]:
        p = self._p(path)
        return sorted(os.listdir(p)) if p.is_dir() else []

    def mkdirs(self, path: str) -> None:
        self._p(path).mkdir(parents=True, exist_ok=True)

    def size_under(self, path: str) -> int:
        total = 0
        for dirpath, _dirs, files in os.walk(self._p(path)):
            for n in files:
                try:
                    total += os.path.getsize(os.path.join(dirpath, n))
                except OSError:
                    continue
        return total
