"""What one running job is: its identity, definition and where its files live."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jobs.config import Settings
from jobs.definition.model import Definition
from jobs.spark.plan import ExecutionPlan, choose_plan


@dataclass(frozen=True)
class JobContext:
    job: str
    version: int
    store: str
    defn: Definition
    checkpoint: str
    """``<checkpoint root>/<store>`` (a new store is a new checkpoint)."""
    output_root: str
    """``<sink.path or results root/job>/<store>``: ``panes/``, ``late/``, ``dead_letters/``,
    ``late_counts/``, each partitioned by ``batch_id``."""
    plan: ExecutionPlan

    @classmethod
    def create(
        cls,
        defn: Definition,
        settings: Settings,
        *,
        version: int = 1,
        store: str | None = None,
        force_engine: bool = False,
    ) -> JobContext:
        if store is None:
            from jobs.definition.store import store_name  # colleague's module

            store = store_name(defn)
        base = Path(defn.sink.path) if defn.sink.path else settings.results_root / defn.name
        plan = choose_plan(defn)
        if force_engine and plan.native:
            plan = type(plan)("engine", ("forced",))
        return cls(
            job=defn.name,
            version=version,
            store=store,
            defn=defn,
            checkpoint=str((settings.checkpoint_root / store).absolute()),
            output_root=str(base.absolute() / store),
            plan=plan,
        )

    @property
    def panes_path(self) -> str:
        return f"{self.output_root}/panes"

    @property
    def late_path(self) -> str:
        return f"{self.output_root}/late"

    @property
    def dead_letter_path(self) -> str:
        return f"{self.output_root}/dead_letters"
