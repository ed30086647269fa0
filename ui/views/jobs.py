"""Jobs: what is running, how far behind it is, and the start / stop / restart / roll back
controls.

The table refreshes itself (``st.fragment(run_every=...)``); the controls sit outside the
fragment so a refresh never swallows a click. Every control is checked against the catalog's
role rules when clicked (``auth.perform``) and records the signed-in user as the actor.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from jobs.catalog import CatalogError
from jobs.catalog.ports import UICatalog
from jobs.catalog.records import JobOverview
from ui import auth, charts, common, fmt

cat, user = common.page_setup("read")
st.title("Jobs")


def overview_rows(items: list[JobOverview]) -> pd.DataFrame:
    rows = []
    for o in items:
        j = o.job
        rows.append(
            {
                "job": j.name,
                "status": j.status + (f" ({j.failed_reason})" if j.failed_reason else ""),
                "desired": j.desired_state,
                "active version": j.active_version,
                "latest version": j.latest_version,
                "rows/s": fmt.rate(o.rows_per_second),
                "watermark": fmt.instant(o.watermark),
                "watermark lag": fmt.lag(o.watermark_lag_ms),
                "late accepted": o.late_accepted,
                "late dropped": o.late_dropped,
                "dead letters": o.dead_letters,
                "last heartbeat": fmt.when(o.run.last_heartbeat_at if o.run else None),
                "restarts": j.restart_count,
                "store": j.active_store or fmt.NONE,
            }
        )
    return pd.DataFrame(rows)


@st.fragment(run_every=common.refresh_every())
def live_table(catalog: UICatalog) -> list[JobOverview]:
    try:
        items = catalog.jobs_overview()
    except CatalogError as exc:
        st.error(str(exc))
        return []
    if items:
        st.dataframe(overview_rows(items), hide_index=True, key="jobs_table")
        st.caption(f"Refreshed {fmt.when(pd.Timestamp.now(tz='UTC').to_pydatetime())}")
    return items


items = live_table(cat)
if not items:
    common.empty_state()
    st.stop()

st.subheader("Control a job")
name = common.job_or_stop(cat, [o.job.name for o in items])
job = cat.job(name)
operate = auth.can("operate")
hint = None if operate else auth.why_not("operate")

c1, c2, c3, c4 = st.columns(4)
if c4.button("Edit definition", key="edit_def", disabled=not auth.can("edit"),
             help=None if auth.can("edit") else auth.why_not("edit")):
    st.session_state["def_pending_choice"] = name
    st.switch_page("views/define.py")
if c1.button("Start", key="start", disabled=not operate or job.desired_state == "running", help=hint):
    auth.perform(cat, "operate", f"Start {name}",
                 lambda actor: cat.set_desired_state(name, "running", actor, reason="UI start"))
if c2.button("Stop", key="stop", disabled=not operate or job.desired_state == "stopped", help=hint):
    auth.perform(cat, "operate", f"Stop {name}",
                 lambda actor: cat.set_desired_state(name, "stopped", actor, reason="UI stop"))
if c3.button("Restart", key="restart", disabled=not operate or job.desired_state != "running",
             help=hint or "Restart the running job (e.g. after changing its environment)."):
    auth.perform(cat, "operate", f"Restart {name}",
                 lambda actor: cat.request_restart(name, actor, reason="UI restart"))
if job.desired_state == "running" and job.status == "starting":
    st.info("Start requested: the supervisor launches the job within a minute.")
if job.status == "failed":
    st.error(f"The job failed: {job.failed_reason}. Fix the cause, then press Start to try again.")

st.subheader("Roll back")
versions = cat.versions(name)
older = [v for v in versions if job.active_version is not None and v.number < job.active_version]
if not older:
    st.caption("No earlier version to roll back to.")
else:
    labels = {
        v.number: f"v{v.number} — {fmt.when(v.created_at)} by {v.author}: {v.note or 'no note'} "
        f"(store {v.store_name})"
        for v in older
    }
    target = st.selectbox("Version to roll back to", [v.number for v in reversed(older)],
                          format_func=lambda n: labels[n], key="rollback_target")
    active = next((v for v in versions if v.number == job.active_version), None)
    target_v = next(v for v in older if v.number == target)
    same = active is not None and active.store_name == target_v.store_name
    st.caption(
        "Same state store: the job restarts in place."
        if same
        else f"Different state store: v{target} resumes from its own checkpoint "
        f"(`{target_v.store_name}`) and catches up on the input it missed."
    )
    confirm = st.checkbox(f"I want to roll {name} back to v{target}", key="rollback_confirm",
                          disabled=not operate)
    if st.button("Roll back", key="rollback", type="primary", disabled=not (operate and confirm),
                 help=hint):
        auth.perform(cat, "operate", f"Roll back {name} to v{target}",
                     lambda actor: cat.activate(name, target, actor, note="UI roll back"))

points = cat.progress(name, limit=500)
if points:
    with st.expander("Throughput over time", expanded=False):
        st.altair_chart(charts.progress_chart(
            [{"recorded_at": p.recorded_at, "batch_id": p.batch_id, "input_rows": p.input_rows,
              "rows_per_second": p.rows_per_second} for p in points]))

with st.expander("Versions and runs", expanded=False):
    st.dataframe(
        pd.DataFrame(
            [
                {"version": v.number, "active": v.number == job.active_version,
                 "created": fmt.when(v.created_at), "author": v.author, "note": v.note,
                 "store": v.store_name, "relation": v.compatibility}
                for v in reversed(versions)
            ]
        ),
        hide_index=True,
    )
    runs = cat.runs(name, limit=20)
    if runs:
        st.dataframe(
            pd.DataFrame(
                [
                    {"run": r.id, "version": r.version, "status": r.status, "host": r.host,
                     "pid": r.pid, "spark app": r.spark_app_id or fmt.NONE,
                     "started": fmt.when(r.started_at), "heartbeat": fmt.when(r.last_heartbeat_at),
                     "ended": fmt.when(r.ended_at), "exit reason": r.exit_reason or "",
                     "restart #": r.restart_count}
                    for r in runs
                ]
            ),
            hide_index=True,
        )
    else:
        st.caption("This job has never run. Press Start; the supervisor launches it.")
