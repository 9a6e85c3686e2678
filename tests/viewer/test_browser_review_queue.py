"""The viewer as a review queue, in real headless Chromium (issue 28, from a new-user trial): the Status
choices "Not rated yet" and "Rated" kept in the URL; "Save and next" (and the keys p, f, s, n) walking
every result not rated yet in the matrix's order until none is left; the form naming who the rating is
recorded as, as text; the .html report and read-only viewers without any of it; the run list on a phone."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalh.reports.html import to_html
from evalh.store import open_store
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import StoredRuns
from tests.viewer.layout import PHONE, page_width, ready, sized_page

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

REVIEWER = "Rita <b>Reviewer</b> {{ 7*7 }}"
TODAYS_CHOICES = ["all", "failures", "fail", "error", "pass"]
Stored = tuple[str, dict[tuple[int, int], str]]  # a run's id in the store, its rows' ids by (test, prompt)


def _import(report: Path) -> Stored:
    with open_store() as store:
        run_id = store.import_report(json.loads(report.read_text(encoding="utf-8")), source=report.name).id
        ids = {(row["testIdx"], row["promptIdx"]): str(row["id"]) for row in store.iter_rows(run_id)}
    return run_id, ids


def _ratings(run_id: str) -> dict[str, dict[str, object]]:
    with open_store() as store:
        return {row_id: rating.to_json() for row_id, rating in store.ratings(run_id).items()}


@pytest.fixture
def stored(runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Stored:
    monkeypatch.setenv("EVALH_REVIEWER", REVIEWER)
    return _import(runs[1])


def _rate(stored: Stored, place: tuple[int, int], *, passed: bool, comment: str = "") -> str:
    """Rate the result at (test, prompt) in the store, as `evalh runs rate` does; its row id."""
    with open_store() as store:
        store.rate(stored[0], stored[1][place], passed=passed, comment=comment)
    return stored[1][place]


@contextmanager
def _viewer(*, read_only: bool = False) -> Iterator[ViewerServer]:
    """`evalh view` of the run store, started and closed."""
    with ViewerServer(StoredRuns(), read_only=read_only) as server:
        yield server


@pytest.fixture
def serve(stored: Stored) -> Iterator[ViewerServer]:
    with _viewer() as server:
        yield server


def _status_choices(page: Page) -> list[str]:
    values: list[str] = page.locator("#status-filter option").evaluate_all("os => os.map((o) => o.value)")
    return values


def _shown_results(page: Page) -> list[str]:
    """The results the matrix shows (not dimmed), in its order, as the URL's open= names them."""
    found: list[str] = page.evaluate("""() => [...document.querySelectorAll("#matrix tbody tr")].flatMap(
      (tr) => [...tr.querySelectorAll("td.cell")].map((td, c) =>
        td.classList.contains("dim") || td.classList.contains("none") ? null
          : (Number(tr.dataset.test) + 1) + ":" + (c + 1)).filter(Boolean))""")
    return found


def _open_param(page: Page) -> str | None:
    hash_ = urllib.parse.urlsplit(page.url).fragment
    query = hash_.split("?", 1)[1] if "?" in hash_ else ""
    return urllib.parse.parse_qs(query).get("open", [None])[0]


def _status(page: Page) -> str:
    return page.locator("#detail .rating-status").inner_text()


def test_save_and_next_with_the_keys_rates_every_result_not_rated_yet_in_order(
    page: Page, serve: ViewerServer, stored: Stored
) -> None:
    run_id, row_ids = stored
    skipped = _rate(stored, (1, 0), passed=False, comment="seen")  # rated before: the queue passes it by
    page.goto(serve.url + "#/run/" + run_id)
    ready(page)
    page.locator("#status-filter").select_option("unrated")
    assert "status=unrated" in page.url
    queue = _shown_results(page)
    assert "2:1" not in queue and len(queue) >= 3
    test, column = (int(part) - 1 for part in queue[0].split(":"))
    page.locator(f'#matrix tr[data-test="{test}"] td.cell').nth(column).click()
    page.wait_for_selector("#detail:not([hidden]) .rating-form")
    walked = [_open_param(page)]
    for step in range(len(queue)):
        page.keyboard.press("p" if step % 2 == 0 else "f")
        page.keyboard.press("n")
        if step < len(queue) - 1:
            page.wait_for_function(
                "(want) => location.hash.includes('open=' + want) && document.querySelector("
                "'#detail .rating-status').textContent.includes('next result not rated yet')",
                arg=queue[step + 1],
            )
            walked.append(_open_param(page))
        else:
            page.wait_for_selector("#detail .rating-status:text('No result is left to rate')")
    assert walked == queue  # across the columns of a line, then the lines
    ratings = _ratings(run_id)
    assert set(ratings) == set(row_ids.values())  # every result is rated now
    by_place = {f"{t + 1}:{p + 1}": row_id for (t, p), row_id in row_ids.items()}
    assert [ratings[by_place[place]]["pass"] for place in queue] == [i % 2 == 0 for i in range(len(queue))]
    assert ratings[skipped]["comment"] == "seen"  # the rating made before is left as it was
    assert page.locator("#matrix tbody tr").count() == 0  # nothing is left "Not rated yet"


def test_rated_and_not_rated_yet_choices_are_kept_in_the_url(
    page: Page, serve: ViewerServer, stored: Stored
) -> None:
    run_id, row_ids = stored
    _rate(stored, (0, 0), passed=True)
    page.goto(serve.url + "#/run/" + run_id + "?status=rated")
    ready(page)
    assert _status_choices(page) == [*TODAYS_CHOICES, "unrated", "rated"]
    assert page.locator("#status-filter").input_value() == "rated"
    assert _shown_results(page) == ["1:1"]
    page.locator("#status-filter").select_option("unrated")
    assert "status=unrated" in page.url
    shown = _shown_results(page)
    assert "1:1" not in shown and len(shown) == len(row_ids) - 1
    page.reload()
    ready(page)
    assert page.locator("#status-filter").input_value() == "unrated" and _shown_results(page) == shown


def test_the_form_names_the_reviewer_as_text_and_keys_leave_text_fields_alone(
    page: Page, serve: ViewerServer, stored: Stored
) -> None:
    run_id, _ = stored
    page.goto(serve.url + "#/run/" + run_id + "?open=1:1")
    ready(page)
    form = page.locator("#detail .rating-form")
    form.wait_for()
    assert form.locator(".rating-reviewer").inner_text() == (
        f"You rate as {REVIEWER} (EVALH_REVIEWER or your OS user)"
    )
    assert form.locator(".rating-reviewer b").count() == 1  # the name's own <b>, none from the name
    assert "p Pass · f Fail · s Save · n Save and next" in form.locator(".rating-keys").inner_text()
    comment = form.locator("textarea.rating-comment-input")
    comment.focus()
    page.keyboard.type("pfsn")
    assert comment.input_value() == "pfsn"
    assert form.locator("button.rate-pass").get_attribute("aria-pressed") == "false"
    assert form.locator("button.rating-save").is_disabled()
    page.locator("#detail .rating-keys").click()  # out of the field: the keys rate
    page.keyboard.press("f")
    assert form.locator("button.rate-fail").get_attribute("aria-pressed") == "true"
    page.keyboard.press("s")
    page.wait_for_selector("#detail .rating-status:text('Saved')")
    assert [(r["pass"], r["comment"]) for r in _ratings(run_id).values()] == [(False, "pfsn")]


def test_the_report_and_read_only_viewers_keep_todays_choices(
    page: Page, stored: Stored, tmp_path: Path
) -> None:
    run_id = stored[0]
    _rate(stored, (0, 0), passed=True)
    with open_store() as store:
        report = store.load_run(run_id)
    with _viewer(read_only=True) as server:
        page.goto(server.url + "#/run/" + run_id + "?status=unrated&open=1:1")
        ready(page)
        assert _status_choices(page) == TODAYS_CHOICES
        assert page.locator("#status-filter").input_value() == "all"  # a choice it lacks is ignored
        assert page.locator('meta[name="evalh-reviewer"], .rating-next, .rating-keys').count() == 0
    path = tmp_path / "rated.html"
    path.write_text(to_html(report), encoding="utf-8")
    page.goto(path.as_uri() + "#/?status=rated")
    ready(page)
    assert _status_choices(page) == TODAYS_CHOICES
    assert page.locator('meta[name="evalh-reviewer"], .rating-next').count() == 0


# Where each run's figures are drawn on the run list, and whether its run id is drawn on one line.
_RUN_CARDS = """() => [...document.querySelectorAll("#runs tbody tr")].map((tr) => {
  const inside = (td) => { const b = td.getBoundingClientRect();
    return b.width > 0 && b.left >= 0 && b.right <= document.documentElement.clientWidth; };
  const cells = [...tr.querySelectorAll("td.desc, td.num")];
  const link = tr.querySelector("a.run-link");
  return {text: cells.map((td) => td.innerText).join(" | "), allInside: cells.every(inside),
    idLines: new Set([...link.getClientRects()].map((r) => Math.round(r.top))).size, idInside: inside(link)};
})"""


def test_the_run_list_shows_each_runs_figures_on_a_phone(
    browser: Browser, runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_REVIEWER", REVIEWER)
    for report in runs:
        _import(report)
    with _viewer() as server, sized_page(browser, PHONE) as page:
        page.goto(server.url)
        ready(page)
        assert page_width(page) == {"scroll": 390, "viewport": 390}
        box = page.locator("#runs").locator("xpath=..")
        assert box.evaluate("(b) => b.scrollWidth <= b.clientWidth")  # no sideways scrolling
        cards = page.evaluate(_RUN_CARDS)
        assert len(cards) == 2
        for card in cards:
            assert card["allInside"] and card["idInside"] and card["idLines"] == 1, card
            assert "%" in card["text"], card  # the pass rate is among the figures in view
