"""The engine's one error type."""

from __future__ import annotations


class EngineError(Exception):
    """Misuse of the engine (a definition it cannot run, a state that does not restore, an
    input batch that does not fit the definition). Messages name the field or the record."""
