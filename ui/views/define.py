"""Define / edit: a form for every field of the definition format, validated as you type.

The page keeps its own model of the form (``ui.defform``) rather than relying on widget state,
so fields hidden by the window type or trigger mode keep their values, and a YAML import can
replace every field at once (the widget keys carry a generation number that the import bumps).
At the top of each run the model is synced from the widgets, validated by ``jobs.definition``,
and compared with the job's active version; the widgets then render with their field errors,
and the summary says the store name and whether saving keeps the store or needs a migration.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from jobs.catalog import CatalogError
from jobs.definition.errors import DefinitionError, FieldError
from jobs.definition.model import Definition, Source
from jobs.definition.windows import kind_class
from jobs.engine.arrival import Arrival
from jobs.kafka.errors import KafkaSetupError
from jobs.lifecycle.retention_gate import ACCEPT_ACTION
from ui import auth, charts, common, defform, fmt, retention
from ui.definitions import Assessment, assess, load_spec
from ui.preview import (
    DEFAULT_SAMPLE,
    PreviewResult,
    Sample,
    as_micro_batches,
    parse_jsonl,
    run_preview,
    source_sample,
)

cat, user = common.page_setup("edit")
st.title("Define / edit")

NEW = "+ New job"
INITIAL, TOUCHED = "def_initial_model", "def_touched"
MODEL, GEN, LOADED, BASE = "def_model", "def_gen", "def_loaded", "def_base"
CHOICE, PENDING, IMPORT_MSG = "def_job_choice", "def_pending_choice", "def_import_msg"
SCALARS = [k for k in defform.new_model() if k != defform.AGGS]


def wkey(path: str) -> str:
    return f"w.{st.session_state.get(GEN, 0)}.{path}"


def agg_key(i: int, part: str) -> str:
    return wkey(f"{defform.AGGS}[{i}].{part}")


def sync_from_widgets() -> None:
    """Copy widget values into the model (the model is the truth across hidden fields)."""
    model: dict[str, Any] = st.session_state[MODEL]
    for path in SCALARS:
        k = wkey(path)
        if k in st.session_state:
            model[path] = st.session_state[k]
    for i, row in enumerate(model[defform.AGGS]):
        for part in ("name", "fn", "of"):
            k = agg_key(i, part)
            if k in st.session_state:
                row[part] = st.session_state[k]


def replace_model(model: dict[str, Any], *, initial: bool = False) -> None:
    """Put ``model`` in the form; ``initial``: it is the form as loaded, the reference for
    which fields a user has touched (a new job shows errors only of touched fields)."""
    st.session_state[MODEL] = model
    if initial:
        st.session_state[INITIAL] = defform.copy_model(model)
        st.session_state[TOUCHED] = set()
    st.session_state[GEN] = st.session_state.get(GEN, 0) + 1


def add_aggregation() -> None:
    sync_from_widgets()
    model = defform.copy_model(st.session_state[MODEL])
    model[defform.AGGS].append({"name": "", "fn": "sum", "of": ""})
    replace_model(model)


def remove_aggregation(i: int) -> None:
    sync_from_widgets()
    model = defform.copy_model(st.session_state[MODEL])
    del model[defform.AGGS][i]
    replace_model(model)


def import_yaml(text: str) -> None:
    """Replace the form with a YAML/JSON document (kept even when invalid, so it can be fixed
    in the form; keys the form has no field for are reported, not silently dropped)."""
    raw, errors = defform.parse_yaml(text)
    if raw is None:
        st.session_state[IMPORT_MSG] = ("error", "; ".join(f"{f}: {m}" if f else m for f, m in errors))
        return
    model, dropped = defform.form_from_raw(raw)
    if st.session_state.get(LOADED, NEW) != NEW:  # editing: the job's name cannot change
        model["name"] = st.session_state[MODEL]["name"]
    replace_model(model)
    note = f" Not representable in the form (dropped): {', '.join(dropped)}." if dropped else ""
    st.session_state[IMPORT_MSG] = ("success" if not dropped else "warning",
                                    "Imported into the form." + note)


def import_pasted() -> None:
    import_yaml(st.session_state.get("yaml_paste", ""))


def import_uploaded() -> None:
    up = st.session_state.get("yaml_upload")
    if up is not None:
        import_yaml(up.getvalue().decode("utf-8", errors="replace"))


# ---------------------------------------------------------------- which job, which version
names = common.job_names(cat)
if PENDING in st.session_state:
    st.session_state[CHOICE] = st.session_state.pop(PENDING)
options = [NEW, *names]
if st.session_state.get(CHOICE) not in options:
    st.session_state[CHOICE] = NEW
choice = st.selectbox("Job", options, key=CHOICE,
                      help="Pick a job to edit its latest version, or start a new one.")

if st.session_state.get(LOADED) != choice or MODEL not in st.session_state:
    if choice == NEW:
        replace_model(defform.new_model(), initial=True)
        st.session_state[BASE] = None
    else:
        latest = cat.version(choice)
        replace_model(defform.form_from_definition(load_spec(latest.spec_json)), initial=True)
        st.session_state[BASE] = latest.number
    st.session_state[LOADED] = choice
editing = choice != NEW
if editing:
    st.session_state[common.JOB_KEY] = choice

sync_from_widgets()
model: dict[str, Any] = st.session_state[MODEL]
raw, form_errors = defform.raw_from_form(model)
active_defn: Definition | None = None
active_number: int | None = None
if editing:
    job_info = cat.job(choice)
    active_number = job_info.active_version
    if active_number is not None:
        active_defn = load_spec(cat.version(choice, active_number).spec_json)
    base = st.session_state[BASE]
    c1, c2 = st.columns([4, 1], vertical_alignment="center")
    c1.caption(
        f"Editing **{choice}** on top of version {base} (active: v{active_number}, "
        f"latest: v{job_info.latest_version})."
    )
    if c2.button("Reload latest", key="def_reload",
                 help="Discard the form and load the job's latest version."):
        st.session_state[LOADED] = None
        st.rerun()
if not editing and raw["name"] in names:
    form_errors.append(("name", f"a job named {raw['name']!r} exists; pick it above to edit it"))
result: Assessment = assess(raw, form_errors, active_defn)
# an existing job's errors all show; a new job's only once their fields were touched
# (a field typed in and emptied again stays touched: its "must not be empty" shows)
touched: set[str] = st.session_state.setdefault(TOUCHED, set())
touched |= defform.touched_paths(model, st.session_state.get(INITIAL) or model)
errors: list[FieldError] = [e for e in result.errors
                            if editing or defform.error_shown(e[0], touched)]
untouched: list[FieldError] = [e for e in result.errors if e not in errors]
shown: set[int] = set()


def field_errors(*paths: str) -> None:
    for i, (path, message) in enumerate(errors):
        if i not in shown and any(defform.field_matches(path, p) for p in paths):
            shown.add(i)
            st.error(f"{path}: {message}" if path not in paths else message, icon=":material/error:")


def text(path: str, label: str, *, help: str | None = None, placeholder: str | None = None,
         disabled: bool = False, area: bool = False) -> None:
    widget = st.text_area if area else st.text_input
    model[path] = widget(label, value=str(model.get(path) or ""), key=wkey(path), help=help,
                         placeholder=placeholder, disabled=disabled)
    field_errors(path)


def select(path: str, label: str, choices_key: str | None = None, *, help: str | None = None,
           show_errors: bool = True) -> str:
    choices = list(defform.CHOICES[choices_key or path])
    current = str(model.get(path) or choices[0])
    if current not in choices:  # an imported invalid value: keep it so its error shows
        choices.append(current)
    model[path] = st.selectbox(label, choices, index=choices.index(current), key=wkey(path),
                               help=help)
    if show_errors:
        field_errors(path)
    return str(model[path])


def check(path: str, label: str, *, help: str | None = None) -> None:
    model[path] = st.checkbox(label, value=bool(model.get(path)), key=wkey(path), help=help)
    field_errors(path)


DUR = "250ms, 10s, 2m, 1h, 1d, PT2M or milliseconds"
tab_form, tab_yaml, tab_preview = st.tabs(["Form", "YAML", "Preview"])

with tab_form:
    st.markdown("#### Job")
    c1, c2 = st.columns([1, 2])
    with c1:
        text("name", "Name", help="[a-z][a-z0-9_]{0,62}, unique; cannot change after creation",
             placeholder="team_scores", disabled=editing)
    with c2:
        text("description", "Description", placeholder="Team scores, 2 minute windows")

    st.markdown("#### Source")
    c1, c2, c3 = st.columns(3)
    with c1:
        kind = select("source.kind", "Source kind")
    with c2:
        text("source.path", "Source path", help="files: a directory new files land in",
             placeholder="data/landing/team_scores")
    with c3:
        if kind in ("files", "kafka"):
            select("source.format", "Format")
    text("source.schema", "Schema (Spark DDL)", placeholder="team STRING, score INT, et TIMESTAMP",
         help="Required for csv/json sources when the job runs.")
    text("source.options", "Reader options (one name=value a line)", area=True,
         placeholder=("kafka.bootstrap.servers=127.0.0.1:9092\nsubscribe=scores" if kind == "kafka"
                      else "maxFilesPerTrigger=1"),
         help="kafka: credentials only as ${env:NAME} or ${secret:NAME}" if kind == "kafka"
         else None)

    st.markdown("#### Key and time")
    c1, c2 = st.columns(2)
    with c1:
        text("key", "Key (SQL expression)", placeholder="team",
             help="Leave empty for one global key.")
    with c2:
        text("event_time", "Event time (SQL expression or 'processing')", placeholder="et",
             help="A timestamp or epoch-ms expression; empty or 'processing' = arrival time.")

    st.markdown("#### Watermark")
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        strategy = select("watermark.strategy", "Strategy")
    with c2:
        if strategy == "bounded":
            text("watermark.delay", "Delay", help=f"Out-of-orderness allowed ({DUR}, infinite)")
    with c3:
        select("watermark.scope", "Scope")
    with c4:
        check("watermark.idle_advance", "Advance when idle",
              help="Bytewax-style: the watermark also advances with processing time.")

    st.markdown("#### Window")
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        wtype = select("window.type", "Window type")
    wkind = kind_class(wtype)
    for col, param in zip((c2, c3, c4), wkind.params, strict=False):
        with col:
            text(param.field, param.label, help=param.help)
    if wkind.note:
        st.caption(wkind.note)
    field_errors("window")

    st.markdown("#### Lateness, trigger, accumulation")
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        text("allowed_lateness", "Allowed lateness", help=f"{DUR}, or infinite")
    with c2:
        select("lateness_basis", "Lateness basis",
               help="window: late once the window closed; event: a record behind the watermark")
    with c3:
        emit = select("trigger.emit", "Emit",
                      help="final: one pane per window; current: every update; custom: below")
    with c4:
        select("accumulation", "Accumulation")
    if emit == "custom":
        c1, c2, c3 = st.columns(3)
        with c1:
            early = select("trigger.early.kind", "Early firing", show_errors=False)
            if early != "none":
                text("trigger.early.value", "Early: count" if early == "count" else "Early: every/after",
                     help="N elements" if early == "count" else DUR)
            if early == "every":
                text("trigger.early.align_to", "Early: align to (ISO instant)")
            field_errors("trigger.early")
        with c2:
            check("trigger.on_time", "On-time pane", help="Fire when the watermark passes the end.")
        with c3:
            late_kind = select("trigger.late.kind", "Late firing", show_errors=False)
            if late_kind != "none":
                text("trigger.late.value", "Late: count" if late_kind == "count" else "Late: after",
                     help="N elements" if late_kind == "count" else DUR)
            field_errors("trigger.late")
    field_errors("trigger")

    st.markdown("#### Aggregations")
    rows = model[defform.AGGS]
    for i, row in enumerate(rows):
        c1, c2, c3, c4 = st.columns([3, 2, 4, 1], vertical_alignment="bottom")
        with c1:
            row["name"] = st.text_input("Aggregation name", value=row.get("name", ""), key=agg_key(i, "name"),
                                        label_visibility="visible" if i == 0 else "collapsed",
                                        placeholder="output field name")
        with c2:
            fns = list(defform.CHOICES["fn"])
            cur = row.get("fn") or "count"
            if cur not in fns:
                fns.append(cur)
            row["fn"] = st.selectbox("Aggregation function", fns, index=fns.index(cur), key=agg_key(i, "fn"),
                                     label_visibility="visible" if i == 0 else "collapsed")
        with c3:
            row["of"] = st.text_input("Of (SQL expression)", value=row.get("of", ""),
                                      key=agg_key(i, "of"), placeholder="score (empty for count)",
                                      label_visibility="visible" if i == 0 else "collapsed")
        with c4:
            st.button("Remove", key=f"agg_remove_{st.session_state[GEN]}_{i}",
                      on_click=remove_aggregation, args=(i,), disabled=len(rows) <= 1)
        field_errors(f"{defform.AGGS}[{i}]")
    st.button("Add aggregation", key="agg_add", on_click=add_aggregation)
    field_errors(defform.AGGS)

    st.markdown("#### Sink")
    c1, c2 = st.columns([1, 3])
    with c1:
        sink_kind = select("sink.kind", "Sink kind",
                           help="catalog: panes stored in the catalog (Windows page); kafka: "
                                "one message per pane, also kept as Parquet (docs/kafka.md)")
    with c2:
        text("sink.path", "Sink path", placeholder="data/results/team_scores")
    if sink_kind == "kafka":
        c1, c2 = st.columns([1, 3])
        with c1:
            text("sink.topic", "Sink topic", placeholder="team_scores_panes")
        with c2:
            text("sink.options", "Producer options (one name=value a line)", area=True,
                 placeholder="kafka.bootstrap.servers=127.0.0.1:9092")
        c1, c2 = st.columns(2)
        with c1:
            text("sink.late_topic", "Late records topic (optional)")
        with c2:
            text("sink.dead_letter_topic", "Dead letters topic (optional)")

with tab_yaml:
    yaml_text = defform.to_yaml(raw)
    st.code(yaml_text, language="yaml")
    st.download_button("Export YAML", yaml_text, file_name=f"{raw.get('name') or 'definition'}.yaml",
                       mime="application/x-yaml", key="yaml_export")
    st.markdown("##### Import")
    st.text_area("Paste a YAML or JSON definition", key="yaml_paste", height=200)
    st.button("Load into form", key="yaml_load", on_click=import_pasted)
    st.file_uploader("…or upload a .yaml / .json file", type=["yaml", "yml", "json"],
                     key="yaml_upload", on_change=import_uploaded)
    msg = st.session_state.pop(IMPORT_MSG, None)
    if msg:
        getattr(st, msg[0])(msg[1])


@st.cache_data(show_spinner=False, max_entries=32)
def cached_preview(spec: str, sample_json: str, arrival: str) -> PreviewResult:
    defn = load_spec(json.loads(spec))
    return run_preview(defn, json.loads(sample_json), Arrival.parse(arrival))


@st.cache_data(show_spinner=False, ttl=15, max_entries=16)
def cached_sample(kind: str, path: str, fmt_: str, limit: int,
                  options: tuple[tuple[str, str], ...] = ()) -> Sample | None:
    """The source sample, re-read at most every 15 s: the preview reruns on every keystroke,
    and listing a busy landing directory (or reading a topic) each time would make typing
    sluggish."""
    return source_sample(Source(kind=kind, path=path, format=fmt_, options=options),  # type: ignore[arg-type]
                         limit)


with tab_preview:
    if not result.valid or result.definition is None:
        st.info("The preview runs once the form has no errors.")
    else:
        defn = result.definition
        src = st.radio("Sample", ["Source directory", "Paste JSON lines"], horizontal=True,
                       key="preview_source")
        limit = int(st.number_input("Records in the sample", min_value=1, max_value=20_000,
                                    value=DEFAULT_SAMPLE, step=100, key="preview_limit"))
        sample: Sample | None
        if src == "Source directory":
            try:
                sample = cached_sample(defn.source.kind, defn.source.path or "",
                                       defn.source.format or "json", limit,
                                       defn.source.options)
            except (OSError, KafkaSetupError) as exc:
                st.error(f"Cannot read the source: {exc}")
                sample = None
            if sample is None:
                st.info("No records found in the source path yet. Paste a few JSON lines "
                        "instead (one record per line; `{\"$processing_time\": T}` lines "
                        "advance processing time, as in `tidemark replay`).")
        else:
            pasted = st.text_area("JSON lines", key="preview_paste", height=160,
                                  placeholder='{"team": "a", "score": 3, "et": "2026-01-01T00:00:10Z"}')
            sample = parse_jsonl(pasted, "pasted lines", limit) if pasted.strip() else None
            how = st.radio("Arrival", ["One record at a time (a plain log)",
                                       "Micro-batches between $processing_time lines"],
                           horizontal=True, key="preview_arrival")
            if sample is not None and how.startswith("Micro"):
                sample = as_micro_batches(sample)
        if sample is not None:
            for p in sample.problems[:5]:
                st.warning(p)
            from jobs.definition import canonical_json

            spec = canonical_json(defn)
            pr: PreviewResult | None
            bar = st.progress(0.3, text=f"Running the definition over {len(sample.lines)} lines…")
            try:
                pr = cached_preview(spec, json.dumps(sample.lines), str(sample.arrival))
            except (DefinitionError, ValueError) as exc:
                st.error(f"The preview failed: {exc}")
                pr = None
            bar.empty()
            if pr is not None:
                st.caption(f"Sample: {sample.origin}. Arrival model: {sample.model}. Input "
                           "ends after the sample, so every window closes (as in "
                           f"`tidemark replay --arrival {sample.arrival}`).")
                m1, m2, m3, m4 = st.columns(4)
                m1.metric("Records", pr.records)
                m2.metric("Panes", len(pr.panes))
                m3.metric("Late (dropped)", len(pr.late))
                m4.metric("Dead letters", len(pr.dead_letters))
                if pr.panes:
                    frame = charts.panes_frame(pr.panes)
                    if not sample.clock:
                        # no clock in the sample: every emission is at processing time 0
                        frame = frame.drop(columns=["emitted_at"])
                    numeric = charts.numeric_values(frame)
                    if numeric:
                        value = st.selectbox("Chart value", numeric, key="preview_value")
                        st.altair_chart(charts.panes_chart(frame, value))
                    st.dataframe(frame, hide_index=True, key="preview_panes")
                else:
                    st.info("The sample produced no panes.")
                if pr.late:
                    st.dataframe(pd.DataFrame(pr.late), hide_index=True, key="preview_late")
                if pr.dead_letters:
                    st.dataframe(pd.DataFrame(pr.dead_letters), hide_index=True, key="preview_dead")

# ---------------------------------------------------------------- summary and save
st.divider()
guard_ok = True
leftover = [(p, m) for i, (p, m) in enumerate(errors) if i not in shown]
if errors:
    st.error(f"{len(errors)} problem(s) to fix before saving.")
    for path, message in leftover:
        st.error(f"{path}: {message}" if path else message)
elif untouched:
    st.info("Fill in the form to create the job; still needed: "
            + ", ".join(sorted({p for p, _ in untouched if p})) + ".")
else:
    st.success(f"Valid. State store: `{result.store}`")
    if result.kind == "new_job":
        st.info("Saving creates version 1 of a new job (stopped); start it on the Jobs page.")
    elif result.kind == "unchanged":
        st.info(f"No change from the active version v{active_number}.")
    elif result.kind == "same_store":
        st.info(f"This change **keeps the store** `{result.store}`: the job restarts in place.")
    elif result.kind == "new_store":
        files = (f"replays {result.replay_files} file(s) of retained input"
                 if result.replay_files is not None else "replays the retained input")
        st.warning(f"This change **needs a migration** to the new store `{result.store}` "
                   f"({files}, then cuts over).")
        if result.path_change is not None:
            old_path, new_path = result.path_change
            st.caption(f"It moves the job from the **{old_path}** path to the **{new_path}** "
                       "path on Spark (native: Spark's own aggregation; engine: tidemark's "
                       "engine; engine+clock: the engine woken by the wall clock, for "
                       "after/every triggers, idle advance and the processing clock). Each keeps "
                       "its own kind of state, so the store changes even though no "
                       "state-shaping field did (see docs/spark.md).")
        if editing and active_number is not None:
            guard_ok = retention.show(retention.check(
                cat.version(choice, active_number).store_name, raw))
    if result.changes:
        st.dataframe(
            pd.DataFrame([{"field": p, "from": fmt.change_value(p, o), "to": fmt.change_value(p, n)}
                          for p, o, n in result.changes]),
            hide_index=True, key="def_changes",
        )

if st.session_state.pop("def_clear_note", False):
    st.session_state["def_note"] = ""
note = st.text_input("Change note", key="def_note", placeholder="why this change")
activate = False
if editing:
    activate = st.checkbox("Activate after saving", value=True, key="def_activate",
                           help="Make the saved version the one the job runs (restart in place "
                           "or migration, as said above).")
can_save = result.valid and result.kind != "unchanged" and (guard_ok or not activate)
if not guard_ok and activate:
    st.caption("Saving with 'Activate after saving' needs the acceptance of a partial rebuild "
               "(or untick it to save without a migration).")
label = "Create job" if not editing else "Save version"
if st.button(label, key="def_save", type="primary", disabled=not can_save):
    if not editing:
        created = auth.perform(cat, "edit", f"Create job {raw['name']}",
                               lambda actor: cat.create_job(raw, actor, note=note), rerun=False)
        if created is not None:
            st.session_state[PENDING] = created.job
            st.session_state[LOADED] = None
            st.session_state["def_clear_note"] = True
            st.rerun()
    else:
        base_version = int(st.session_state[BASE])

        def save(actor: str) -> Any:
            saved = cat.save_version(choice, raw, actor, base_version=base_version, note=note)
            if activate and saved.created and st.session_state.get("def_accept_partial"):
                assert active_number is not None
                cat.record_audit(
                    actor, ACCEPT_ACTION, job=choice, version=saved.version.number,
                    message=f"v{saved.version.number}: partial rebuild accepted on the Define "
                            "page; the new results are complete only from the earliest "
                            "retained offsets",
                    data={"from_store": cat.version(choice, active_number).store_name,
                          "to_store": saved.version.store_name})
            if activate and saved.created:
                cat.activate(choice, saved.version.number, actor, note=note)
            return saved

        try:
            saved = auth.perform(cat, "edit", f"Save {choice}", save, rerun=False)
        except CatalogError as exc:  # pragma: no cover - perform reports catalog errors
            st.error(str(exc))
            saved = None
        if saved is not None:
            number = saved.version.number
            if not saved.created:
                auth.flash("info", "Nothing changed: no new version was made.")
            elif not activate:
                auth.flash("info", f"Saved version {number}; it is not active (activate it by "
                                   "saving again with 'Activate after saving', or roll forward "
                                   "from the CLI).")
            elif cat.job(choice).active_version == number:
                auth.flash("info", f"Saved and activated version {number}: the job restarts "
                                   "in place if it is running.")
            else:
                auth.flash("info", f"Saved version {number}. It needs a new state store, so a "
                                   "migration was planned; v{0} stays active until the cut-over. "
                                   "Follow it on the Migrations page.".replace(
                                       "{0}", str(active_number)))
            st.session_state[LOADED] = None
            st.session_state["def_clear_note"] = True
            st.rerun()
if errors:
    st.caption("Fix the problems above to save.")
elif untouched:
    st.caption("Fill in the fields above to save.")
