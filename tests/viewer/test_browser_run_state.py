"""The run page answers, as a person uses it in real headless Chromium, in `evalh view` (a report file, and
a stored run read a page at a time) and in the HTML report (a file:// page): each column's pass rate and
mean score in its header with the prompt on hover; the filters, search, sort, page, hidden vars, the
"different outputs" mode, the metadata filter and the open result kept in the URL, so that a reload and a
link open the same view and Back and Forward step through it; a bad or stale value in the URL ignored."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns
from tests.viewer.runs import XSS, stored_run_page

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

DOC = "DOC-START a long document that nobody wants to read in every line of the matrix DOC-END"
_CONFIG = f"""\
description: Viewer state fixture
prompts:
  - id: short
    label: short
    raw: "Answer briefly: {{{{ question }}}}"
  - id: long
    label: long
    raw: "Answer in full, citing the document: {{{{ question }}}} {{{{ doc }}}}"
providers: [echo]
defaultTest:
  vars: {{doc: "{DOC}"}}
tests:
  - description: the same answer everywhere
    vars: {{question: Where is my order?}}
    output: It shipped.
    metadata: {{topic: shipping, tier: 1}}
    assert: [{{type: contains, value: shipped}}]
  - description: answers that differ
    vars: {{question: Refund?}}
    metadata: {{topic: billing, tier: 2}}
    assert: [{{type: contains, value: briefly}}]
  - description: markup in metadata
    vars: {{question: Hi}}
    metadata: {{topic: {XSS!r}, note: "{{{{ 7*7 }}}}"}}
    assert: [{{type: icontains, value: hi}}]
  - description: no metadata
    vars: {{question: Cancel?}}
    output: Sorry.
    assert: [{{type: contains, value: cancel}}]
"""


@pytest.fixture(autouse=True)
def _made_before_the_browser(repeated: Path) -> None:
    """The run with repeats is made by evalh in-process (an event loop) before this module's browser opens:
    while Playwright's sync API is open its own loop runs in this thread."""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's JSON report (its HTML report beside it), made by `evalh run` in a process of its own.
    The short prompt passes 3 of 4 tests, the long one 2; tests 1 and 4 answer the same in both columns."""
    directory = tmp_path_factory.mktemp("state")
    config = directory / "state.yaml"
    config.write_text(textwrap.dedent(_CONFIG), encoding="utf-8")
    out = directory / "state.json"
    outputs = ["-o", str(out), "-o", str(out.with_suffix(".html")), "--no-cache", "--no-write", "--no-table"]
    ran = subprocess.run(
        [sys.executable, "-m", "evalh", "run", str(config), *outputs], capture_output=True, text=True
    )
    assert ran.returncode == 1, ran.stderr  # some tests fail
    return out


@pytest.fixture(params=["served", "stored", "file"])
def base(request: pytest.FixtureRequest, report: Path) -> Iterator[str]:
    """The run page's URL: `evalh view` of the report file, of the run store holding it, or the HTML file."""
    if request.param == "file":
        yield report.with_suffix(".html").as_uri() + "#/"
    elif request.param == "stored":
        with stored_run_page(report, "state") as url:
            yield url
    else:
        server = ViewerServer(GivenRuns([str(report)]))
        server.start()
        try:
            yield server.url + "#/run/state.json"
        finally:
            server.close()


def _open(page: Page, url: str) -> None:
    """``url`` loaded anew (from another page: a URL that differs only in its hash would not load)."""
    page.goto("about:blank")
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("body[data-loaded=true]")


def _reload(page: Page) -> None:
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("body[data-loaded=true]")


def _tests(page: Page) -> list[str]:
    return page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.test)")


def _wait_for_tests(page: Page, tests: list[str]) -> None:
    """The matrix redraws after a short pause (the search box) or a history step: wait for it to settle."""
    page.wait_for_function(
        "want => JSON.stringify([...document.querySelectorAll('#matrix tbody tr')].map(r => r.dataset.test))"
        " === want",
        arg=json.dumps(tests, separators=(",", ":")),
    )


def _state(page: Page) -> dict[str, list[str]]:
    """The run page's state as its URL holds it (after the hash's "?")."""
    fragment = urllib.parse.urlsplit(page.url).fragment
    return urllib.parse.parse_qs(fragment.partition("?")[2])


def _value(page: Page, selector: str) -> str:
    return str(page.locator(selector).input_value())


def test_column_headers_show_the_pass_rate_the_mean_score_and_the_prompt(page: Page, base: str) -> None:
    _open(page, base)
    heads = page.locator("#matrix thead th.column")
    assert heads.locator(".column-name").all_inner_texts() == ["[echo] short", "[echo] long"]
    assert heads.locator(".column-pass").all_inner_texts() == ["3/4 passed (75.0%)", "2/4 passed (50.0%)"]
    assert heads.locator(".column-mean").all_inner_texts() == ["mean score 0.75", "mean score 0.50"]
    title = heads.nth(1).get_attribute("title")
    assert title == "Prompt: Answer in full, citing the document: {{ question }} {{ doc }}\nProvider: echo"
    page.select_option("#prompt-filter", "long")  # a column's figures are its own, whatever is shown
    assert heads.locator(".column-pass").all_inner_texts() == ["2/4 passed (50.0%)"]


def test_the_view_is_in_the_url_kept_on_reload_opened_by_a_link_and_stepped_back(
    page: Page, base: str, browser: Browser
) -> None:
    _open(page, base)
    page.select_option("#status-filter", "failures")
    assert _tests(page) == ["1", "3"]
    page.select_option("#sort", "score-asc")
    assert _tests(page) == ["3", "1"]  # mean scores 0 and 0.5
    page.fill("#search", "Cancel")
    _wait_for_tests(page, ["3"])
    page.locator("#matrix td.cell").nth(1).click()
    assert "Test 4" in page.locator("#detail h2").inner_text()
    page.wait_for_function("() => location.hash.includes('open=')")
    assert _state(page) == {"status": ["failures"], "q": ["Cancel"], "sort": ["score-asc"], "open": ["4:2"]}

    _reload(page)
    for view in (page, _linked(browser, page.url)):  # a reload, and the link opened anew elsewhere
        assert (_value(view, "#status-filter"), _value(view, "#sort")) == ("failures", "score-asc")
        assert _value(view, "#search") == "Cancel" and _tests(view) == ["3"]
        assert view.locator("#detail").is_visible()
        assert view.locator("#detail .column-label").inner_text() == "[echo] long"
        assert "Test 4" in view.locator("#detail h2").inner_text()

    page.keyboard.press("Escape")
    assert not page.locator("#detail").is_visible()
    page.wait_for_function("() => !location.hash.includes('open=')")
    page.go_back()  # the result open again
    page.wait_for_selector("#detail:not([hidden])")
    page.go_back()  # the search, no result open
    page.wait_for_selector("#detail[hidden]", state="attached")
    page.go_back()  # before the search: failures, by score
    _wait_for_tests(page, ["3", "1"])
    assert _value(page, "#search") == ""
    page.go_back()  # failures in test order
    _wait_for_tests(page, ["1", "3"])
    assert _value(page, "#sort") == "test"
    page.go_forward()
    _wait_for_tests(page, ["3", "1"])
    assert _value(page, "#sort") == "score-asc"


def _linked(browser: Browser, url: str) -> Page:
    """``url`` opened in a browser of its own (a fresh context: nothing shared with the first page)."""
    view = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    _open(view, url)
    return view


def test_bad_or_stale_values_in_the_url_are_ignored(page: Page, base: str) -> None:
    junk = (
        "status=bogus&provider=nope&prompt=gone&metric=none&sort=sideways&page=abc&size=7&mode=weird"
        "&meta=nokey&metaValue=x&hide=novar&open=99:9&q=%E0%A4%A"
    )
    _open(page, base + "?" + junk)
    assert _tests(page) == []  # the one good value: the search text (its broken escape read as text)
    _open(page, base + "?" + junk.replace("&q=%E0%A4%A", "").replace("status=bogus", "status=fail"))
    assert _tests(page) == ["1", "3"]  # the good status applied, the rest ignored
    assert _value(page, "#status-filter") == "fail" and _value(page, "#provider-filter") == ""
    assert page.locator(".pager .range").inner_text() == "Rows 1–2 of 2"
    assert not page.locator("#detail").is_visible()
    _open(page, base + "?q=" + urllib.parse.quote(XSS) + "&open=2:3&page=2")
    assert _value(page, "#search") == XSS and page.locator("#matrix img").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None


def test_a_long_var_hidden_stays_hidden(page: Page, base: str) -> None:
    _open(page, base)
    test_column = page.locator("#matrix tbody td.test").first
    assert DOC in test_column.inner_text()
    page.locator("#var-menu summary").click()
    page.locator("#var-menu input[data-var=doc]").uncheck()
    assert DOC not in test_column.inner_text() and "question: " in test_column.inner_text()
    assert page.locator("#var-menu summary").inner_text() == "Vars (1 hidden)"
    page.wait_for_function("() => location.hash.includes('hide=doc')")
    _reload(page)
    assert not any(DOC in text for text in page.locator("#matrix tbody td.test").all_inner_texts())
    assert not page.locator("#var-menu input[data-var=doc]").is_checked()
    assert page.locator("#var-menu input[data-var=question]").is_checked()
    page.go_back()
    page.wait_for_function(
        f"() => document.querySelector('#matrix tbody td.test').innerText.includes('{DOC}')"
    )
    assert page.locator("#var-menu input[data-var=doc]").is_checked()


def test_only_the_lines_whose_outputs_differ(page: Page, base: str) -> None:
    _open(page, base)
    page.check("#different-only")
    assert _tests(page) == ["1", "2"]  # tests 1 and 4 answer the same in both columns
    page.wait_for_function("() => location.hash.includes('mode=different')")
    _reload(page)
    assert page.locator("#different-only").is_checked() and _tests(page) == ["1", "2"]
    page.select_option("#status-filter", "failures")  # with the other filters
    assert _tests(page) == ["1"]
    page.select_option("#prompt-filter", "short")  # one column shown: nothing differs
    assert _tests(page) == []
    assert page.locator("#matrix caption.empty").inner_text() == "No rows match the filters."


def test_filter_by_a_metadata_key_and_value(page: Page, base: str) -> None:
    _open(page, base)
    assert page.locator("#meta-key option").all_inner_texts() == ["All", "note", "tier", "topic"]
    assert page.locator("#meta-value").is_disabled()
    page.select_option("#meta-key", "topic")
    assert _tests(page) == ["0", "1", "2"]  # any value: the tests that have the key
    values = page.locator("#meta-value option").all_inner_texts()
    assert values == ["Any value", XSS, "billing", "shipping"]  # markup as text
    page.select_option("#meta-value", "billing")
    assert _tests(page) == ["1"]
    page.wait_for_function("() => location.hash.includes('metaValue=billing')")
    assert _state(page) == {"meta": ["topic"], "metaValue": ["billing"]}
    page.select_option("#status-filter", "pass")  # with the other filters
    assert _tests(page) == ["1"]
    page.select_option("#status-filter", "error")
    assert _tests(page) == []
    _reload(page)
    assert (_value(page, "#meta-key"), _value(page, "#meta-value")) == ("topic", "billing")
    assert _value(page, "#status-filter") == "error" and _tests(page) == []
    page.select_option("#status-filter", "all")
    page.select_option("#meta-key", "note")
    assert page.locator("#meta-value option").all_inner_texts() == ["Any value", "{{ 7*7 }}"]  # not 49
    page.select_option("#meta-value", "{{ 7*7 }}")
    assert _tests(page) == ["2"]
    assert page.locator("#filters img").count() == 0 and page.evaluate("document.body.dataset.pwned") is None


@pytest.mark.parametrize("source", ["stored", "file"])
def test_a_far_page_and_result_open_once_their_lines_arrive(page: Page, tmp_path: Path, source: str) -> None:
    """600 lines: `evalh view` sends the first 250 at once and the rest after, so page 11 and the result of
    line 560 are not there at first; the page shows them when they come, in the report file at once."""
    from evalh.reports.writers import write_reports
    from tests.reports.sample import large_run

    written = write_reports(
        large_run(n_tests=600, n_asserts=1), [tmp_path / "many.json", tmp_path / "many.html"]
    )
    state = "?page=11&size=50&open=560:1"
    if source == "file":
        _open(page, written[1].as_uri() + "#/" + state)
        _check_the_far_page(page)
        return
    with stored_run_page(written[0], "many") as url:
        _open(page, url + state)
        _check_the_far_page(page)


def _check_the_far_page(page: Page) -> None:
    assert page.locator(".pager .range").inner_text() == "Rows 501–550 of 600"
    assert _tests(page)[0] == "500"
    page.wait_for_selector("#detail:not([hidden])")
    assert "Test 560" in page.locator("#detail h2").inner_text()
    assert _state(page)["page"] == ["11"] and _state(page)["open"] == ["560:1"]


def test_a_repeat_line_opens_from_the_url(page: Page, repeated: Path) -> None:
    """A repeat's line (`2.3`: test 2, repeat 3) and the repeats' own status, "flaky", from the URL."""
    _open(page, repeated.with_suffix(".html").as_uri() + "#/?status=flaky&open=2.3:2")
    assert _value(page, "#status-filter") == "flaky"
    assert set(_tests(page)) == {"1"}  # Bob's repeats: the flaky test
    assert "Test 2 repeat 3" in page.locator("#detail h2").inner_text()
    assert (
        page.locator("#detail .column-label").inner_text()
        == page.locator("#matrix thead th.column").nth(1).locator(".column-name").inner_text()
    )


def test_the_page_drawn_anew_keeps_the_view(page: Page, base: str) -> None:
    """EV.reload (after a change to the run, a rating say): the run read again, shown as its URL says."""
    _open(page, base + "?status=failures&open=2:2")
    page.evaluate("() => { window.before = document.getElementById('matrix'); }")
    page.evaluate("() => EV.reload()")
    page.wait_for_function("() => document.getElementById('matrix') !== window.before")
    page.wait_for_selector("body[data-ready=true]")
    assert _value(page, "#status-filter") == "failures" and _tests(page) == ["1", "3"]
    assert page.locator("#detail").is_visible() and "Test 2" in page.locator("#detail h2").inner_text()
