"""The AssetWatcher's trigger: one event per definition change, acknowledged once handed over,
serializable for the triggerer (real catalog, the trigger's own event loop)."""

from __future__ import annotations

import asyncio

from jobs.catalog import Catalog
from jobs.lifecycle.outbox_trigger import OutboxTrigger

V1 = """\
name: scores
key: team
event_time: et
window: {type: tumbling, size: 1m}
aggregations:
  - {name: total, fn: sum, of: score}
sink: {kind: catalog}
"""


async def _events(trigger: OutboxTrigger, wanted: int, quiet_s: float) -> list[dict]:  # type: ignore[type-arg]
    """The payloads the trigger yields: ``wanted`` of them, then nothing for ``quiet_s``."""
    agen = trigger.run()
    got = []
    try:
        while len(got) < wanted:
            got.append((await asyncio.wait_for(agen.__anext__(), timeout=20)).payload)
        try:
            extra = await asyncio.wait_for(agen.__anext__(), timeout=quiet_s)
            got.append(extra.payload)
        except TimeoutError:
            pass
    finally:
        await agen.aclose()
        await trigger.cleanup()
    return got


def test_trigger_yields_each_change_once(tidemark_env: str) -> None:
    with Catalog(tidemark_env) as cat:
        cat.create_job(V1, "alice")
        cat.set_desired_state("scores", "running", "alice")  # not a change the DAG handles
        cat.save_version("scores", V1.replace("size: 1m", "size: 2m"), "bob", base_version=1)
        cat.activate("scores", 2, "bob")  # new store: migration_requested
        (mig,) = cat.migrations("scores")

    trigger = OutboxTrigger(db_url=tidemark_env, poll_interval=0.2)
    classpath, kwargs = trigger.serialize()
    assert classpath == "jobs.lifecycle.outbox_trigger.OutboxTrigger"
    assert OutboxTrigger(**kwargs).serialize() == (classpath, kwargs)

    payloads = asyncio.run(_events(trigger, wanted=1, quiet_s=2.0))
    assert len(payloads) == 1
    assert payloads[0]["kind"] == "migration_requested"
    assert payloads[0]["migration_id"] == mig.id and payloads[0]["to_version"] == 2
    with Catalog(tidemark_env) as cat:
        assert cat.pending_outbox() == []  # handed over and acknowledged
    # a restarted triggerer (a new instance) does not deliver it again
    assert asyncio.run(_events(OutboxTrigger(db_url=tidemark_env, poll_interval=0.2), 0, 2.0)) == []
