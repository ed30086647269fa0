"""The outbox of changes: consumed exactly once, even by concurrent consumers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from catalog_defs import team_scores

from jobs.catalog import Catalog
from jobs.timeutil import ManualClock


def test_changes_land_in_the_outbox_in_order(catalog: Catalog) -> None:
    catalog.create_job(team_scores(), "alice")
    catalog.save_version("team_scores", team_scores(delay="5s"), "bob", base_version=1)
    catalog.activate("team_scores", 2, "bob")
    catalog.set_desired_state("team_scores", "running", "bob")

    events = catalog.consume_outbox("dag")
    assert [e.kind for e in events] == [
        "job_created", "version_saved", "version_activated", "desired_state",
    ]
    assert all(e.job == "team_scores" for e in events)
    activated = events[2].payload
    assert (activated["from_version"], activated["to_version"], activated["same_store"]) == (
        1, 2, True,
    )
    assert events[3].payload == {"state": "running"}
    assert catalog.consume_outbox("dag") == []
    assert catalog.consume_outbox("other") == []
    assert catalog.pending_outbox() == []


def test_two_concurrent_consumers_get_each_event_once(
    catalog: Catalog, open_catalog: Callable[[], Catalog]
) -> None:
    for i in range(30):
        catalog.create_job(team_scores(name=f"job_{i:02d}"), "alice")
        catalog.set_desired_state(f"job_{i:02d}", "running", "alice")
    expected = {e.id for e in catalog.pending_outbox()}
    assert len(expected) == 60

    got: dict[str, list[int]] = {"a": [], "b": []}
    barrier = threading.Barrier(2)

    def consume(name: str, cat: Catalog) -> None:
        barrier.wait()
        while True:
            batch = cat.consume_outbox(name, limit=3)
            if not batch:
                return
            got[name].extend(e.id for e in batch)
            time.sleep(0.02)  # let the other consumer in between batches

    threads = [
        threading.Thread(target=consume, args=(n, open_catalog())) for n in ("a", "b")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(got["a"]).isdisjoint(got["b"])
    assert sorted(got["a"] + got["b"]) == sorted(expected)
    assert got["a"] and got["b"], "both consumers should have taken part"


def test_claim_ack_and_lease_expiry(catalog: Catalog, clock: ManualClock) -> None:
    catalog.create_job(team_scores(), "alice")
    catalog.set_desired_state("team_scores", "running", "alice")

    first = catalog.claim_outbox("worker-1", lease_ms=60_000)
    assert [e.kind for e in first] == ["job_created", "desired_state"]
    assert catalog.claim_outbox("worker-2", lease_ms=60_000) == []  # leased

    assert catalog.ack_outbox("worker-1", [first[0].id]) == 1
    clock.advance(60_001)  # worker-1 died holding the second event
    second = catalog.claim_outbox("worker-2", lease_ms=60_000)
    assert [e.id for e in second] == [first[1].id]
    assert catalog.ack_outbox("worker-1", [first[1].id]) == 0  # no longer its claim
    assert catalog.ack_outbox("worker-2", [first[1].id]) == 1
    assert catalog.pending_outbox() == []
    clock.advance(120_000)
    assert catalog.claim_outbox("worker-3") == []
