"""The "Why it failed" of a result a person rated fail, in real headless Chromium: the manual-result
reason once (it was shown twice: as the row's own reason and as the human assertion's) and the person's
comment, as text, under the human assertion."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalh.store import open_store
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import StoredRuns

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

COMMENT = "<img src=x onerror=alert(1)> cites the 2019 policy {{ 7*7 }}"
MANUAL = "Manual result (overrides all other grading results)"


@pytest.fixture
def served(runs: tuple[Path, Path]) -> Iterator[tuple[str, str]]:
    """(viewer URL, run id) of the current run imported into the store, its first passing row rated fail."""
    with open_store() as store:
        run_id = store.import_report(json.loads(runs[1].read_text(encoding="utf-8")), source="c.json").id
        rows = list(store.iter_rows(run_id))
        passing = next(row for row in rows if row["success"])
        store.rate(run_id, str(passing["id"]), passed=False, comment=COMMENT)
        test, prompt = passing["testIdx"], passing["promptIdx"]
    with ViewerServer(StoredRuns()) as server:
        yield f"{server.url}#/run/{run_id}?open={test + 1}:{prompt + 1}", run_id


def _why(page: Page) -> Locator:
    page.wait_for_selector("#detail:not([hidden])")
    return page.locator("#detail .reason-text")


def test_a_rated_fail_says_its_reason_once_and_shows_the_comment(page: Page, served: tuple[str, str]) -> None:
    url, _ = served
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    why = _why(page)
    assert why.locator(".why-own").count() == 0  # the reason is the human assertion's, not said again
    (item,) = why.locator(".why-item").all()
    assert item.locator(".why-type").inner_text() == "human"
    assert item.locator(".why-reason").first.inner_text() == MANUAL
    assert item.locator(".why-comment").inner_text() == COMMENT  # as text, never markup
    assert page.locator("#detail img").count() == 0
    assert why.inner_text().count(MANUAL) == 1
