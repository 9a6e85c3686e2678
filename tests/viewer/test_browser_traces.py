"""A traced result as a person reads it, in real headless Chromium, in the HTML report and in `evalh view`
(a stored run, read a page at a time): the detail panel's timeline, one bar per span nested under its
parent, the error span marked, the tool span's name and arguments, a span's attributes on click, the spans
downloaded as JSON; the agent's text stays text. A run without traces gets the page it always got."""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalh.model import RowTrace, RunRecord
from evalh.reports.codec import trace_to_json
from evalh.reports.html import SCRIPTS, TRACE_SCRIPT, asset, script_bundle
from evalh.reports.writers import write_reports
from tests.reports.sample import sample_run
from tests.reports.traced import agent_trace, traced_run
from tests.viewer.runs import XSS, stored_run_page

if TYPE_CHECKING:
    from playwright.sync_api import Page

TRACE = agent_trace({"note": XSS, "gen_ai.usage.output_tokens": 7})


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The traced run's JSON report, its HTML report beside it."""
    directory = tmp_path_factory.mktemp("traced")
    run = traced_run(TRACE)
    write_reports(run, [directory / "traced.json", directory / "traced.html"])
    return directory / "traced.json"


@pytest.fixture
def stored_viewer(traced: Path) -> Iterator[str]:
    """`evalh view` of the run store holding the traced run: the URL of its page."""
    with stored_run_page(traced, "t") as url:
        yield url


def _open_cell(page: Page, index: int) -> None:
    page.wait_for_selector("body[data-ready=true]")
    page.locator("#matrix td.cell").nth(index).click()
    page.wait_for_selector("#detail:not([hidden])")
    # opening saves ?open= in the URL; the hashchange that follows is handled in a later task: let it
    # run before the test clicks inside the detail (a click on a span drawn before it can be lost)
    page.wait_for_function("() => location.hash.includes('open=')")
    page.evaluate("() => new Promise(done => setTimeout(() => requestAnimationFrame(() => done()), 0))")


def _check_the_timeline(page: Page) -> None:
    section = page.locator("#detail section.trace-section")
    assert section.count() == 1
    sections = page.locator("#detail section.detail-section h3").all_inner_texts()
    assert sections[sections.index("Output") + 1] == "Trace"  # right under the output
    head = section.locator(".trace-head").inner_text()
    assert "4 spans · 1 error · trace 0af7651916cd43dd8448eb211c80319c · 250.5 ms in all" in head
    spans = section.locator("details.span")
    names = spans.locator(".span-name").all_inner_texts()
    assert names == ["agent.run", "chat gpt-4o-mini", "tool.call", "cleanup"]  # parent, children by start
    indents = spans.locator(".span-label").evaluate_all("ls => ls.map(l => l.style.paddingLeft)")
    assert indents == ["0em", "1em", "1em", "1em"]
    assert spans.locator(".span-duration").all_inner_texts() == [
        "250.5 ms",
        "118.0 ms",
        "115.0 ms",
        "not ended",
    ]
    bars = spans.locator(".span-bar").evaluate_all(
        "bs => bs.map(b => [parseFloat(b.style.left), parseFloat(b.style.width)])"
    )
    assert bars[0] == [0, 100]  # the root spans the whole trace
    assert bars[2] == [round(100 * 125 / 250.5, 3), round(100 * 115 / 250.5, 3)]
    assert bars[3] == [round(100 * 245 / 250.5, 3), round(100 * 5.5 / 250.5, 3)]  # not ended: to the end
    tool = spans.nth(2)
    assert tool.get_attribute("class") == "span ERROR tool"
    assert tool.locator(".badge.ERROR").count() == 1 and spans.locator(".badge.ERROR").count() == 1
    assert tool.locator(".span-tool").inner_text() == 'get_weather { "city": "Paris" }'
    assert "weather service timed out" in (tool.locator("summary").get_attribute("title") or "")
    assert not tool.locator(".span-attributes").is_visible()
    tool.locator("summary").click()
    from playwright.sync_api import expect  # playwright is only there with the browser extras

    expect(tool.locator(".span-attributes")).to_be_visible()  # made by the toggle event, a task later
    attributes = dict(
        zip(
            tool.locator(".span-attributes th").all_inner_texts(),
            tool.locator(".span-attributes td").all_inner_texts(),
            strict=True,
        )
    )
    assert attributes["tool.name"] == "get_weather" and attributes["retries"] == "[1,2]"
    assert attributes["note"] == XSS  # the agent's text, as text
    assert json.loads(tool.locator("pre.tool-arguments").inner_text()) == {"city": "Paris"}
    assert "Status\tERROR: weather service timed out" in tool.locator(".span-facts").inner_text()
    assert page.locator("#detail img").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None
    link = section.locator("a.trace-download")
    assert link.get_attribute("download") == "trace-0af7651916cd43dd8448eb211c80319c.json"
    href = link.get_attribute("href") or ""
    assert href.startswith("data:application/json;charset=utf-8,")
    assert json.loads(urllib.parse.unquote(href.split(",", 1)[1])) == trace_to_json(TRACE)


def test_the_html_report_draws_a_traced_results_timeline(traced: Path, page: Page) -> None:
    page.goto(traced.with_suffix(".html").as_uri())
    _open_cell(page, 0)
    _check_the_timeline(page)
    with page.expect_download() as download:
        page.locator("a.trace-download").click()
    saved = download.value.path()
    assert json.loads(Path(saved).read_text(encoding="utf-8")) == trace_to_json(TRACE)
    page.click("#detail button.close")
    _open_cell(page, 1)  # an untraced result: no trace section
    assert page.locator("#detail section.trace-section").count() == 0


def test_evalh_view_draws_a_stored_traced_result(stored_viewer: str, page: Page) -> None:
    page.goto(stored_viewer)
    _open_cell(page, 0)
    _check_the_timeline(page)


def _scripts_of(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text.split("<script>", 1)[1].split("</script>", 1)[0]


def _html_of(run: RunRecord, path: Path) -> Path:
    write_reports(run, [path])
    return path


def test_only_a_run_with_traces_gets_the_timeline(tmp_path: Path) -> None:
    plain = _scripts_of(_html_of(sample_run(), tmp_path / "plain.html"))
    assert plain == script_bundle(repeats=False) == "\n".join(asset(name) for name in SCRIPTS)
    assert "traceTimeline" not in plain
    with_traces = _scripts_of(_html_of(traced_run(), tmp_path / "traced.html"))
    assert with_traces == script_bundle(repeats=False, traces=True)
    assert asset(TRACE_SCRIPT) in with_traces


def test_a_long_trace_draws_its_spans_a_batch_at_a_time(tmp_path: Path, page: Page) -> None:
    """A trace of thousands of spans opens at once: the first 500 are drawn, "Show more" draws the rest."""
    root = agent_trace().spans[0]
    steps = [
        dataclasses.replace(
            root,
            span_id=f"{index:016x}",
            name=f"step {index}",
            parent_span_id=root.span_id,
            start_ns=root.start_ns + index * 1000,
            end_ns=root.start_ns + index * 1000 + 500,
        )
        for index in range(1, 502)
    ]
    write_reports(traced_run(RowTrace(TRACE.trace_id, (root, *steps))), [tmp_path / "long.html"])
    page.goto((tmp_path / "long.html").as_uri())
    _open_cell(page, 0)
    assert page.locator("details.span").count() == 500
    more = page.locator("button.trace-more")
    assert more.inner_text() == "Show 2 more of 2 spans left"
    more.click()
    from playwright.sync_api import expect

    expect(page.locator("details.span")).to_have_count(502)  # waits for the click's drawing
    assert more.is_hidden()
    assert page.locator("details.span .span-name").last.inner_text() == "step 501"
