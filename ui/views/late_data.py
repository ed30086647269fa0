"""Late data: accepted vs dropped late records per window and over time, and the most recent
late and dead-letter records.

"Accepted" late records arrived after their window closed but within the allowed lateness and
updated it; "dropped" ones arrived after the window expired (or, with ``lateness_basis:
event``, behind the watermark) and went to the late output instead.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from jobs.catalog import CatalogError
from jobs.timeutil import ms_to_datetime
from ui import charts, common, fmt

cat, user = common.page_setup("read")
st.title("Late data")

name = common.job_or_stop(cat)


@st.fragment(run_every=common.refresh_every())
def live(job: str) -> None:
    try:
        per_window = cat.late_counts(job)
        over_time = cat.late_over_time(job)
        samples = cat.late_samples(job, limit=100)
        dead = cat.dead_letters(job, limit=100)
    except CatalogError as exc:
        st.error(str(exc))
        return
    accepted = sum(w.accepted for w in per_window)
    dropped = sum(w.dropped for w in per_window)
    m1, m2, m3 = st.columns(3)
    m1.metric("Late accepted", accepted)
    m2.metric("Late dropped", dropped)
    m3.metric("Dead letters (recent)", len(dead))
    if not (per_window or over_time or samples or dead):
        st.info("No late or malformed records recorded for this job yet. They appear here once "
                "the job has run and records arrive after their windows closed.")
        return

    st.subheader("Per window")
    if per_window:
        rows = [
            {"window_start": ms_to_datetime(w.window_start) if w.window_start is not None else None,
             "window_end": fmt.instant(w.window_end), "key": fmt.key(w.key), "store": w.store,
             "accepted": w.accepted, "dropped": w.dropped, "last": fmt.when(w.last_at)}
            for w in per_window
        ]
        charted = [r for r in rows if r["window_start"] is not None]
        if charted:
            st.altair_chart(charts.late_windows_chart(charted))
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="late_windows")
    else:
        st.caption("No late records per window.")

    st.subheader("Over time")
    if over_time:
        rows_t = [{"recorded_at": p.recorded_at, "batch_id": p.batch_id, "store": p.store,
                   "accepted": p.accepted, "dropped": p.dropped} for p in over_time]
        st.altair_chart(charts.late_time_chart(rows_t))
    else:
        st.caption("No micro-batches recorded yet.")

    st.subheader("Recent late records")
    if samples:
        st.dataframe(
            pd.DataFrame(
                [{"recorded": fmt.when(s.recorded_at), "batch": s.batch_id,
                  "key": fmt.key(s.sample.key), "event time": fmt.instant(s.sample.event_time),
                  "window": f"{fmt.instant(s.sample.window_start)} .. {fmt.instant(s.sample.window_end)}",
                  "reason": s.sample.reason, "record": fmt.compact_json(s.sample.record)}
                 for s in samples]
            ),
            hide_index=True, key="late_samples",
        )
    else:
        st.caption("No late records kept.")

    st.subheader("Recent dead letters")
    if dead:
        st.dataframe(
            pd.DataFrame(
                [{"recorded": fmt.when(d.recorded_at), "batch": d.batch_id,
                  "reason": d.sample.reason, "record": fmt.compact_json(d.sample.record)}
                 for d in dead]
            ),
            hide_index=True, key="late_dead",
        )
    else:
        st.caption("No dead letters: every record parsed and had a key and an event time.")


live(name)
