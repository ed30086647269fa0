"""Recovery snapshots: the committed micro-batches a store can resume from, and roll back.

Every committed micro-batch is a recovery point (batch id, time, watermark, source offsets,
state size, checkpoint). Rolling back re-activates the version that owns a store; that store
resumes from its newest checkpoint and catches up on the input it missed (see docs/ui.md for
why the UI does not rewind a store to an older batch).
"""

from __future__ import annotations

import importlib
from typing import Any

import pandas as pd
import streamlit as st

from jobs.catalog import CatalogError
from ui import auth, common, fmt

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
    reader = None
    try:  # the Spark runtime's state reader; imported only on demand (it starts a JVM)
        reader = importlib.util.find_spec("jobs.spark.state_reader")
    except (ImportError, ValueError):
        reader = None
    if reader is None:
        st.info("Reading the windows held in state needs the job's state reader "
                "(`jobs.spark.state_reader`), which this installation does not have. The "
                "snapshot row above is what the catalog knows; the Windows page lists windows "
                "that have emitted but not finished.")
    elif st.button("Read open windows from the state store", key="snap_read",
                   help="Starts a local Spark session to read the checkpoint (takes a while)."):
        bar = st.progress(0.1, text="Starting Spark to read the checkpoint…")
        try:
            mod = importlib.import_module("jobs.spark.state_reader")
            rows: list[dict[str, Any]] = mod.open_windows(
                snap.checkpoint_location, snap.batch_id, cat.version(name, snap.version).spec_json)
            bar.progress(1.0, text="Done")
            st.dataframe(pd.DataFrame(rows), hide_index=True, key="snap_open")
        except Exception as exc:  # reader failures are shown, never crash the page
            bar.empty()
            st.error(f"Could not read the state store: {exc}")

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
