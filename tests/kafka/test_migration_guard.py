"""The retention guard in the migration flow, against a real broker: a job read a 2-partition
topic from offset 0, then the topic's early records of partition 1 were deleted (as retention
deletes old segments). A definition change that rebuilds the store from the topic is refused
with the lost offsets named (CLI exit 3, a failed migration, a ``retention_guard`` audit row)
until a user accepts a partial rebuild (``--accept-partial-rebuild``; the Define page's
checkbox); the migration then goes on and records from which offsets its results are complete.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.catalog import Catalog
from jobs.kafka.broker import KafkaBroker
from jobs.lifecycle.retention_gate import ACCEPT_ACTION, COMPLETE_FROM_FILE, GUARD_ACTION
from tests.kafka.conftest import create_topic, produce
from tests.kafka.test_retention import delete_before
from tests.kafka.test_source import T0, run_job
from tests.ui.conftest import cat, catalog_url, template_db, users  # noqa: F401 (fixtures)

JOB = "kscores"


def spec(bootstrap: str, topic: str, size: str = "1m") -> dict[str, Any]:
    return {
        "name": JOB,
        "source": {"kind": "kafka", "format": "json", "schema": "team STRING, score INT, et BIGINT",
                   "options": {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}},
        "key": "team", "event_time": "et", "watermark": {"delay": "30s"},
        "window": {"type": "tumbling", "size": size},
        "aggregations": [{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "score"}],
        "sink": {"kind": "parquet"},
    }


@pytest.fixture(scope="module")
def consumed(spark: Any, broker: KafkaBroker, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[str, Path]]:
    """(topic, checkpoint root): v1's store read the topic from offset 0, then partition 1
    lost offsets 0..6 to retention."""
    from jobs.config import Settings
    from jobs.definition import load_definition

    home = tmp_path_factory.mktemp("guard-home")
    topic = create_topic(broker, partitions=2)
    rows = [{"team": "ab"[i % 2], "score": i, "et": T0 + i * 1_000} for i in range(40)]
    produce(broker, topic, [(i % 2, None, json.dumps(r).encode()) for i, r in enumerate(rows)])
    settings = Settings.from_env({"TIDEMARK_HOME": str(home), "TIDEMARK_SPARK_MASTER": "local[2]"})
    run_job(spark, load_definition(spec(broker.bootstrap, topic)), settings)
    delete_before(broker, topic, 1, 7)
    yield topic, home / "checkpoints"


@pytest.fixture()
def env(consumed: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's TIDEMARK_HOME (own catalog, results) on the shared checkpoints."""
    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", str(consumed[1]))
    return tmp_path / "home"


def audit(catalog: Catalog, action: str) -> list[Any]:
    return catalog.audit(job=JOB, action=action)


def test_cli_refuses_then_goes_on_with_accept_partial_rebuild(
        broker: KafkaBroker, consumed: tuple[str, Path], env: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from jobs.catalog import schema
    from jobs.cli import main

    topic = consumed[0]
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    schema.upgrade(url)
    monkeypatch.setenv("TIDEMARK_DB_URL", url)
    with Catalog(url) as db:
        db.create_job(spec(broker.bootstrap, topic), "alice")
        v2 = db.save_version(JOB, spec(broker.bootstrap, topic, size="2m"), "bob", base_version=1)
        assert v2.kind == "new_store"

        assert main(["migrate", JOB, "2", "--as", "bob", "--timeout", "60"]) == 3
        err = capsys.readouterr().err
        assert "retention guard:" in err and f"{topic}[1] offsets 0..6" in err, err
        (m,) = db.migrations(JOB)
        assert m.state == "failed" and f"{topic}[1] offsets 0..6" in (m.error or "")
        assert db.job(JOB).active_version == 1  # the old version stays
        (refused,) = audit(db, GUARD_ACTION)
        assert refused.outcome == "refused" and refused.data["lost"] == {f"{topic}[1]": [0, 7]}

        assert main(["migrate", "--resume", str(m.id), "--accept-partial-rebuild",
                     "--as", "carol", "--timeout", "60"]) == 0
        m = db.migration(m.id)
        assert m.state == "done" and db.job(JOB).active_version == 2
        (accepted,) = audit(db, ACCEPT_ACTION)
        assert accepted.actor == "carol" and accepted.data["migration_id"] == m.id
        ok = [e for e in audit(db, GUARD_ACTION) if e.outcome == "ok"]
        assert ok[0].data["complete_from"] == {f"{topic}[0]": 0, f"{topic}[1]": 7}
        steps = " ".join(s.message for s in m.steps)
        assert f"results complete {topic}[0] from offset 0, {topic}[1] from offset 7" in steps
        marker = env / "results" / JOB / m.to_store / COMPLETE_FROM_FILE
        assert json.loads(marker.read_text())["complete_from"] == {
            f"{topic}[0]": 0, f"{topic}[1]": 7}


def test_cli_lets_a_complete_rebuild_go_on(
        broker: KafkaBroker, consumed: tuple[str, Path], env: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Partition 0 lost nothing: a job that read only it migrates without any acceptance."""
    from jobs.catalog import schema
    from jobs.cli import main

    topic = consumed[0]
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    schema.upgrade(url)
    monkeypatch.setenv("TIDEMARK_DB_URL", url)
    v1 = spec(broker.bootstrap, topic)
    # the old store read both partitions; the new version reads partition 0 only
    v2 = spec(broker.bootstrap, topic, size="2m")
    v2["source"]["options"] = {"kafka.bootstrap.servers": broker.bootstrap,
                               "assign": json.dumps({topic: [0]})}
    with Catalog(url) as db:
        db.create_job(v1, "alice")
        db.save_version(JOB, v2, "bob", base_version=1)
        assert main(["migrate", JOB, "2", "--as", "bob", "--timeout", "60"]) == 0
        assert db.migrations(JOB)[0].state == "done"
        (ok,) = audit(db, GUARD_ACTION)
        assert ok.outcome == "ok" and ok.data["complete_from"] == {f"{topic}[0]": 0}
        assert audit(db, ACCEPT_ACTION) == []


def test_define_page_refuses_until_a_partial_rebuild_is_accepted(
        cat: Catalog, users: dict[str, str], broker: KafkaBroker,  # noqa: F811
        consumed: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.lifecycle.wiring import open_lifecycle
    from tests.ui.helpers import app_as, button, widget

    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", str(consumed[1]))
    topic = consumed[0]
    cat.create_job(spec(broker.bootstrap, topic), "admin")

    at = app_as("editor", "views/define.py")
    widget(at, "selectbox", "Job").select(JOB).run()
    widget(at, "text_input", "Size").input("2m").run()
    assert not at.exception, at.exception
    refusal = [e.value for e in at.error if "Retention guard" in e.value]
    assert refusal and f"{topic}[1] offsets 0..6" in refusal[0], [e.value for e in at.error]
    assert button(at, "Save version").disabled
    (accept,) = [c for c in at.checkbox if c.label.startswith("Accept a partial rebuild")]
    assert f"{topic}[1] from offset 7" in accept.label
    accept.check().run()
    assert not button(at, "Save version").disabled
    widget(at, "text_input", "Change note").input("two-minute windows").run()
    button(at, "Save version").click().run()
    assert not at.exception, at.exception

    (accepted,) = cat.audit(job=JOB, action=ACCEPT_ACTION)
    (m,) = cat.migrations(JOB)
    assert accepted.actor == "editor" and accepted.version == m.to_version == 2
    assert accepted.data["to_store"] == m.to_store and m.state == "planned"
    # the migration starts (the job is stopped: it cuts over at once) and finds the acceptance
    with open_lifecycle(actor="airflow:migration") as lc:
        m = lc.migrator.drive(m.id, timeout_s=120, poll_s=0.5)
    assert m.state == "done", m.error
    assert any(f"{topic}[1] from offset 7" in s.message for s in m.steps)
