"""Rating results in `evalh view` as a person does it, in real headless Chromium: rate a result, reload and
see it (the RATED mark, the rated verdict and counts, who rated it, the comment as text); clear it and the
graded verdict is back. And what no one else can do: a page of another origin (a second loopback server)
cannot rate, with a token it guesses or one it stole; the viewer's own page cannot write without the
token; `--read-only`, runs named on the command line and the HTML report offer no controls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalh.reports.html import to_html
from evalh.store import open_store
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns, StoredRuns
from tests.loopback import LoopbackServer, Reply

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Locator, Page

REVIEWER = "Rita <b>Reviewer</b>"
COMMENT = "<img src=x onerror=alert(1)> and {{ 7*7 }}: close enough"


@dataclass
class Stored:
    """The fixture's current run in the run store: its id and its rows' ids by (test, prompt)."""

    run_id: str
    row_ids: dict[tuple[int, int], str]

    def ratings(self) -> dict[str, Any]:
        with open_store() as store:
            return {row_id: rating.to_json() for row_id, rating in store.ratings(self.run_id).items()}


@pytest.fixture
def stored(runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Stored:
    monkeypatch.setenv("EVALH_REVIEWER", REVIEWER)
    with open_store() as store:
        run_id = store.import_report(json.loads(runs[1].read_text(encoding="utf-8")), source="c.json").id
        ids = {(row["testIdx"], row["promptIdx"]): str(row["id"]) for row in store.iter_rows(run_id)}
    return Stored(run_id, ids)


@pytest.fixture
def serve(stored: Stored) -> Iterator[ViewerServer]:
    with ViewerServer(StoredRuns()) as server:
        yield server


def _open_run(page: Page, server: ViewerServer, stored: Stored) -> None:
    page.goto(server.url + "#/run/" + stored.run_id)
    page.wait_for_selector("body[data-ready=true]")


def _cell(page: Page, test: int, column: int = 0) -> Locator:
    return page.locator(f'#matrix tr[data-test="{test}"] td.cell').nth(column)


def _open_cell(page: Page, test: int, column: int = 0) -> Locator:
    if page.locator("#detail").is_visible():  # a reload may reopen the result the URL holds
        page.keyboard.press("Escape")
    _cell(page, test, column).click()
    page.wait_for_selector("#detail:not([hidden])")
    return page.locator("#detail")


def _summary(page: Page) -> dict[str, str]:
    items = page.locator("#summary li").all_inner_texts()
    return dict(item.rsplit(" ", 1) for item in items if item.split(" ")[0] in ("Passed", "Failed"))


def test_rate_reload_see_it_then_clear_it(page: Page, serve: ViewerServer, stored: Stored) -> None:
    dialogs: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    _open_run(page, serve, stored)
    before = _summary(page)
    assert _cell(page, 0).get_attribute("class") == "cell FAIL"  # "greets Ada" fails: it wants Adeline
    detail = _open_cell(page, 0)
    section = detail.locator("section.rating-section")
    assert section.locator("h3").inner_text() == "Rating"
    assert section.locator(".rating-current").count() == 0  # not rated yet
    assert section.locator(".row-id code").inner_text() == stored.row_ids[(0, 0)]  # for `evalh runs rate`
    save = section.get_by_role("button", name="Save rating")
    assert save.is_disabled()  # a verdict first
    section.get_by_role("button", name="Pass").click()
    assert section.locator("button.rate-pass").get_attribute("aria-pressed") == "true"
    section.get_by_label("Score (0 to 1, optional)").fill("0.9")
    section.get_by_label("Comment (optional)").fill(COMMENT)
    save.click()
    page.wait_for_selector("#detail .rating-status:text('Saved')")
    # the details, the cell and the counts show the rating at once (fetched again)
    assert detail.locator(".detail-head .badge").first.inner_text() == "PASS"
    assert _cell(page, 0).get_attribute("class") == "cell PASS rated"
    after = _summary(page)
    assert (int(after["Passed"]), int(after["Failed"])) == (
        int(before["Passed"]) + 1,
        int(before["Failed"]) - 1,
    )
    rated = stored.ratings()[stored.row_ids[(0, 0)]]
    assert (rated["pass"], rated["score"], rated["comment"], rated["reviewer"]) == (
        True,
        0.9,
        COMMENT,
        REVIEWER,
    )

    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert _summary(page) == after
    mark = _cell(page, 0).locator(".rated-mark")
    assert mark.get_attribute("title") == f"rated pass by {REVIEWER}"
    assert _cell(page, 0).locator(".badge.PASS").count() == 1
    detail = _open_cell(page, 0)
    current = detail.locator(".rating-current")
    assert current.locator(".rating-who").inner_text() == f"rated pass by {REVIEWER}"
    assert "score 0.90" in current.inner_text()
    assert current.locator(".rating-comment").inner_text() == COMMENT  # text, never markup
    assert page.locator("#detail img, #matrix img").count() == 0 and dialogs == []
    # the form starts from the rating
    assert detail.locator("button.rate-pass").get_attribute("aria-pressed") == "true"
    assert detail.locator("textarea.rating-comment-input").input_value() == COMMENT

    detail.get_by_role("button", name="Clear rating").click()
    page.wait_for_selector("#detail .rating-status:text('Cleared')")
    assert _cell(page, 0).get_attribute("class") == "cell FAIL"
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert (
        _cell(page, 0).get_attribute("class") == "cell FAIL"
        and _cell(page, 0).locator(".rated-mark").count() == 0
    )
    assert _summary(page) == before
    detail = _open_cell(page, 0)
    assert (
        detail.locator(".rating-current").count() == 0
        and "Adeline" in detail.locator(".reason-text").inner_text()
    )
    assert stored.ratings() == {}


def test_fail_a_passing_result_with_the_keyboard(page: Page, serve: ViewerServer, stored: Stored) -> None:
    """The controls are real buttons with labels: Tab and Enter rate a result."""
    _open_run(page, serve, stored)
    _cell(page, 2).focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#detail:not([hidden])")
    page.locator("#detail button.rate-fail").focus()
    page.keyboard.press("Enter")
    page.locator("#detail textarea.rating-comment-input").focus()
    page.keyboard.type("Wrong tone.")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # Save rating, the next control
    page.wait_for_selector("#detail .rating-status:text('Saved')")
    assert _cell(page, 2).get_attribute("class") == "cell FAIL rated"
    rated = stored.ratings()[stored.row_ids[(2, 0)]]
    assert (rated["pass"], rated["score"], rated["comment"]) == (False, 0.0, "Wrong tone.")


def _evil_page(target: str, stolen: str) -> bytes:
    """A page of another origin that tries every way a page has to rate a result of the viewer."""
    script = """
const target = TARGET, stolen = STOLEN, body = '{"pass": true}';
const attempt = async (name, init) => {
  try { const r = await fetch(target, init); return name + " " + r.type + " " + r.status; }
  catch (e) { return name + " blocked"; }
};
(async () => {
  const json = (token) => ({"Content-Type": "application/json", "X-Evalh-Token": token});
  document.body.dataset.results = JSON.stringify([
    await attempt("guessed", {method: "POST", headers: json("guess"), body}),
    await attempt("stolen", {method: "POST", headers: json(stolen), body}),
    await attempt("simple", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body}),
    await attempt("simple-stolen", {method: "POST", mode: "no-cors",
      headers: {"Content-Type": "text/plain", "X-Evalh-Token": stolen}, body}),
    await attempt("delete", {method: "DELETE", headers: json(stolen)}),
  ]);
  document.getElementById("form").submit();
})();
""".replace("TARGET", json.dumps(target)).replace("STOLEN", json.dumps(stolen))
    form = (
        f'<form id="form" method="post" enctype="text/plain" action="{target}">'
        """<input type="hidden" name='{"pass": true, "x": "' value='"}'></form>"""
    )
    return f"<!DOCTYPE html><html><body>{form}<script>{script}</script></body></html>".encode()


def test_another_origin_cannot_rate(browser: Browser, serve: ViewerServer, stored: Stored) -> None:
    """A page on a second loopback server (another origin), with a token it guessed or one it stole: the
    browser asks first for the JSON and token writes (never granted), and the writes it sends without
    asking (a text/plain fetch, a form post) carry no token and a foreign Origin: nothing is stored."""
    kept = stored.row_ids[(1, 0)]
    with open_store() as store:  # a rating that must survive the DELETE
        store.rate(stored.run_id, kept, passed=False, comment="mine")
    target = f"{serve.url}api/runs/{stored.run_id}/rows/{stored.row_ids[(0, 0)]}/rating"
    evil = LoopbackServer()
    try:
        evil.route("GET", "/", lambda _request: Reply(body=_evil_page(target, serve.token),
                                                      headers={"Content-Type": "text/html"}))  # fmt: skip
        context = browser.new_context()
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(evil.url + "/")
        page.wait_for_url(target)  # the form post, the last attempt, has navigated
        answer = json.loads(page.locator("body").inner_text())
        context.close()
    finally:
        evil.close()
    assert answer["error"].startswith("writes come only from the viewer's own page")  # the form post: 403
    assert errors == []
    ratings = stored.ratings()
    assert list(ratings) == [kept] and (ratings[kept]["pass"], ratings[kept]["comment"]) == (False, "mine")


def test_the_evil_page_saw_every_attempt_fail(browser: Browser, serve: ViewerServer, stored: Stored) -> None:
    """What the other origin's page itself saw: every cross-origin write blocked or opaque."""
    target = f"{serve.url}api/runs/{stored.run_id}/rows/{stored.row_ids[(0, 0)]}/rating"
    evil = LoopbackServer()
    try:
        page_bytes = _evil_page(target, serve.token).replace(
            b'document.getElementById("form").submit();', b""
        )
        evil.route("GET", "/", lambda _request: Reply(body=page_bytes, headers={"Content-Type": "text/html"}))
        context = browser.new_context()
        page = context.new_page()
        page.goto(evil.url + "/")
        page.wait_for_selector("body[data-results]", state="attached")
        results = json.loads(page.locator("body").get_attribute("data-results") or "[]")
        context.close()
    finally:
        evil.close()
    # the JSON and token writes are asked first and never granted; the simple ones reach the server, are
    # refused (no token, a foreign Origin), and their answers are not even readable (the server's
    # Cross-Origin-Resource-Policy)
    assert results == [
        f"{name} blocked" for name in ("guessed", "stolen", "simple", "simple-stolen", "delete")
    ]
    assert stored.ratings() == {}


def test_the_viewers_own_page_needs_the_token(browser: Browser, serve: ViewerServer, stored: Stored) -> None:
    """Same origin, the right Origin and JSON, but no token (or a wrong one): 403, nothing stored."""
    context = browser.new_context()
    page = context.new_page()
    _open_run(page, serve, stored)
    url = f"/api/runs/{stored.run_id}/rows/{stored.row_ids[(0, 0)]}/rating"
    answers = page.evaluate(
        """async (url) => {
          const send = async (headers) => {
            const r = await fetch(url, {method: "POST",
              headers: {"Content-Type": "application/json", ...headers}, body: '{"pass": true}'});
            return [r.status, (await r.json()).error];
          };
          return [await send({}), await send({"X-Evalh-Token": "guess"})];
        }""",
        url,
    )
    context.close()
    for status, error in answers:
        assert status == 403 and error.startswith(
            "a write needs this viewer's token in the X-Evalh-Token header"
        )
    assert stored.ratings() == {}


def test_read_only_shows_ratings_and_no_controls(page: Page, stored: Stored) -> None:
    with open_store() as store:
        store.rate(stored.run_id, stored.row_ids[(0, 0)], passed=True, score=0.5, comment=COMMENT)
    server = ViewerServer(StoredRuns(), read_only=True)
    server.start()
    try:
        _open_run(page, server, stored)
        assert _cell(page, 0).get_attribute("class") == "cell PASS rated"
        detail = _open_cell(page, 0)
        assert detail.locator(".rating-current .rating-comment").inner_text() == COMMENT
        assert detail.locator(".rating-form, button.rate-pass, textarea").count() == 0
        assert detail.locator(".rating-note").count() == 0  # the page looks as it always did
        detail = _open_cell(page, 1)  # unrated: no Rating section at all
        assert detail.locator("section.rating-section").count() == 0
    finally:
        server.close()


def test_runs_named_on_the_command_line_say_how_to_rate(page: Page, runs: tuple[Path, Path]) -> None:
    server = ViewerServer(GivenRuns([str(run) for run in runs]))
    server.start()
    try:
        page.goto(server.url + "#/run/current.json")
        page.wait_for_selector("body[data-ready=true]")
        detail = _open_cell(page, 0)
        assert detail.locator("button.rate-pass, .rating-form").count() == 0
        assert "evalh runs import FILE" in detail.locator(".rating-note").inner_text()
    finally:
        server.close()


def test_the_html_report_of_a_rated_run_shows_it(page: Page, stored: Stored, tmp_path: Path) -> None:
    with open_store() as store:
        store.rate(stored.run_id, stored.row_ids[(0, 0)], passed=True, comment=COMMENT)
        report = store.load_run(stored.run_id)
    path = tmp_path / "rated.html"
    path.write_text(to_html(report), encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready=true]")
    assert _cell(page, 0).locator(".rated-mark").get_attribute("title") == f"rated pass by {REVIEWER}"
    detail = _open_cell(page, 0)
    assert detail.locator(".rating-current .rating-comment").inner_text() == COMMENT
    assert detail.locator(".rating-form, button.rate-pass, .rating-note").count() == 0
    assert page.locator("img").count() == 0
