"""The compare page as a person reads it, in real headless Chromium: every changed result shows both runs'
outputs and verdicts (side by side on a desktop, stacked on a phone), a click opens both results' details
(assertions, reasons, vars), and a run without a description is named by its config's file name."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalh.store import open_store
from evalh.viewer import compare
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns, StoredRuns
from tests.viewer.layout import (
    DESKTOP,
    PHONE,
    broken_words,
    outside_viewport,
    page_width,
    ready,
    run_unnamed,
    sized_page,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator


def _box(locator: Locator) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None
    return box


def _side_texts(row: Locator, side: str) -> tuple[str, str]:
    """(badge, output) of a pair's baseline or current result."""
    cell = row.locator("td.side-" + side)
    return cell.locator(".badge").inner_text(), cell.locator(".output").inner_text()


@contextmanager
def _serving(source: Any) -> Iterator[str]:
    with ViewerServer(source) as server:
        yield server.url


def test_every_pair_shows_both_outputs_side_by_side(browser: Browser, runs: tuple[Path, Path]) -> None:
    with _serving(GivenRuns([str(run) for run in runs])) as url, sized_page(browser, DESKTOP) as page:
        page.goto(url + "#/compare/baseline.json/current.json")
        ready(page)
        # nothing the page leaves out shows up as the word "null" (Element.append writes null as text)
        assert "null" not in page.locator("main, #app, body").first.inner_text()
        rows = page.locator("#pairs tbody tr")
        assert rows.count() == 4  # two regressions (greets Ada), two fixes (greets Bob), one per prompt
        expected = {"Regression": ("PASS", "FAIL"), "Fixed": ("FAIL", "PASS")}
        for index in range(rows.count()):
            row = rows.nth(index)
            kind = row.locator(".kind").inner_text()
            name = "Ada" if kind == "Regression" else "Bob"
            before, after = _side_texts(row, "baseline"), _side_texts(row, "current")
            assert (before[0], after[0]) == expected[kind]
            # the echo provider answers the prompt: both runs' outputs are shown, each in its own cell
            assert before[1] in (f"Greet {name}", f"Say hi to {name} ") or before[1].endswith(name)
            assert after[1] == before[1]
            left, right = _box(row.locator("td.side-baseline")), _box(row.locator("td.side-current"))
            assert left["y"] == right["y"] and left["x"] + left["width"] <= right["x"]  # side by side
        first = rows.first
        assert "Output does not contain 'Adeline'" in first.locator("td.side-current .reason").inner_text()


def test_a_pair_opens_both_results_details(browser: Browser, runs: tuple[Path, Path]) -> None:
    with _serving(GivenRuns([str(run) for run in runs])) as url, sized_page(browser, DESKTOP) as page:
        page.goto(url + "#/compare/baseline.json/current.json")
        ready(page)
        page.locator("#pairs tbody tr").first.click()  # a regression: greets Ada
        detail = page.locator("#detail")
        assert detail.is_visible()
        assert detail.locator("h2").inner_text() == "Regression greets Ada"
        assert detail.locator("table.vars").inner_text().split() == ["note", "name", "Ada"]
        baseline, current = (
            detail.locator(".pair-side.side-baseline"),
            detail.locator(".pair-side.side-current"),
        )
        assert baseline.locator("h3").first.inner_text() == "Baseline: PASS 1.00"
        assert baseline.locator("tr.assertion.PASS td.type").inner_text().split() == ["icontains", "ada"]
        assert "Output contains 'ada'" in baseline.locator("tr.assertion").inner_text()
        assert current.locator("h3").first.inner_text() == "Current: FAIL 0.00"
        why = current.locator(".why-failed li")
        assert why.count() == 1 and "icontains Adeline" in why.inner_text()
        assert "Output does not contain 'Adeline'" in current.locator("tr.assertion.FAIL").inner_text()
        assert current.locator(".output-text").inner_text() == "Greet Ada"
        page.keyboard.press("Escape")
        assert detail.is_hidden()
        fixed = page.locator("#pairs tbody tr.fixed").first
        fixed.focus()
        page.keyboard.press("Enter")  # the keyboard opens a pair too
        assert "Output does not contain 'Robert'" in baseline.locator(".why-failed").inner_text()
        assert current.locator(".why-failed").count() == 0  # it passes now


def test_stored_runs_compared_on_a_phone(browser: Browser, runs: tuple[Path, Path]) -> None:
    """From the run store (whose rows are read a second time for the changed results), on a phone: each
    pair's results stacked, baseline above current, and nothing wider than the screen."""
    with open_store() as store:
        for run in runs:
            store.import_report(json.loads(run.read_text(encoding="utf-8")), source=str(run))
    with _serving(StoredRuns()) as url, sized_page(browser, PHONE) as page:
        page.goto(url + "#/compare/latest~1/latest")
        ready(page)
        rows = page.locator("#pairs tbody tr")
        assert rows.count() == 4
        for index in range(4):
            row = rows.nth(index)
            assert _side_texts(row, "baseline")[1] and _side_texts(row, "current")[1]
            above, below = _box(row.locator("td.side-baseline")), _box(row.locator("td.side-current"))
            assert above["y"] + above["height"] <= below["y"] and below["x"] + below["width"] <= 390
        assert page_width(page) == {"scroll": 390, "viewport": 390}
        assert outside_viewport(page, "body") == []
        assert broken_words(page, "main") == []
        rows.first.click()
        assert _box(page.locator("#detail"))["width"] == 390
        assert page.locator("#detail .pair-side.side-current .why-failed li").count() == 1
        assert outside_viewport(page, "#detail") == [] and broken_words(page, "#detail") == []


def test_a_run_without_a_description_is_named_by_its_config(browser: Browser, tmp_path: Path) -> None:
    run_unnamed(tmp_path, record=True)  # recorded twice in the run store, from unnamed.yaml
    run_unnamed(tmp_path, "unnamed.json", record=True)
    with _serving(StoredRuns()) as url, sized_page(browser, DESKTOP) as page:
        page.goto(url)
        ready(page)
        assert page.locator("#runs td.desc").all_inner_texts() == ["unnamed.yaml", "unnamed.yaml"]
        page.locator("a.run-link").first.click()
        ready(page)
        assert page.locator("#summary h1").inner_text() == "unnamed.yaml"
        page.goto(url + "#/compare/latest~1/latest")
        ready(page)
        assert page.locator(".sides p").all_inner_texts()[0].startswith("unnamed.yaml · ")
        with _serving(GivenRuns([str(tmp_path / "unnamed.json")])) as given:  # a report file: its name
            page.goto(given)
            ready(page)
            assert page.locator("#runs td.desc").all_inner_texts() == ["unnamed.json"]
            page.locator("a.run-link").first.click()
            ready(page)
            assert page.locator("#summary h1").inner_text() == "unnamed.json"
        with urllib.request.urlopen(url + "api/runs") as answer:
            summaries = json.loads(answer.read())["runs"]
        assert [run["name"] for run in summaries] == ["unnamed.yaml", "unnamed.yaml"]


def test_past_the_first_changes_the_page_says_where_the_details_are(
    browser: Browser, runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compare, "MAX_DETAILED_CHANGES", 1)
    with _serving(GivenRuns([str(run) for run in runs])) as url, sized_page(browser, DESKTOP) as page:
        page.goto(url + "#/compare/baseline.json/current.json")
        ready(page)
        note = "Outputs and details of the first 1 of 4 changes; open either run for the others."
        assert page.locator("#detailed-note").inner_text() == note
        rows = page.locator("#pairs tbody tr")
        assert rows.first.locator(".output").count() == 2 and rows.nth(1).locator(".output").count() == 0
        rows.nth(1).click()
        assert (
            page.locator("#detail .pair-side .hint").all_inner_texts()
            == ["Open the run for this result's details."] * 2
        )
