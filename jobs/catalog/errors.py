"""The one error type of the catalog.

Callers (UI, CLI, DAGs, the Spark job) need to tell a few situations apart -- a missing job, a
lost optimistic-locking race, a refused definition, a missing permission -- without importing
SQLAlchemy, so every failure the service raises is a :class:`CatalogError` carrying a ``code``
and a message that names the job, version, field or record it is about.
"""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "not_found",  # no such job / version / run / migration / user
    "exists",  # creating something that already exists (job name, user name)
    "conflict",  # optimistic locking: the edit is based on a version that is no longer latest
    "invalid",  # a definition or an argument is refused; .errors holds (field, message) pairs
    "forbidden",  # the actor's role does not allow the action
    "immutable",  # an attempt to change an audit event or a definition version
    "state",  # the operation does not fit the current state (e.g. a migration transition)
    "schema",  # the database schema is not at the head revision
]


class CatalogError(Exception):
    """A refused or failed catalog operation.

    ``code`` says which kind of failure (see :data:`ErrorCode`); ``errors`` lists
    ``(field, message)`` pairs when a definition was refused (copied from the
    ``DefinitionError``), so the UI can show them next to the fields.
    """

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode = "invalid",
        errors: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code: ErrorCode = code
        self.errors: list[tuple[str, str]] = list(errors or [])

    def __str__(self) -> str:
        return self.message
