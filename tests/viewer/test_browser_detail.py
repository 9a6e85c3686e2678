"""The detail panel of a cell holds its sections and nothing else: a passing cell (no "Why it failed"
section) and a cell without vars used to show a stray "null" line, in the viewer and the HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalh.model import Status
from evalh.reports.writers import write_reports
from tests.reports.sample import sample_run

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_a_passing_cell_shows_no_stray_text(page: Page, tmp_path: Path) -> None:
    run = sample_run()
    passing = [i for i, row in enumerate(run.results) if row.status is Status.PASS]
    assert passing  # the sample has a passing row, whose panel has no reason section
    (report,) = write_reports(run, [tmp_path / "t.html"])
    page.goto(report.as_uri())
    page.wait_for_selector("body[data-ready=true]")
    page.locator("#matrix td.cell.PASS").first.click()
    detail = page.locator("#detail")
    stray = detail.evaluate(
        "panel => [...panel.childNodes].filter((n) => n.nodeType !== 1).map((n) => n.textContent)"
    )
    assert stray == []
    assert detail.locator("section.detail-section h3").first.inner_text() == "Assertions"
