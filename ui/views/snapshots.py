"""Recovery snapshots: the committed micro-batches a store can resume from, and roll back.

Every committed micro-batch is a recovery point (batch id, time, watermark, source offsets,
state size, checkpoint). Rolling back re-activates the version that owns a store; that store
resumes from its newest checkpoint and catches up on the input it missed (see docs/ui.md for
why the UI does not rewind a store to an older batch).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from jobs.catalog import CatalogError
from ui import auth, common, fmt
from ui.state_reader import StateReadError, read_open_windows

cat, user = common.page_setup("read")
st.title("Recovery snapshots")

name = common.job_or_stop(cat)
job = cat.job(name)
versions = cat.versions(name)
stores = list(dict.fromkeys(v.store_name for v in reversed(versions)))
store = st.selectbox("State store", stores,
                     index=stores.index(job.active_store) if job.active_store in stores else 0,
                     format_func=lambda s: s + (" (active)" if s == job.active_store else ""),
                     key="snap_store")
owners = [v.number for v in versions if v.store_name == store]
try:
    snaps = cat.snapshots(name, store=store, limit=200)
except CatalogError as exc:
    st.error(str(exc))
    snaps = []

if not snaps:
    st.info("No snapshots for this store yet: one is recorded after every committed "
            "micro-batch once the job runs. Start the job on the Jobs page.")
else:
    st.dataframe(
        pd.DataFrame(
            [{"batch id": s.batch_id, "committed": fmt.when(s.committed_at),
              "watermark": fmt.instant(s.watermark), "version": s.version, "run": s.run_id,
              "offsets": fmt.compact_json(s.source_offsets), "state rows": s.state_rows,
              "state size": fmt.size(s.state_bytes), "checkpoint": s.checkpoint_location}
             for s in snaps]
        ),
        hide_index=True, key="snap_table",
    )
    batch = st.selectbox("Snapshot", [s.batch_id for s in snaps], key="snap_batch",
                         format_func=lambda b: f"batch {b}")
    snap = next(s for s in snaps if s.batch_id == batch)
    c1, c2, c3 = st.columns(3)
    c1.metric("Watermark", fmt.instant(snap.watermark))
    c2.metric("State rows", snap.state_rows)
    c3.metric("State size", fmt.size(snap.state_bytes))
    with st.expander("Source offsets", expanded=False):
        st.json(snap.source_offsets if snap.source_offsets is not None else {})

    st.subheader("Open windows at this snapshot")
    st.caption("Read from the state store through Spark (a separate process; ~20-60 s to start). "
               "This is exactly the state a restart from this batch would resume with.")
    if st.button("Read open windows from the state store", key="snap_read"):
        bar = st.progress(0.0, text="Starting Spark to read the checkpoint…")

        def tick(elapsed: float) -> None:
            bar.progress(min(0.95, elapsed / 60.0),
                         text=f"Reading the state store… {elapsed:.0f} s")

        try:
            windows = read_open_windows(name, snap.version, snap.batch_id, on_tick=tick)
        except StateReadError as exc:
            bar.empty()
            st.error(f"Could not read the state store: {exc}")
        else:
            bar.progress(1.0, text=f"{len(windows)} open window(s) at batch {snap.batch_id}")
            st.session_state["snap_windows"] = (store, snap.batch_id, windows)
    cached = st.session_state.get("snap_windows")
    if cached and cached[0] == store and cached[1] == snap.batch_id:
        rows: list[dict[str, Any]] = [
            {k: (fmt.key(v) if k == "key" else fmt.instant(v) if k in ("window_start", "window_end")
                 and isinstance(v, int) else v if not isinstance(v, dict | list)
                 else fmt.compact_json(v)) for k, v in w.items()}
            for w in cached[2]
        ]
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, key="snap_open")
        else:
            st.caption("No open windows at this snapshot.")

st.subheader("Roll back")
if job.active_store == store:
    st.caption(f"`{store}` is the active store (v{job.active_version}). To roll back, choose an "
               "earlier store above or an earlier version on the Jobs page.")
else:
    target = max(owners)
    st.write(f"Re-activate **v{target}**: its store `{store}` resumes from its newest snapshot"
             + (f" (batch {snaps[0].batch_id}, watermark {fmt.instant(snaps[0].watermark)})"
                if snaps else "") + " and catches up on the input it missed.")
    operate = auth.can("operate")
    confirm = st.checkbox(f"I want to roll {name} back to v{target}", key="snap_confirm",
                          disabled=not operate)
    if st.button("Roll back to this store", key="snap_rollback", type="primary",
                 disabled=not (operate and confirm),
                 help=None if operate else auth.why_not("operate")):
        auth.perform(cat, "operate", f"Roll back {name} to v{target}",
                     lambda actor: cat.activate(name, target, actor,
                                                note=f"UI roll back to store {store}"))
