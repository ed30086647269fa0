"""Every page renders, with data and with an empty catalog, without an exception."""

from __future__ import annotations

import pytest

from tests.ui.helpers import app_as, texts

PAGES = ["pages/jobs.py", "pages/define.py", "pages/windows.py", "pages/late_data.py",
         "pages/snapshots.py", "pages/audit.py", "pages/migrations.py", "pages/users.py"]


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_empty_catalog(users: dict[str, str], page: str) -> None:
    at = app_as("admin", page)
    assert not at.exception, at.exception
    body = texts(at)
    if page not in ("pages/define.py", "pages/users.py"):
        assert "no jobs yet" in body.lower() or "no migrations" in body.lower(), body


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_with_data(ran_job: str, page: str) -> None:
    at = app_as("admin", page)
    assert not at.exception, at.exception
