"""The storage package's one error type."""

from __future__ import annotations


class StorageError(Exception):
    """A location that is malformed, unreachable or unreadable. ``setting`` names the
    configuration entry the location came from (``checkpoint_root``, ``sink.path``...), when
    known, so the message says what to fix."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(f"{setting}: {message}" if setting else message)
        self.setting = setting
        self.detail = message
        """The message without the setting."""
