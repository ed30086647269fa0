"""What every page does first: sign-in check, role gate, messages, the shared job choice.

The chosen job is kept in ``st.session_state`` (not per page), so moving from Jobs to Late data
keeps looking at the same job -- what someone investigating one job expects.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from jobs.catalog import CatalogError
from jobs.catalog.ports import UICatalog
from jobs.catalog.records import Action
from ui import auth, services

JOB_KEY = "tm_job"
REFRESH_KEY = "tm_refresh"
REFRESH_CHOICES = {"off": None, "2 s": 2, "5 s": 5, "10 s": 10, "30 s": 30}


def page_setup(action: Action = "read") -> tuple[UICatalog, auth.SessionUser]:
    user = auth.require_page(action)
    auth.show_flashes()
    return services.catalog(), user


def refresh_every() -> float | None:
    """Seconds between refreshes of live sections (``st.fragment(run_every=...)``)."""
    choice = st.session_state.get(REFRESH_KEY, "5 s")
    return REFRESH_CHOICES.get(choice, 5)


def job_names(cat: UICatalog) -> list[str]:
    try:
        return [j.name for j in cat.jobs()]
    except CatalogError as exc:
        st.error(str(exc))
        return []


def pick_job(cat: UICatalog, names: Sequence[str] | None = None, *, label: str = "Job") -> str | None:
    """A job selector shared across pages; None (and an empty state) when there are no jobs."""
    names = list(job_names(cat) if names is None else names)
    if not names:
        empty_state()
        return None
    current = st.session_state.get(JOB_KEY)
    index = names.index(current) if current in names else 0
    choice = st.selectbox(label, names, index=index, key=f"pick_job_{label}")
    st.session_state[JOB_KEY] = choice
    return str(choice)


def job_or_stop(cat: UICatalog, names: Sequence[str] | None = None) -> str:
    """The chosen job; stops the page (after the empty state) when there are no jobs."""
    name = pick_job(cat, names)
    if name is None:
        st.stop()
        raise AssertionError("unreachable")  # st.stop raises
    return name


def empty_state() -> None:
    """What a new user sees where there is nothing yet: what to do next."""
    if auth.can("edit"):
        st.info(
            "There are no jobs yet. Create one on the **Define / edit** page: give it a name, "
            "point the source at a directory of JSON files, choose a window and the "
            "aggregations, check the preview, then save."
        )
        st.page_link("views/define.py", label="Define a job", icon=":material/add:")
    else:
        st.info(
            "There are no jobs yet. An editor creates jobs on the Define / edit page; "
            "ask one, or ask an admin for the editor role."
        )
