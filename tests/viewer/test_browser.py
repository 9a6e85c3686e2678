"""The viewer and the HTML report as a person uses them, in real headless Chromium: open a run, filter
to failures, search, open a cell's details, compare two runs and see the regression."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evalh.viewer.server import ViewerServer
from tests.viewer.runs import JUDGE_REASON, XSS

if TYPE_CHECKING:
    from playwright.sync_api import Page


def _ready(page: Page) -> None:
    page.wait_for_selector("body[data-ready=true]")


def _wait_for_lines(page: Page, count: int) -> None:
    """The search box redraws after a short pause; wait for the matrix to settle on ``count`` lines."""
    from playwright.sync_api import expect

    expect(page.locator("#matrix tbody tr")).to_have_count(count)


def _matrix_tests(page: Page) -> list[str]:
    return page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.test)")


def test_find_a_failing_reason_from_the_history_in_two_clicks(viewer: ViewerServer, page: Page) -> None:
    page.goto(viewer.url)
    _ready(page)
    assert page.locator("#runs tbody tr").count() == 2
    page.click("a.run-link >> text=current.json")  # click 1: the run
    _ready(page)
    assert page.locator("#summary").inner_text().count("Failed") == 1
    # the run says how many outputs came from the cache (made with --no-cache: none)
    assert (
        page.locator("#cache-note")
        .inner_text()
        .startswith("0 of 6 outputs from the cache; --no-cache called")
    )
    page.locator("#matrix td.cell.FAIL").first.click()  # click 2: a failing cell
    detail = page.locator("#detail")
    assert detail.is_visible()
    assert "Output does not contain 'Adeline'" in detail.locator(".reason-text").inner_text()


def test_filter_search_and_details_with_the_judge(viewer: ViewerServer, page: Page) -> None:
    page.goto(viewer.url + "#/run/current.json")
    _ready(page)
    assert _matrix_tests(page) == ["0", "1", "2", "3"]
    page.select_option("#status-filter", "failures")
    assert _matrix_tests(page) == ["0", "3"]
    assert page.locator("#matrix td.cell.PASS:not(.dim)").count() == 0
    page.fill("#search", "apologises")  # a judge's reason
    _wait_for_lines(page, 1)
    assert _matrix_tests(page) == ["3"]
    page.locator("#matrix td.cell").first.click()
    detail = page.locator("#detail")
    assert JUDGE_REASON in detail.locator("tr.assertion.FAIL").inner_text()
    assert detail.locator("tr.assertion td.num").first.inner_text() == "0.20"
    detail.locator("details.judge summary").click()
    assert "Politely explains the refund policy" in detail.locator(".judge-prompt").inner_text()
    assert "never apologises" in detail.locator(".judge-reply").inner_text()
    assert "Grading tokens 60" in detail.locator(".usage").inner_text()
    page.keyboard.press("Escape")
    assert not detail.is_visible()


def test_provider_prompt_filters_and_sort(viewer: ViewerServer, page: Page) -> None:
    page.goto(viewer.url + "#/run/current.json")
    _ready(page)
    assert page.locator("#matrix thead th.column .column-name").all_inner_texts() == [
        "[echo] greet",
        "[echo] hi",
    ]
    page.select_option("#prompt-filter", "hi")
    assert page.locator("#matrix thead th.column .column-name").all_inner_texts() == ["[echo] hi"]
    page.select_option("#sort", "score-asc")
    assert _matrix_tests(page) == ["0", "3", "1", "2"]  # 0.0, 0.2, then the passes in test order
    page.select_option("#sort", "score-desc")
    assert _matrix_tests(page)[-1] == "0"


def test_markup_in_data_stays_text(viewer: ViewerServer, page: Page) -> None:
    page.goto(viewer.url + "#/run/current.json")
    _ready(page)
    page.fill("#search", "onerror")
    _wait_for_lines(page, 1)
    assert XSS in page.locator("#matrix").inner_text()
    assert page.locator("#matrix img").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None


def test_compare_two_runs_shows_the_regression(viewer: ViewerServer, page: Page) -> None:
    page.goto(viewer.url)
    _ready(page)
    assert page.locator("#compare-selected").is_disabled()
    page.locator("input.pick").nth(0).check()
    page.locator("input.pick").nth(1).check()
    page.click("#compare-selected")
    _ready(page)
    assert page.locator("#count-regression b").inner_text() == "2"
    first = page.locator("#pairs tbody tr").first
    assert first.get_attribute("class") == "pair regression"
    assert "greets Ada" in first.inner_text() and "Adeline" in first.inner_text()
    assert first.evaluate("row => getComputedStyle(row.cells[0]).backgroundColor") != "rgba(0, 0, 0, 0)"
    page.select_option("#kind-filter", "regression")
    assert page.locator("#pairs tbody tr.regression").count() == 2
    assert page.locator("#pairs tbody tr:not(.regression)").count() == 0


def test_the_html_report_is_the_same_viewer(runs: tuple[Path, Path], page: Page) -> None:
    page.goto(runs[1].with_suffix(".html").as_uri())
    _ready(page)
    assert "Viewer fixture current" in page.locator("#summary h1").inner_text()
    page.select_option("#status-filter", "failures")
    assert _matrix_tests(page) == ["0", "3"]
    page.fill("#search", "adeline")
    _wait_for_lines(page, 1)
    page.locator("#matrix td.cell").first.click()
    assert "Adeline" in page.locator("#detail .reason-text").inner_text()
    assert page.locator("#matrix img").count() == 0


def test_pages_of_many_lines(page: Page, tmp_path: Path) -> None:
    from evalh.reports.writers import write_reports
    from tests.reports.sample import large_run

    (report,) = write_reports(large_run(n_tests=230, n_asserts=1), [tmp_path / "many.html"])
    page.goto(report.as_uri())
    _ready(page)
    assert page.locator("#matrix tbody tr").count() == 50
    assert page.locator(".pager .range").inner_text() == "Rows 1–50 of 230"
    page.click(".pager .next")
    assert _matrix_tests(page)[0] == "50"
    page.select_option(".pagesize", "250")
    assert page.locator("#matrix tbody tr").count() == 230
    page.select_option("#status-filter", "failures")
    assert page.locator("#matrix tbody tr").count() == 33  # one test in seven fails: 0, 7, ..., 224


def test_the_quickstart_in_the_viewer(page: Page) -> None:
    """The README's path: run the quickstart (recorded in the run store), open `evalh view`, read a
    result's assertions. ($EVALH_HOME is the test's own, see tests/conftest.py.)"""
    from evalh.viewer.sources import StoredRuns

    quickstart = Path(__file__).parents[2] / "examples" / "configs" / "quickstart.yaml"
    # A process of its own: Playwright's sync API keeps an event loop running in this thread.
    ran = subprocess.run(
        [sys.executable, "-m", "evalh", "run", str(quickstart)], capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    server = ViewerServer(StoredRuns())
    server.start()
    try:
        page.goto(server.url)
        _ready(page)
        page.locator("a.run-link").first.click()
        _ready(page)
        assert "Quickstart" in page.locator("#summary h1").inner_text()
        assert page.locator("#matrix tbody tr").count() == 4
        page.locator("#matrix td.cell").first.click()
        similar = page.locator("#detail tr.assertion", has_text="similar").first
        assert "greater than or equal to threshold 0.8" in similar.inner_text()
        assert similar.locator("td.num").nth(1).inner_text() == "0.8"
    finally:
        server.close()


def test_metric_filter_and_sort_by_the_metric(page: Page, tmp_path: Path) -> None:
    from evalh.reports.writers import write_reports
    from tests.reports.sample import sample_run

    (report,) = write_reports(sample_run(), [tmp_path / "sample.html"])
    page.goto(report.as_uri())
    _ready(page)
    assert _matrix_tests(page) == ["0", "1", "2"]
    page.select_option("#metric-filter", "accuracy")
    assert _matrix_tests(page) == ["0"]  # the only test with that named metric
    assert (
        page.locator("#matrix td.cell .metric").all_inner_texts()
        == ["accuracy 0.96"] * 2 + ["accuracy 0.71"] * 2
    )
    page.select_option("#metric-filter", "")
    page.select_option("#sort", "score-asc")
    assert _matrix_tests(page) == ["2", "1", "0"]  # mean scores 0.38, 0.69, 0.83: lowest first


def test_a_stored_run_comes_a_page_first_and_the_rest_after(page: Page, tmp_path: Path) -> None:
    """600 lines from the run store: the first lines are drawn, the rest arrive in the background, and
    the pager, filters and last page then cover all of them."""
    import json

    from evalh.reports.writers import write_reports
    from evalh.store import open_store
    from evalh.viewer.sources import StoredRuns
    from tests.reports.sample import large_run

    (report,) = write_reports(large_run(n_tests=600, n_asserts=1), [tmp_path / "many.json"])
    with open_store() as store:
        store.import_report(json.loads(report.read_text(encoding="utf-8")), source=str(report))
    server = ViewerServer(StoredRuns())
    server.start()
    try:
        page.goto(server.url + "#/run/latest")
        _ready(page)
        page.wait_for_selector("body[data-loaded=true]")
        assert page.locator(".pager .range").inner_text() == "Rows 1–50 of 600"
        page.select_option(".pagesize", "1000")
        assert _matrix_tests(page)[-1] == "599" and page.locator("#matrix tbody tr").count() == 600
        page.select_option("#status-filter", "failures")
        assert page.locator(".pager .range").inner_text() == "Rows 1–86 of 86"  # 0, 7, ..., 595
    finally:
        server.close()


def test_tool_calls_read_as_name_and_arguments(page: Page, tmp_path: Path) -> None:
    import dataclasses

    from evalh.reports.writers import write_reports
    from tests.reports.sample import sample_run

    run = sample_run()
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    ]
    message = {"role": "assistant", "content": "Checking.", "tool_calls": calls}
    first = dataclasses.replace(run.results[0], output=message)
    (report,) = write_reports(
        dataclasses.replace(run, results=(first, *run.results[1:])), [tmp_path / "t.html"]
    )
    page.goto(report.as_uri())
    _ready(page)
    cell = page.locator("#matrix td.cell").first
    assert cell.locator(".output").inner_text() == 'Checking.\nget_weather({"city": "Paris"})'
    cell.click()
    detail = page.locator("#detail")
    assert detail.locator(".output-text").inner_text() == 'Checking.\nget_weather({"city": "Paris"})'
    raw = detail.locator(".raw-output")
    raw.locator("summary").click()
    assert '"tool_calls"' in raw.locator(".output-raw").inner_text()  # the JSON stays one click away
    # an output that is not tool calls shows as before, without a raw copy
    detail.locator("button.close").click()
    page.locator("#matrix td.cell").nth(1).click()
    assert page.locator("#detail .raw-output").count() == 0
