"""A run with repeats as a person reads it, in real headless Chromium, in `evalh view` (a stored run, read
a page at a time) and in the HTML report: each test's pass rate with its interval in its first line's
cells, a FLAKY badge, each column's figures under its header, and the "Flaky tests" filter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalh.reports.viewdata import run_view
from tests.viewer.runs import REPEATED_PASSES, REPEATS, stored_run_page

if TYPE_CHECKING:
    from playwright.sync_api import Page


@pytest.fixture(autouse=True)
def _runs_before_the_browser(runs: tuple[Path, Path], repeated: Path) -> None:
    """Both runs are made (by evalh in-process, which runs an event loop) before this module's browser
    opens: while Playwright's sync API is open its own loop runs in this thread."""


@pytest.fixture
def stored_viewer(repeated: Path) -> Iterator[str]:
    """`evalh view` of the run store holding the repeated run: the URL of its page."""
    with stored_run_page(repeated, "r") as url:
        yield url


def _expected(repeated: Path) -> dict[str, list[str]]:
    """Each test's figures' text per column, and each column's, as the data holds them."""
    figures = run_view(json.loads(repeated.read_text(encoding="utf-8")), "r")["repeats"]
    tests = {test: [cell["text"] for cell in cells] for test, cells in figures["tests"].items()}
    return {**tests, "columns": [column["text"] for column in figures["columns"]]}


def _check_the_figures_badge_and_filter(page: Page, expected: dict[str, list[str]]) -> None:
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("body[data-loaded=true]")
    heads = page.locator("#matrix thead th.column .column-figures").all_inner_texts()
    assert heads == expected["columns"]
    assert (
        page.locator("#matrix thead th.column .repeat-flaky").all_inner_texts() == ["1 of 3 tests flaky"] * 2
    )
    assert page.locator("#matrix tbody tr").count() == 3 * REPEATS
    firsts = page.locator("#matrix tbody tr.repeat-first")
    assert firsts.evaluate_all("rows => rows.map(r => r.dataset.test)") == ["0", "1", "2"]
    for test in REPEATED_PASSES:  # a test's figures once, in its first line's cells
        line = firsts.nth(test)
        assert line.locator(".test-figures .repeat-rate").all_inner_texts() == expected[str(test)]
    flaky = [str(t) for t, passes in REPEATED_PASSES.items() if 0 < passes < REPEATS]
    badges = page.locator("#matrix tbody .badge.FLAKY")
    assert (
        badges.count() == 2
        and badges.evaluate_all("b => b.map(x => x.closest('tr').dataset.test)") == flaky * 2
    )
    page.select_option("#status-filter", "flaky")
    tests = page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.test)")
    assert tests == flaky * REPEATS  # every repeat of the flaky test, nothing else
    assert page.locator("#matrix td.cell.dim").count() == 0
    page.select_option("#status-filter", "pass")
    assert page.locator("#matrix tbody tr").count() == REPEATS + REPEATS // 2  # Ada's and half of Bob's


def test_repeats_in_the_viewer(stored_viewer: str, repeated: Path, page: Page) -> None:
    page.goto(stored_viewer)
    _check_the_figures_badge_and_filter(page, _expected(repeated))


def test_repeats_in_the_html_report(repeated: Path, page: Page) -> None:
    page.goto(repeated.with_suffix(".html").as_uri())
    _check_the_figures_badge_and_filter(page, _expected(repeated))


def test_no_figures_for_a_run_without_repeats(runs: tuple[Path, Path], page: Page) -> None:
    page.goto(runs[1].with_suffix(".html").as_uri())
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("#status-filter option").all_inner_texts() == [
        "All", "Failures (fail + error)", "Failed", "Errors", "Passed"
    ]  # fmt: skip
    assert page.locator(".repeat-figures, .badge.FLAKY, tr.repeat-first").count() == 0
