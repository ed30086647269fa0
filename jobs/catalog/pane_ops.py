"""Results of the ``catalog`` sink: panes written idempotently per (store, batch_id).

Exactly-once across restarts: a batch's panes are written in one transaction together with a
``pane_batches`` row whose (store, batch_id) is unique. When Spark re-runs a batch after a crash
the guard row exists, the insert does nothing and the panes are not written again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from jobs.catalog import convert
from jobs.catalog.base import CatalogBase, key_json
from jobs.catalog.batch_ops import table_of
from jobs.catalog.errors import CatalogError
from jobs.catalog.models import DefinitionVersion, Job, PaneBatch, PaneRow
from jobs.catalog.records import PaneRecord, StoredPane
from jobs.catalog.upserts import insert_many, insert_or_ignore

_ALL: Any = ...
_PANE_COLS = (
    "job_id", "version", "store", "batch_id", "seq", "key_json", "window_start", "window_end",
    "timing", "pane_index", "is_first", "is_last", "retraction", "values", "emitted_at",
    "watermark", "first_event_time", "last_event_time",
)
_INSERT_GUARD = insert_or_ignore(table_of(PaneBatch), ["store", "batch_id"])


class PaneOps(CatalogBase):
    def _store_owner(self, session: Session, store: str, version: int | None) -> tuple[int, int]:
        """(job_id, version) a store's panes belong to."""
        rows = session.execute(
            select(DefinitionVersion.job_id, DefinitionVersion.number).where(
                DefinitionVersion.store_name == store
            )
        ).all()
        if not rows:
            raise CatalogError(f"no definition version uses store {store}", code="not_found")
        job_ids = {r[0] for r in rows}
        if len(job_ids) > 1:
            raise CatalogError(f"store {store} is shared by several jobs", code="state")
        job_id = job_ids.pop()
        numbers = {r[1] for r in rows}
        if version is not None:
            if version not in numbers:
                raise CatalogError(
                    f"version {version} does not use store {store}", code="invalid"
                )
            return job_id, version
        job = session.get(Job, job_id)
        assert job is not None
        if job.active_version is not None and job.active_version in numbers:
            return job_id, job.active_version
        return job_id, max(numbers)

    def write_panes(
        self,
        store: str,
        batch_id: int,
        panes: Sequence[PaneRecord],
        *,
        version: int | None = None,
    ) -> bool:
        """Write the panes of one micro-batch, idempotent per (store, batch_id): False (and
        nothing written) if that batch was already written. ``version`` defaults to the job's
        active version when it uses ``store``, else the newest version that does."""
        now = self._now()
        with self._write() as session:
            job_id, number = self._store_owner(session, store, version)
            inserted = session.execute(
                _INSERT_GUARD,
                {
                    "job_id": job_id,
                    "version": number,
                    "store": store,
                    "batch_id": batch_id,
                    "pane_count": len(panes),
                    "written_at": now,
                },
            ).first()
            if inserted is None:
                return False
            insert_many(
                session,
                table_of(PaneRow),
                _PANE_COLS,
                [
                    (
                        job_id, number, store, batch_id, seq, key_json(p.key), p.window_start,
                        p.window_end, p.timing, p.pane_index, p.is_first, p.is_last,
                        p.retraction, p.values, p.emitted_at, p.watermark, p.first_event_time,
                        p.last_event_time,
                    )
                    for seq, p in enumerate(panes)
                ],
            )
            return True

    def panes(
        self,
        job: str,
        *,
        version: int | None = None,
        store: str | None = None,
        key: Any = _ALL,
        window_start: int | None = None,
        since_batch: int | None = None,
        limit: int = 10_000,
    ) -> list[StoredPane]:
        """Panes in the order they were written (batch by batch, emission order within a
        batch), filtered; ``key`` filters one key (``None`` = the null key)."""
        with self._read() as session:
            stmt = select(PaneRow).where(PaneRow.job_id == self._job_row(session, job).id)
            if version is not None:
                stmt = stmt.where(PaneRow.version == version)
            if store is not None:
                stmt = stmt.where(PaneRow.store == store)
            if key is not _ALL:
                stmt = stmt.where(PaneRow.key_json == key_json(key))
            if window_start is not None:
                stmt = stmt.where(PaneRow.window_start == window_start)
            if since_batch is not None:
                stmt = stmt.where(PaneRow.batch_id >= since_batch)
            rows = session.scalars(stmt.order_by(PaneRow.id).limit(limit))
            return [convert.stored_pane(r, job) for r in rows]
