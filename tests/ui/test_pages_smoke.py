"""Every page renders, with data and with an empty catalog, without an exception."""

from __future__ import annotations

import pytest

from tests.ui.helpers import app_as, texts

PAGES = ["views/jobs.py", "views/define.py", "views/windows.py", "views/late_data.py",
         "views/snapshots.py", "views/audit.py", "views/migrations.py", "views/users.py"]


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_empty_catalog(users: dict[str, str], page: str) -> None:
    at = app_as("admin", page)
    assert not at.exception, at.exception
    body = texts(at)
    if page not in ("views/define.py", "views/users.py"):
        assert "no jobs yet" in body.lower() or "no migrations" in body.lower(), body


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_with_data(ran_job: str, page: str) -> None:
    at = app_as("admin", page)
    assert not at.exception, at.exception
