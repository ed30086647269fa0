"""Audit: who changed what and when, with a readable diff between versions.

The catalog's audit log is append-only; this page only filters and renders it. The version
comparison renders both versions as YAML in human units (durations as ``2m``) and diffs those,
because a diff of canonical JSON in milliseconds is correct but hard to read. A ``create`` event
has no diff (there was nothing before it): it shows the definition it created, in the same YAML.
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime, time

import pandas as pd
import streamlit as st

from jobs.catalog import AuditEvent, CatalogError
from ui import common, defform, fmt
from ui.definitions import load_spec

cat, user = common.page_setup("read")
st.title("Audit")

ACTIONS = ["create", "edit", "activate", "rollback", "start", "stop", "restart_requested",
           "restart", "fail",
           "migrate", "migration_step", "delete", "run_start", "run_end", "user_add",
           "user_update"]
names = common.job_names(cat)
c1, c2, c3, c4 = st.columns(4)
job_f = c1.selectbox("Job", ["(all)", *names], key="aud_job")
actor_f = c2.text_input("Actor", key="aud_actor", placeholder="any")
action_f = c3.selectbox("Action", ["(all)", *ACTIONS], key="aud_action")
outcome_f = c4.selectbox("Outcome", ["(all)", "ok", "refused", "failed"], key="aud_outcome")
c1, c2, c3 = st.columns(3)
since_d = c1.date_input("Since", value=None, key="aud_since")
until_d = c2.date_input("Until", value=None, key="aud_until")
limit = int(c3.number_input("Newest events", min_value=10, max_value=5000, value=200, step=50,
                            key="aud_limit"))

try:
    events = cat.audit(
        job=None if job_f == "(all)" else job_f,
        actor=actor_f.strip() or None,
        action=None if action_f == "(all)" else action_f,
        outcome=None if outcome_f == "(all)" else outcome_f,
        since=datetime.combine(since_d, time.min, tzinfo=UTC) if since_d else None,
        until=datetime.combine(until_d, time.max, tzinfo=UTC) if until_d else None,
        limit=limit,
    )
except CatalogError as exc:
    st.error(str(exc))
    events = []

if not events:
    if names:
        st.info("No audit events match these filters.")
    else:
        common.empty_state()
else:
    def created(e: AuditEvent) -> bool:
        return e.action == "create" and e.outcome == "ok" and bool(e.job) and e.version is not None

    def changes(e: AuditEvent) -> str:
        if created(e):
            return "new definition"
        return f"{len(e.diff)} field(s)" if e.diff else ""

    st.dataframe(
        pd.DataFrame(
            [{"at": fmt.when(e.at), "actor": e.actor, "action": e.action, "job": e.job or "",
              "version": e.version, "outcome": e.outcome, "message": e.message,
              "changes": changes(e)} for e in events]
        ),
        hide_index=True, key="aud_table",
    )
    st.subheader("Changes")
    with_diff = [e for e in events if e.diff or created(e)]
    if not with_diff:
        st.caption("None of these events changed a definition.")
    for e in with_diff[:50]:
        if created(e):
            with st.expander(f"{fmt.when(e.at)} — {e.actor} created {e.job} v{e.version}",
                             expanded=False):
                try:
                    spec = cat.version(str(e.job), int(e.version or 1)).spec_json
                    st.code(defform.to_yaml(defform.raw_from_definition(load_spec(spec))),
                            language="yaml")
                except CatalogError as exc:  # the job was deleted since
                    st.caption(str(exc))
                if e.message:
                    st.caption(e.message)
            continue
        title = (f"{fmt.when(e.at)} — {e.actor} {e.action} {e.job or ''}"
                 f"{f' v{e.version}' if e.version else ''}: {len(e.diff or [])} change(s)")
        with st.expander(title, expanded=False):
            st.dataframe(
                pd.DataFrame([{"field": d.get("path"),
                               "from": fmt.change_value(str(d.get("path")), d.get("old")),
                               "to": fmt.change_value(str(d.get("path")), d.get("new"))}
                              for d in e.diff or []]),
                hide_index=True,
            )
            if e.message:
                st.caption(e.message)

st.subheader("Compare versions")
if not names:
    st.caption("No jobs yet.")
else:
    c1, c2, c3 = st.columns(3)
    job = c1.selectbox("Job", names, key="cmp_job",
                       index=names.index(st.session_state[common.JOB_KEY])
                       if st.session_state.get(common.JOB_KEY) in names else 0)
    numbers = [v.number for v in cat.versions(job)]
    if len(numbers) < 2:
        st.caption(f"{job} has one version; edit it to have something to compare.")
    else:
        old = c2.selectbox("From version", numbers, index=len(numbers) - 2, key="cmp_old")
        new = c3.selectbox("To version", numbers, index=len(numbers) - 1, key="cmp_new")
        result = cat.diff(job, old, new)
        verdict = {"unchanged": "no change", "same_store": "keeps the store",
                   "new_store": "needs a new store (migration)"}[result.kind]
        st.markdown(f"**v{old} → v{new}: {verdict}**")
        if result.changes:
            st.dataframe(
                pd.DataFrame([{"field": p, "from": fmt.change_value(p, o), "to": fmt.change_value(p, n)}
                              for p, o, n in result.changes]),
                hide_index=True, key="cmp_table",
            )
        a = defform.to_yaml(defform.raw_from_definition(load_spec(cat.version(job, old).spec_json)))
        b = defform.to_yaml(defform.raw_from_definition(load_spec(cat.version(job, new).spec_json)))
        udiff = "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                             f"{job} v{old}", f"{job} v{new}"))
        st.code(udiff or "(identical)", language="diff")
