"""The Airflow trigger behind the migration DAG's ``AssetWatcher``: polls the catalog outbox.

It must be importable by both the triggerer (which runs it) and the dag-processor (which
serializes it), so it lives in ``jobs`` (installed) rather than in ``dags/``, and it imports the
catalog lazily: parsing a DAG file never opens a database. Database calls run in a worker
thread so the triggerer's event loop is never blocked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent


class OutboxTrigger(BaseEventTrigger):
    """Yields one event per definition change (an activation) found in the outbox."""

    def __init__(
        self,
        db_url: str,
        consumer: str = "airflow:outbox-trigger",
        poll_interval: float = 2.0,
        lease_ms: int = 300_000,
    ) -> None:
        super().__init__()
        self.db_url = db_url
        self.consumer = consumer
        self.poll_interval = poll_interval
        self.lease_ms = lease_ms
        self._catalog: Any = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "jobs.lifecycle.outbox_trigger.OutboxTrigger",
            {
                "db_url": self.db_url,
                "consumer": self.consumer,
                "poll_interval": self.poll_interval,
                "lease_ms": self.lease_ms,
            },
        )

    def _open(self) -> Any:
        if self._catalog is None:
            from jobs.catalog import Catalog

            self._catalog = Catalog(self.db_url)
        return self._catalog

    def _poll(self) -> list[dict[str, Any]]:
        from jobs.lifecycle.outbox import poll_changes

        changes = poll_changes(self._open(), self.consumer, lease_ms=self.lease_ms)
        return [c.payload() for c in changes]

    def _ack(self, outbox_id: int) -> None:
        from jobs.lifecycle.outbox import ack

        ack(self._open(), [outbox_id], self.consumer)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            try:
                payloads = await asyncio.to_thread(self._poll)
            except Exception as exc:  # a catalog hiccup must not kill the watcher
                self.log.warning("outbox poll failed: %s", exc)
                payloads = []
            for payload in payloads:
                yield TriggerEvent(payload)
                await asyncio.to_thread(self._ack, int(payload["outbox_id"]))
            await asyncio.sleep(self.poll_interval)

    async def cleanup(self) -> None:
        if self._catalog is not None:
            await asyncio.to_thread(self._catalog.close)
            self._catalog = None
