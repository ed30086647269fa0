"""Results of the catalog sink: panes written once per (store, batch) and read back as emitted."""

from __future__ import annotations

import pytest
from catalog_defs import team_scores

from jobs.catalog import Catalog, CatalogError, PaneRecord
from jobs.definition import load_definition
from jobs.replay import replay_lines

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a multiple of 2 minutes


def engine_panes() -> list[dict]:
    """Panes the engine emits for a small input: two instants, then end of input."""
    defn = load_definition(team_scores().replace("sink:", "trigger: {emit: current}\nsink:"))
    lines = [
        {"$processing_time": T0},
        {"team": "red", "score": 3, "et": T0 + 1000},
        {"team": "blue", "score": 4, "et": T0 + 2000},
        {"$processing_time": T0 + 5000},
        {"team": "red", "score": 5, "et": T0 + 3000},
        {"team": "red", "score": 1, "et": T0 + 130_000},
    ]
    return [o for o in replay_lines(defn, lines) if o["type"] == "pane"]


def test_engine_panes_round_trip_through_the_catalog(catalog: Catalog) -> None:
    store = catalog.create_job(team_scores(), "alice").store_name
    emitted = engine_panes()
    assert len(emitted) >= 4
    half = len(emitted) // 2
    assert catalog.write_panes(store, 0, [PaneRecord.from_json(p) for p in emitted[:half]])
    assert catalog.write_panes(store, 1, [PaneRecord.from_json(p) for p in emitted[half:]])

    stored = catalog.panes("team_scores")
    assert [s.pane.to_json() for s in stored] == emitted
    assert [(s.batch_id, s.seq) for s in stored][:2] == [(0, 0), (0, 1)]
    assert {(s.version, s.store) for s in stored} == {(1, store)}
    red = catalog.panes("team_scores", key="red")
    assert red and all(s.pane.key == "red" for s in red)
    assert all(s.batch_id >= 1 for s in catalog.panes("team_scores", since_batch=1))
    first_window = catalog.panes("team_scores", window_start=T0)
    assert {s.pane.window_start for s in first_window} == {T0}


def test_replayed_batch_is_not_written_twice(catalog: Catalog) -> None:
    store = catalog.create_job(team_scores(), "alice").store_name
    panes = [PaneRecord.from_json(p) for p in engine_panes()]
    assert catalog.write_panes(store, 7, panes)
    assert not catalog.write_panes(store, 7, panes)
    assert not catalog.write_panes(store, 7, panes[:1])
    assert len(catalog.panes("team_scores")) == len(panes)
    assert catalog.write_panes(store, 8, [])  # an empty batch is remembered too
    assert not catalog.write_panes(store, 8, panes)


def test_panes_are_attributed_to_the_version_using_the_store(catalog: Catalog) -> None:
    s1 = catalog.create_job(team_scores(), "alice").store_name
    catalog.save_version("team_scores", team_scores(delay="5s"), "bob", base_version=1)
    catalog.activate("team_scores", 2, "bob")  # same store, version 2 now active
    pane = PaneRecord.from_json(engine_panes()[0])
    catalog.write_panes(s1, 0, [pane])
    catalog.write_panes(s1, 1, [pane], version=1)
    assert [s.version for s in catalog.panes("team_scores")] == [2, 1]
    with pytest.raises(CatalogError) as err:
        catalog.write_panes("no_such_store", 0, [pane])
    assert err.value.code == "not_found"
