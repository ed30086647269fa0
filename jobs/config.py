"""Where tidemark keeps things, from the environment with embedded defaults.

| variable | default |
|---|---|
| ``TIDEMARK_HOME`` | ``./data`` (the project's data directory) |
| ``TIDEMARK_DB_URL`` | ``sqlite:///<home>/catalog.db`` |
| ``TIDEMARK_CHECKPOINT_ROOT`` | ``<home>/checkpoints`` |
| ``TIDEMARK_RESULTS_ROOT`` | ``<home>/results`` |
| ``TIDEMARK_SPARK_MASTER`` | ``local[*]`` |
| ``AIRFLOW_HOME`` | ``<home>/airflow`` |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    home: Path
    db_url: str
    checkpoint_root: Path
    results_root: Path
    spark_master: str
    airflow_home: Path

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        e = dict(os.environ if env is None else env)
        home = Path(e.get("TIDEMARK_HOME", "data")).absolute()
        return cls(
            home=home,
            db_url=e.get("TIDEMARK_DB_URL", f"sqlite:///{home / 'catalog.db'}"),
            checkpoint_root=Path(e.get("TIDEMARK_CHECKPOINT_ROOT", home / "checkpoints")).absolute(),
            results_root=Path(e.get("TIDEMARK_RESULTS_ROOT", home / "results")).absolute(),
            spark_master=e.get("TIDEMARK_SPARK_MASTER", "local[*]"),
            airflow_home=Path(e.get("AIRFLOW_HOME", home / "airflow")).absolute(),
        )
