"""Headless Chromium for the viewer's tests, the benchmark and the screenshots: Debian's `chromium`
driven by Playwright for Python (never Playwright's own browser download)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """Debian's chromium (``EVALH_CHROMIUM`` overrides), or None when it is not installed."""
    return os.environ.get("EVALH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def chromium(executable: str) -> Iterator[Browser]:
    """A headless Chromium, closed afterwards. Playwright starts it with a fresh temporary profile
    (its own --user-data-dir), removed when it closes."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
