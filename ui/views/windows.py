"""Windows: open windows and emitted panes per key, charted over window start.

Panes come from the job's sink (catalog, Parquet or Delta results, on a local disk or a Hadoop
filesystem); late records and dead letters from the files the job writes beside them. Open windows: the windows that
have emitted but not yet finished, and -- for an exact list including windows that have not
fired yet -- the job's state store at a snapshot (Recovery snapshots page), which needs the
Spark state reader.
"""

from __future__ import annotations

import streamlit as st

from jobs.catalog import CatalogError
from jobs.definition.windows import kind_class
from jobs.storage import StorageError
from ui import charts, common, fmt
from ui.definitions import load_spec
from ui.results import (
    PaneRow,
    catalog_panes,
    delta_panes,
    open_from_panes,
    parquet_panes,
    results_location,
    side_records,
)

cat, user = common.page_setup("read")
st.title("Windows")
# the store, key and value boxes are keyed per job (and store): a choice made for one job never
# stays selected, and shown, under another

name = common.job_or_stop(cat)
versions = cat.versions(name)
job = cat.job(name)
stores = list(dict.fromkeys(v.store_name for v in reversed(versions)))
c1, c2 = st.columns([3, 1])
store = c1.selectbox("State store", stores,
                     index=stores.index(job.active_store) if job.active_store in stores else 0,
                     key=f"win_store:{name}", format_func=lambda s: s + (" (active)" if s == job.active_store else ""))
limit = int(c2.number_input("Newest panes", min_value=100, max_value=100_000, value=5000,
                            step=1000, key="win_limit"))
version = next(v for v in reversed(versions) if v.store_name == store)
defn = load_spec(version.spec_json)


settings = common.services.settings()


def load_rows() -> list[PaneRow]:
    if defn.sink.kind == "catalog":
        return catalog_panes(cat, name, store=store, limit=limit)
    if defn.sink.kind == "parquet":
        return parquet_panes(defn, settings.results_root, store=store, limit=limit,
                             webhdfs=settings.webhdfs_url, s3=settings.s3())
    if defn.sink.kind == "delta":
        return delta_panes(defn, settings.results_root, store=store, limit=limit,
                           s3=settings.s3())
    return []


def _text(value: object) -> str:
    """A side file's key and record are JSON text already (the gate's line format)."""
    return value if isinstance(value, str) else fmt.compact_json(value)


def side_files() -> None:
    """Late records and dead letters as the job wrote them beside its panes."""
    where = results_location(defn, settings.results_root, store)
    for kind, title in (("late", "Late records"), ("dead_letters", "Dead letters")):
        try:
            records = side_records(defn, settings.results_root, store=store, kind=kind,
                                   limit=100, webhdfs=settings.webhdfs_url,
                                   s3=settings.s3())
        except (StorageError, OSError, ValueError) as exc:
            st.error(f"Cannot read the {title.lower()} in {where}: {exc}")
            continue
        st.subheader(f"{title} in the results ({len(records)})")
        if records:
            st.dataframe(
                [{"batch": r["batch_id"], "key": _text(r.get("key")),
                  "reason": r.get("reason"), "record": _text(r.get("record"))}
                 for r in records],
                hide_index=True, key=f"win_{kind}")
        else:
            st.caption(f"None in {where}/{kind}.")


@st.fragment(run_every=common.refresh_every())
def live() -> None:
    try:
        rows = load_rows()
    except (CatalogError, StorageError, OSError, ValueError) as exc:
        st.error(f"Cannot read the panes: {exc}")
        return
    if not rows:
        if defn.sink.kind == "console":
            st.info("This version writes panes to the console sink; nothing is kept to show here. "
                    "Use the catalog or parquet sink to see windows.")
        else:
            st.info("No panes emitted yet. Start the job on the Jobs page; windows appear here "
                    "as they fire (with `emit: final`, when the watermark passes their end "
                    "plus the allowed lateness).")
        side_files()
        return
    keys = sorted({fmt.key(r.pane.get("key")) for r in rows})
    chosen = st.multiselect("Keys", keys, default=keys[: min(5, len(keys))], key=f"win_keys:{name}:{store}",
                            help="Keys are shown as JSON: null is the global key.")
    shown = [r for r in rows if fmt.key(r.pane.get("key")) in chosen] if chosen else rows
    open_windows = open_from_panes(shown, merges=kind_class(defn.window.type).merges)
    st.subheader(f"Open windows ({len(open_windows)})")
    st.caption("Windows that have emitted panes but no final pane yet. Windows that have not "
               "fired at all live only in the state store: see Recovery snapshots.")
    if open_windows:
        st.dataframe(charts.panes_frame(open_windows), hide_index=True, key="win_open")
    st.subheader(f"Emitted panes ({len(shown)})")
    frame = charts.panes_frame([r.pane for r in shown])
    frame.insert(0, "version", [r.version for r in shown])
    frame.insert(1, "batch", [r.batch_id for r in shown])
    numeric = charts.numeric_values(frame)
    if numeric:
        value = st.selectbox("Value", numeric, key=f"win_value:{name}:{store}")
        st.altair_chart(charts.panes_chart(frame, value))
        st.caption("Colour: EARLY / ON_TIME / LATE. Crosses are retractions (the value a later "
                   "pane replaces); circles are panes.")
    st.dataframe(frame, hide_index=True, key="win_panes")
    side_files()


live()
