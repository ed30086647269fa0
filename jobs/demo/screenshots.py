"""Screenshots of the running demo's UI for the README tour (``docs/screenshots/*.png``).

    python -m jobs.demo.screenshots --url http://127.0.0.1:8501 [--out docs/screenshots]

Signs in as the demo admin with a headless Chromium (Playwright), visits each page through the
sidebar (a page URL typed in would start a new, signed-out session) and saves what a visitor
sees in a 1440x900 window. The PNGs are reduced to a 256-colour palette: the UI is flat
colours and text, so they stay legible at a fraction of the size.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
PAGES = (
    ("Jobs", "jobs", None),
    ("Windows", "windows", "team_scores"),
    ("Late data", "late-data", "team_scores"),
    ("Recovery snapshots", "snapshots", "sensor_sessions"),
    ("Migrations", "migrations", None),
    ("Audit", "audit", None),
    ("Define / edit", "define", "team_scores"),
)
"""(sidebar title, file name, the job to pick in the page's "Job" box, if any)"""


FINISHED = """() => !document.querySelector('[data-testid="stStatusWidget"]')
    && !document.querySelector('[data-stale="true"]')"""
"""Streamlit has finished the run: no status widget ("Running..."), and no element of the
previous run still shown greyed out (``data-stale``) waiting to be replaced."""


def _settle(page: object, extra_ms: int = 2500) -> None:
    """Wait until Streamlit has finished the script run and shows nothing stale, twice
    (a live fragment may start its next run right after one ends)."""
    p = page  # typed loosely: playwright is only needed by this tool
    p.wait_for_timeout(500)  # type: ignore[attr-defined]
    p.wait_for_function(FINISHED, timeout=120_000)  # type: ignore[attr-defined]
    p.wait_for_timeout(extra_ms)  # type: ignore[attr-defined]
    p.wait_for_function(FINISHED, timeout=120_000)  # type: ignore[attr-defined]


def _choose_job(page: object, job: str) -> None:
    """Pick ``job`` in the page's "Job" select box (a Streamlit selectbox is a combobox)."""
    p = page
    box = p.locator('[data-testid="stSelectbox"]').filter(has_text="Job").first  # type: ignore[attr-defined]
    box.click()
    p.get_by_role("option", name=job, exact=True).click()  # type: ignore[attr-defined]
    p.evaluate("() => document.activeElement && document.activeElement.blur()")  # type: ignore[attr-defined]
    _settle(p)


def _shrink(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as img:
        small = img.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def take(url: str, out: Path, user: str, password: str,
         pages: Sequence[tuple[str, str, str | None]] = PAGES) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(url, wait_until="domcontentloaded")
            page.get_by_label("User name").fill(user)
            page.get_by_label("Password", exact=True).fill(password)
            page.get_by_role("button", name="Sign in").click()
            page.get_by_text("Signed in as").wait_for(timeout=60_000)
            for title, slug, job in pages:
                page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
                page.get_by_role("heading", name=title, exact=True).first.wait_for(timeout=60_000)
                _settle(page)
                if job is not None:
                    _choose_job(page, job)
                path = out / f"{slug}.png"
                page.wait_for_function(FINISHED, timeout=120_000)
                page.screenshot(path=str(path))
                _shrink(path)
                saved.append(path)
                print(f"{path} ({path.stat().st_size // 1024} KiB)", flush=True)
        finally:
            browser.close()
    return saved


def main(argv: Sequence[str] | None = None) -> int:
    from jobs.demo.launcher import DEMO_ADMIN

    parser = argparse.ArgumentParser(prog="python -m jobs.demo.screenshots",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the demo UI, e.g. http://127.0.0.1:8501")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--user", default=DEMO_ADMIN[0])
    parser.add_argument("--password", default=DEMO_ADMIN[1])
    parser.add_argument("--page", action="append", default=None,
                        help="only this page title (repeatable)")
    args = parser.parse_args(argv)
    pages = [p for p in PAGES if args.page is None or p[0] in args.page]
    take(args.url, args.out, args.user, args.password, pages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
