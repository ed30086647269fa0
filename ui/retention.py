"""The retention guard on the Define page: before a change that rebuilds a store from Kafka is
saved and activated, say whether the topic still holds everything the old store read.

The same check the migration runs when the new version starts
(``jobs.lifecycle.retention_gate``); here it only informs the user and asks for the explicit
acceptance of a partial rebuild, which is recorded in the audit (the migration looks for it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import streamlit as st

from jobs.kafka.errors import KafkaSetupError
from jobs.kafka.retention import RetentionVerdict
from jobs.lifecycle import retention_gate as gate
from ui import services


@dataclass(frozen=True)
class GuardView:
    verdict: RetentionVerdict | None
    """None: the guard does not apply (not Kafka, or the old store never read it)."""
    error: str | None = None
    """The broker or the old checkpoint could not be read: the migration would be refused."""

    @property
    def refused(self) -> bool:
        return self.error is not None or (self.verdict is not None and not self.verdict.complete)


@st.cache_data(ttl=15, show_spinner="Checking the topic's retention...")
def _check(old_store: str, spec_json: str, checkpoint_root: str) -> GuardView:
    try:
        return GuardView(gate.check_rebuild(services.settings(), old_store, json.loads(spec_json)))
    except KafkaSetupError as exc:
        return GuardView(None, str(exc))


def check(old_store: str, spec: dict[str, Any]) -> GuardView:
    if (spec.get("source") or {}).get("kind") != "kafka":
        return GuardView(None)
    return _check(old_store, json.dumps(spec, sort_keys=True), services.settings().checkpoint_root)


def show(view: GuardView) -> bool:
    """Show the verdict; returns True when saving with activation may go on (nothing lost, or
    the user ticked the acceptance of a partial rebuild)."""
    if view.error is not None:
        st.error(f"Retention guard: {view.error}. The migration would be refused.")
        return False
    if view.verdict is None:
        return True
    if view.verdict.complete:
        st.caption("Retention guard: every record the old store consumed is still in the "
                   "topic; the new store rebuilds completely.")
        return True
    st.error(f"Retention guard: {view.verdict.message()}.")
    return bool(st.checkbox(
        "Accept a partial rebuild (results complete only "
        f"{gate.describe(view.verdict.complete_from)})", key="def_accept_partial",
        help="Recorded in the audit; the migration then starts and records from which "
             "offsets its results are complete."))
