"""The viewer on a phone (390 x 844) and "Why it failed", in real headless Chromium, measured in the page:
nothing wider than the screen outside a box that scrolls on its own, no ordinary word broken mid-word,
the toolbar wrapped, the details panel the screen's width and closable, and every failed or errored
assertion of a result named in its details."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalh.store import open_store
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import StoredRuns
from tests.viewer.layout import (
    DESKTOP,
    MARKUP,
    PHONE,
    broken_words,
    outside_viewport,
    page_width,
    ready,
    run_unnamed,
    sized_page,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@pytest.fixture(scope="module")
def unnamed_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("unnamed")
    run_unnamed(directory, "unnamed.html", "unnamed.json")
    return directory / "unnamed.html"


def _open_cell(page: Page, test: int) -> None:
    page.locator(f'#matrix tr[data-test="{test}"] td.cell').first.click()
    page.wait_for_selector("#detail:not([hidden])")


def _why_items(page: Page) -> list[str]:
    return page.locator("#detail .why-failed li").all_inner_texts()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390px", "1440px"])
def test_why_it_failed_names_every_failed_assertion(
    browser: Browser, unnamed_html: Path, viewport: dict[str, int]
) -> None:
    with sized_page(browser, viewport) as page:
        page.goto(unnamed_html.as_uri())
        ready(page)
        _open_cell(page, 0)  # two of three assertions fail, the second against a threshold
        why = page.locator("#detail section.detail-section").first
        assert why.locator("h3").inner_text() == "Why it failed"
        assert "2 of 3 assertions did not pass" in why.inner_text()
        first, second = _why_items(page)
        assert first.startswith("FAIL") and "contains Zebra" in first
        assert "Output does not contain 'Zebra'" in first
        assert "rouge-n" in second and "Something else entirely about quokkas" in second
        assert "score 0.22 vs threshold 0.9" in second
        assert "ROUGE-1 f 0.2222 is less than threshold 0.9" in second
        page.keyboard.press("Escape")
        _open_cell(page, 1)  # errored: its judge answered 404; a plain assertion failed besides
        why = page.locator("#detail section.detail-section").first
        assert why.locator("h3").inner_text() == "Why it errored"
        failed, errored = _why_items(page)
        assert failed.startswith("FAIL") and "Output does not contain 'Zebra'" in failed
        assert errored.startswith("ERROR") and "llm-rubric" in errored and "the grader" in errored
        assert "404" in errored


def test_the_details_panel_fits_a_phone(browser: Browser, unnamed_html: Path) -> None:
    with sized_page(browser, PHONE) as page:
        page.goto(unnamed_html.as_uri())
        ready(page)
        for test in (0, 1, 2, 3):
            _open_cell(page, test)
            panel = page.locator("#detail")
            box = panel.bounding_box()
            assert box is not None and box["x"] == 0 and box["width"] == PHONE["width"]
            # nothing in it cut off: it never scrolls sideways; its tables stack or scroll in their own box
            assert panel.evaluate("p => p.scrollWidth <= p.clientWidth"), f"test {test}"
            assert outside_viewport(page, "#detail") == [], f"test {test}"
            assert broken_words(page, "#detail") == [], f"test {test}"
            # the close button is on screen (its head stays in view) and closes it
            panel.evaluate("p => { p.scrollTop = p.scrollHeight; }")
            close = panel.locator("button.close")
            close_box = close.bounding_box()
            assert (
                close_box is not None and close_box["y"] >= 0 and close_box["x"] + close_box["width"] <= 390
            )
            close.click()
            assert panel.is_hidden()
        assert page.locator("img").count() == 0 and page.evaluate("document.body.dataset.pwned") is None
        assert MARKUP in page.locator("#matrix").inner_text()


def test_the_run_page_and_history_fit_a_phone(browser: Browser, tmp_path: Path) -> None:
    run_unnamed(tmp_path, "unnamed.json")
    with open_store() as store:
        report = json.loads((tmp_path / "unnamed.json").read_text(encoding="utf-8"))
        store.import_report(report, source=str(tmp_path / "unnamed.json"))
    server = ViewerServer(StoredRuns())
    server.start()
    try:
        with sized_page(browser, PHONE) as page:
            page.goto(server.url)
            ready(page)
            assert page_width(page) == {"scroll": 390, "viewport": 390}
            assert outside_viewport(page, "main") == []  # the runs table scrolls in its own box
            assert broken_words(page, "main") == []
            page.locator("a.run-link").first.click()
            ready(page)
            assert page_width(page) == {"scroll": 390, "viewport": 390}
            assert outside_viewport(page, "body") == []  # the matrix scrolls in its own box
            assert broken_words(page, "main") == []
            # the toolbar and the pager wrap onto more lines instead of running off the screen
            for bar in ("#filters", ".pager"):
                tops = page.locator(bar + " > *").evaluate_all(
                    "items => new Set(items.map((i) => Math.round(i.getBoundingClientRect().top))).size"
                )
                assert tops > 1, bar
    finally:
        server.close()
