"""The one error type of the Spark runtime."""

from __future__ import annotations


class SparkRuntimeError(Exception):
    """A job cannot be built or run; the message names the definition field or the record."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
