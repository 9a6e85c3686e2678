"""The review loop of docs/review.md end to end: `evalh run` records a run, a person rates results in
`evalh view` (real headless Chromium, the page's own buttons), and `evalh calibrate --labels latest` takes
those ratings as its labels. evalh runs as real processes here: while Playwright's sync API is open, its
event loop owns this thread, so evalh cannot run in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from evalh.store import open_store
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import StoredRuns

if TYPE_CHECKING:
    from playwright.sync_api import Page

REFERENCE = "abcdefghij"
# (output, the person's verdict): a levenshtein assertion against REFERENCE with threshold 4 passes the
# first six (0-4 edits) and fails the rest; the person disagrees on two of each side.
CASES: list[tuple[str, bool]] = [
    *[(REFERENCE[: 10 - d], True) for d in (0, 1, 1, 2, 3, 4, 5, 6, 6, 7, 8)],
    *[(REFERENCE[: 10 - d], False) for d in (2, 3, 5, 6, 7, 7, 8, 8, 9, 9, 10)],
]
BROWSER_RATED = 10  # this case is rated in the page; the others through the store (as `runs rate` does)


def _evalh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalh", *args], capture_output=True, text=True, env=os.environ.copy()
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    document = {
        "description": "review loop",
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "defaultTest": {"assert": [{"type": "levenshtein", "value": REFERENCE, "threshold": 4}]},
        "tests": [{"description": f"case {i}", "vars": {"answer": out}} for i, (out, _) in enumerate(CASES)],
    }
    path = tmp_path / "review.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def recorded(config: Path) -> dict[int, str]:
    """`evalh run` records the config; its row ids by test index, every case but one rated already."""
    run = _evalh("run", str(config), "--no-table")
    assert run.returncode in (0, 1), run.stderr
    with open_store() as store:
        ids = {int(row["testIdx"]): str(row["id"]) for row in store.iter_rows("latest")}
        for index, (_, verdict) in enumerate(CASES):
            if index != BROWSER_RATED:
                store.rate("latest", ids[index], passed=verdict, comment=f"case {index}")
    return ids


@pytest.fixture
def serve(recorded: dict[int, str]) -> Iterator[ViewerServer]:
    with ViewerServer(StoredRuns()) as server:
        yield server


def _calibrate(config: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "calibration.json"
    done = _evalh("calibrate", str(config), "--labels", "latest", "--bootstrap", "50", "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(out.read_text(encoding="utf-8")))


def test_a_rating_made_in_the_browser_is_a_calibration_label(
    page: Page, serve: ViewerServer, recorded: dict[int, str], config: Path, tmp_path: Path
) -> None:
    before = _calibrate(config, tmp_path)
    assert before["labels"]["rated"] == len(CASES) - 1 and before["labels"]["unlabelled"] == 1

    page.goto(serve.url + "#/run/latest")
    page.wait_for_selector("body[data-ready=true]")
    cell = page.locator(f'#matrix tr[data-test="{BROWSER_RATED}"] td.cell').first
    assert cell.get_attribute("class") == "cell FAIL"  # 8 edits from the reference: graded a failure
    cell.click()
    page.wait_for_selector("#detail:not([hidden])")
    section = page.locator("#detail section.rating-section")
    section.get_by_role("button", name="Pass").click()  # the person says it is good enough
    section.get_by_label("Comment (optional)").fill("a short answer is fine here")
    section.get_by_role("button", name="Save rating").click()
    page.wait_for_selector("#detail .rating-status:text('Saved')")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator(f'#matrix tr[data-test="{BROWSER_RATED}"] td.cell').first.get_attribute("class") == (
        "cell PASS rated"
    )

    after = _calibrate(config, tmp_path)
    assert after["labels"]["rated"] == len(CASES) and after["labels"]["unlabelled"] == 0
    (lev,) = after["calibrations"]
    people = [verdict for _, verdict in CASES]
    assert lev["labels"] == {"pass": people.count(True), "fail": people.count(False)}
    # at the config's threshold the browser's pass is a false fail: graded FAIL, labelled pass
    (lev_before,) = before["calibrations"]
    assert lev["atCurrentThreshold"]["falseFail"] == lev_before["atCurrentThreshold"]["falseFail"] + 1
