"""The one error type of :mod:`jobs.kafka`."""

from __future__ import annotations


class KafkaSetupError(ValueError):
    """A Kafka setting, secret reference, broker or retention check is not usable.

    ``field`` names the definition field (or ``broker`` / ``retention``) the message is about.
    """

    def __init__(self, message: str, field: str = "source.options") -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
