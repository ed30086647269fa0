"""The one error type of the definition package.

A definition is usually edited in a form, so an error is not one message but a list of
``(field path, message)`` pairs: the UI shows each next to its field, the CLI prints them all,
and ``str(err)`` reads like the first one (``window.step: must not exceed window.size (10m)``)
so a log line or an exception trace is still self-explanatory.
"""

from __future__ import annotations

from collections.abc import Iterable

FieldError = tuple[str, str]
"""``(field path, message)``, e.g. ``("aggregations[1].name", "duplicate name 'total'")``."""


class DefinitionError(ValueError):
    """A definition (or one SQL expression or duration in it) is invalid.

    ``errors`` holds every problem found, in document order; ``field`` is the path of the first.
    An empty field path means the document as a whole (e.g. YAML that does not parse).
    """

    def __init__(self, errors: Iterable[FieldError] | str, field: str = "") -> None:
        if isinstance(errors, str):
            errors = [(field, errors)]
        self.errors: list[FieldError] = list(errors)
        if not self.errors:
            self.errors = [("", "invalid definition")]
        super().__init__(self._render())

    @property
    def field(self) -> str:
        return self.errors[0][0]

    @property
    def message(self) -> str:
        return self.errors[0][1]

    def _render(self) -> str:
        first = format_error(self.errors[0])
        extra = len(self.errors) - 1
        if extra:
            return f"{first} (and {extra} more error{'s' if extra > 1 else ''})"
        return first

    def lines(self) -> list[str]:
        """Every error as ``field: message`` (for the CLI and audit log)."""
        return [format_error(e) for e in self.errors]


def format_error(error: FieldError) -> str:
    field, message = error
    return f"{field}: {message}" if field else message
