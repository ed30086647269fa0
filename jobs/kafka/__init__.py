"""Kafka as a source and a sink: the pure parts (no pyspark).

- :mod:`jobs.kafka.columns`: the Kafka metadata columns a definition's expressions may use;
- :mod:`jobs.kafka.secrets`: SASL/SSL settings referenced by name (env or a secrets file);
- :mod:`jobs.kafka.contract`: the sink's message key / value / headers (byte-identical re-sends);
- :mod:`jobs.kafka.retention`: may a new store rebuild from what the topic still retains?
- :mod:`jobs.kafka.broker`: a real single-node broker for the tests and the demo.
The Spark parts are ``jobs/spark/kafka_source.py`` and ``jobs/spark/kafka_sink.py``.
"""

from jobs.kafka.errors import KafkaSetupError

__all__ = ["KafkaSetupError"]
