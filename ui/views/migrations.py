"""Migrations: progress of running and past migrations to a new state store.

A migration builds the new version's store by replaying the retained input (files replayed of
total), lets its watermark catch up with the old store's, then cuts over at a watermark: windows
ending at or before it stay with the old version, later ones belong to the new version.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from jobs.catalog import CatalogError
from jobs.catalog.records import MigrationInfo
from jobs.lifecycle.retention_gate import REFUSAL, accept
from ui import auth, common, fmt

cat, user = common.page_setup("read")
st.title("Migrations")

names = common.job_names(cat)
if not names:
    common.empty_state()
    st.stop()
job_f = st.selectbox("Job", ["(all)", *names], key="mig_job")

ORDER = ["planned", "replaying", "caught_up", "cut_over", "done"]


def stage_fraction(m: MigrationInfo) -> float:
    if m.state in ("done",):
        return 1.0
    if m.state in ("failed", "rolled_back"):
        return 0.0
    if m.state == "replaying" and m.total_files:
        return min(1.0, 0.1 + 0.6 * m.replayed_files / m.total_files)
    return ORDER.index(m.state) / (len(ORDER) - 1) if m.state in ORDER else 0.0


def show(m: MigrationInfo) -> None:
    # Streamlit's own icon font: an emoji needs a font the viewer's system may not have
    icon = {"done": ":material/check_circle:", "failed": ":material/error:",
            "rolled_back": ":material/undo:"}.get(m.state, ":material/hourglass_top:")
    st.markdown(f"#### {icon} {m.job}: v{m.from_version} → v{m.to_version} — {m.state}")
    st.caption(f"`{m.from_store}` → `{m.to_store}`; started {fmt.when(m.created_at)} by "
               f"{m.created_by}; updated {fmt.when(m.updated_at)}")
    if m.total_files:
        st.progress(min(1.0, m.replayed_files / m.total_files),
                    text=f"Replayed input: {m.replayed_files} of {m.total_files} files")
    else:
        st.progress(stage_fraction(m), text=f"Stage: {m.state}")
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("New store watermark", fmt.instant(m.new_watermark))
    c2.metric("Old store watermark", fmt.instant(m.old_watermark))
    behind = (m.old_watermark - m.new_watermark
              if m.old_watermark is not None and m.new_watermark is not None else None)
    c3.metric("Catch-up remaining", fmt.lag(max(0, behind)) if behind is not None else fmt.NONE)
    c4.metric("Cut-over watermark", fmt.instant(m.cutover_watermark))
    if m.error:
        st.error(m.error)
    if m.state == "failed" and (m.error or "").startswith(REFUSAL):
        accept_partial(m)
    if m.steps:
        with st.expander("Steps", expanded=not m.finished):
            st.dataframe(
                pd.DataFrame([{"at": fmt.when(s.at), "state": s.state, "actor": s.actor,
                               "message": s.message} for s in m.steps]),
                hide_index=True,
            )


def accept_partial(m: MigrationInfo) -> None:
    """The retention guard refused this migration: let an operator accept a partial rebuild
    (an audit row the migration looks for when it is resumed)."""
    if st.checkbox("Accept a partial rebuild (the new results are complete only from the "
                   "earliest retained offsets)", key=f"mig_accept_{m.id}"):
        if st.button("Record the acceptance", key=f"mig_accept_btn_{m.id}"):
            auth.perform(cat, "operate", f"Accept a partial rebuild for migration {m.id}",
                         lambda actor: accept(cat, actor, m, "Migrations page"))
        st.caption(f"Then resume it: `tidemark migrate --resume {m.id}`, or trigger the "
                   f"tidemark_migration DAG with `{{\"migration_id\": {m.id}}}`.")


@st.fragment(run_every=common.refresh_every())
def live() -> None:
    try:
        items = cat.migrations(None if job_f == "(all)" else job_f)
    except CatalogError as exc:
        st.error(str(exc))
        return
    if not items:
        st.info("No migrations yet. A migration starts when a version that needs a new state "
                "store is activated (the Define / edit page says so before saving).")
        return
    running = [m for m in items if not m.finished]
    past = [m for m in items if m.finished]
    st.subheader(f"Running ({len(running)})")
    if not running:
        st.caption("None running.")
    for m in running:
        show(m)
    st.subheader(f"Past ({len(past)})")
    for m in past:
        show(m)


live()
