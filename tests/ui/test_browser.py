"""End to end in a real headless Chromium against ``streamlit run ui/app.py``.

Log in, create a job through the form, see it listed, edit it and see "needs a migration",
open the audit and see the diff, open late data and snapshots of a job that has run.
Screenshots of every page land in ``tests/artifacts/`` (git-ignored).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Page

from jobs.catalog import BatchProgress, BatchSnapshot, Catalog, LateCount
from tests.ui.helpers import PASSWORD, landing

pytestmark = [pytest.mark.browser, pytest.mark.heavy]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts" / "ui"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
TIMEOUT_MS = 30_000

if not Path(CHROMIUM).exists():
    pytest.skip("Debian chromium is not installed (make system-deps)", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(ran_job: str, catalog_url: str, tmp_path: Path) -> Iterator[str]:
    """The UI served on 127.0.0.1 over the test's catalog (with a job that has run)."""
    port = free_port()
    env = dict(os.environ, TIDEMARK_DB_URL=catalog_url, TIDEMARK_HOME=str(tmp_path / "home"))
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "ui" / "app.py"),
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((tmp_path / "streamlit.log").read_text())
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def settle(page: Page) -> None:
    """Wait until Streamlit has finished the rerun a change started."""
    page.wait_for_timeout(300)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=TIMEOUT_MS)
    page.wait_for_timeout(200)


def fill(page: Page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter")
    settle(page)


def choose(page: Page, label: str, option: str) -> None:
    page.locator('[data-testid="stSelectbox"]').filter(
        has=page.get_by_text(label, exact=True)).first.click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def go(page: Page, title: str) -> None:
    page.get_by_role("link", name=title).first.click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=TIMEOUT_MS)
    settle(page)


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # Streamlit scrolls inside its main container, so a "full page" is a tall viewport
    size = page.viewport_size
    page.set_viewport_size({"width": 1400, "height": 2400})
    settle(page)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    if size is not None:
        page.set_viewport_size(size)


def test_define_edit_audit_late_snapshots_in_a_browser(server: str, cat: Catalog,
                                                       tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    src = landing(tmp_path / "clicks", [{"user": "u1", "ts": "2026-01-01T00:00:10Z"},
                                         {"user": "u1", "ts": "2026-01-01T00:00:20Z"},
                                         {"user": "u2", "ts": "2026-01-01T00:01:30Z"}])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(server)
            page.get_by_label("User name", exact=True).fill("editor")
            page.get_by_label("Password", exact=True).fill(PASSWORD)
            shot(page, "00-sign-in")
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("heading", name="Jobs").first.wait_for()
            settle(page)
            expect(page.get_by_text("Signed in as")).to_be_visible()
            shot(page, "01-jobs")

            # ---- create a job through the form
            go(page, "Define / edit")
            fill(page, "Name", "clicks")
            fill(page, "Source path", str(src))
            fill(page, "Schema (Spark DDL)", "user STRING, ts TIMESTAMP")
            fill(page, "Key (SQL expression)", "user")
            fill(page, "Event time (SQL expression or 'processing')", "ts")
            expect(page.get_by_text("Valid. State store:")).to_be_visible()
            page.get_by_role("tab", name="Preview").click()
            settle(page)
            expect(page.get_by_text("Records", exact=True)).to_be_visible()
            shot(page, "02-define-new-preview")
            page.get_by_role("tab", name="Form").click()
            fill(page, "Change note", "first cut")
            page.get_by_role("button", name="Create job").click()
            settle(page)
            expect(page.get_by_text("Create job clicks: done")).to_be_visible()

            # ---- it is listed
            go(page, "Jobs")
            expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
            choose(page, "Job", "clicks")
            shot(page, "03-jobs-listed")

            # ---- edit it: a bigger window needs a migration
            go(page, "Define / edit")
            choose(page, "Job", "clicks")
            fill(page, "Size", "2m")
            expect(page.get_by_text("needs a migration")).to_be_visible()
            expect(page.get_by_text(re.compile(r"replays 1 file\(s\)"))).to_be_visible()
            shot(page, "04-define-edit-needs-migration")
            fill(page, "Change note", "bigger windows")
            page.get_by_role("button", name="Save version").click()
            settle(page)
            expect(page.get_by_text("migration was planned")).to_be_visible()

            # ---- audit shows the diff
            go(page, "Audit")
            expect(page.get_by_text(re.compile(r"editor edit clicks v2"))).to_be_visible()
            expect(page.get_by_text("+  size: 2m")).to_be_visible()
            shot(page, "05-audit")

            # ---- a job that has run: late data and snapshots
            go(page, "Late data")
            choose(page, "Job", "team_scores")
            expect(page.get_by_text("Per window")).to_be_visible()
            expect(page.get_by_text("Recent late records")).to_be_visible()
            shot(page, "06-late-data")
            # the page refreshes itself (st.fragment(run_every=5 s)): a new batch with two
            # dropped records shows up without any click
            dropped = page.locator('[data-testid="stMetric"]').filter(has_text="Late dropped")
            expect(dropped).to_contain_text("1")
            (run,) = cat.active_runs("team_scores")
            cat.record_batch(run.id, BatchProgress(2, 2, 10.0, 5, None, 1, 1024, late_dropped=2),
                             BatchSnapshot(2, datetime(2026, 1, 1, 0, 4, tzinfo=UTC), None,
                                           {"logOffset": 2}, 1024, "/ckpt/team_scores"),
                             [LateCount("c", 0, 60_000, dropped=2)])
            expect(dropped).to_contain_text("3", timeout=20_000)
            go(page, "Recovery snapshots")
            expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
            expect(page.get_by_text("Open windows at this snapshot")).to_be_visible()
            # the newest snapshot is the batch recorded above (state 1024 bytes)
            expect(page.locator('[data-testid="stMetric"]').filter(has_text="State size")
                   ).to_contain_text("1.0 KiB")
            shot(page, "07-snapshots")
            go(page, "Windows")
            expect(page.get_by_text("Emitted panes (2)")).to_be_visible()
            shot(page, "08-windows")
            go(page, "Migrations")
            expect(page.get_by_text("Running (1)")).to_be_visible()
            shot(page, "09-migrations")

            # ---- an admin sees the Users page (an editor does not)
            expect(page.get_by_role("link", name="Users")).to_have_count(0)
            page.get_by_role("button", name="Sign out").click()
            page.get_by_label("User name", exact=True).fill("admin")
            page.get_by_label("Password", exact=True).fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("heading", name="Jobs").first.wait_for()
            go(page, "Users")
            expect(page.get_by_role("button", name="Add user")).to_be_visible()
            shot(page, "10-users")
        finally:
            browser.close()
