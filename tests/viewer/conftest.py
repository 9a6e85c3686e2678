"""Fixtures of the viewer's tests: two real runs, the viewer serving them, and headless Chromium.

Browser tests skip when Chromium is missing, except in CI (``CI`` set), where they fail: .ci/run
installs Debian's chromium, so a missing browser there is a broken set-up, not a reason to skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns
from tests.viewer.browser import chromium, chromium_path
from tests.viewer.runs import write_repeated_run, write_runs

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(baseline.json, current.json); an HTML report beside each."""
    return write_runs(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="session")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run with repeats (tests.viewer.runs.write_repeated_run): its JSON report, its HTML beside it."""
    return write_repeated_run(tmp_path_factory.mktemp("repeated"))


@pytest.fixture
def viewer(runs: tuple[Path, Path]) -> Iterator[ViewerServer]:
    with ViewerServer(GivenRuns([str(run) for run in runs])) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Per module: while Playwright's sync API is open, its event loop runs in this thread, and a
    test that runs evalh in-process (asyncio.run) would fail."""
    executable = chromium_path()
    if executable is None:
        message = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message + "; .ci/run installs it, so CI must have it")
        pytest.skip(message)
    with chromium(executable) as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: problems.append(f"off-site request {r.url}") if _off_site(r.url) else None)
    yield page
    context.close()
    assert problems == []  # no script error, no CSP violation, no request anywhere else


def _off_site(url: str) -> bool:
    return not url.startswith(("http://127.0.0.1:", "file://", "data:"))
