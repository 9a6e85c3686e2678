"""The viewer's screenshots in docs/screenshots/, taken in Debian's headless chromium at 1440 px (a
desktop) and 390 px (a phone) wide.

Makes the two runs the viewer's tests use (a baseline and a current run with a regression, a fixed
test and a failing LLM judge; see tests/viewer/runs.py), stores them in a throw-away run store, rates
two results of the current run as a reviewer would, serves the store with `evalh view`'s server and
photographs, at each width: the run history, the current run's matrix (column figures, the RATED
marks), a rated result's details, and the two runs compared with a result's details open.

    python docs/make_screenshots.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

OUT = Path(__file__).resolve().parent / "screenshots"
WIDTHS = {1440: 900, 390: 844}  # viewport width: height


def _store_and_rate(runs: tuple[Path, Path]) -> tuple[str, str]:
    """Both runs in the run store ($EVALH_HOME), two of the current run's results rated; their ids."""
    from evalh.store import open_store

    with open_store() as store:
        ids = [store.import_report(json.loads(run.read_text("utf-8")), source=run.name).id for run in runs]
        rows = {row["description"]: row for row in store.iter_rows(ids[1]) if row["promptIdx"] == 0}
        store.rate(ids[1], rows["greets Ada"]["id"], passed=True, comment="Adeline is her full name: a pass.")
        store.rate(
            ids[1],
            rows["polite refund answer"]["id"],
            passed=False,
            score=0.1,
            comment="Rude; agree with the judge.",
        )
    return ids[0], ids[1]


def _shoot(page: Page, url: str, baseline: str, current: str, width: int) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    page.screenshot(path=OUT / f"history-{width}.png")
    page.goto(url + "#/run/" + current)
    page.wait_for_selector("body[data-ready=true]")
    page.screenshot(path=OUT / f"run-{width}.png", full_page=width < 1000)
    page.locator("#matrix td.cell.rated").first.click()
    page.wait_for_selector("#detail:not([hidden])")
    page.screenshot(path=OUT / f"details-{width}.png")
    page.goto(url + f"#/compare/{baseline}/{current}")
    page.wait_for_selector("body[data-ready=true]")
    page.screenshot(path=OUT / f"compare-{width}.png", full_page=width < 1000)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from evalh.viewer.server import ViewerServer
    from evalh.viewer.sources import StoredRuns
    from tests.viewer.browser import chromium, chromium_path
    from tests.viewer.runs import write_runs

    executable = chromium_path()
    if executable is None:
        sys.exit("Debian's chromium is needed: apt-get install chromium")
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["EVALH_HOME"] = str(Path(tmp) / "home")
        os.environ["EVALH_REVIEWER"] = "Rita (support lead)"
        runs = write_runs(Path(tmp))
        baseline, current = _store_and_rate(runs)
        with ViewerServer(StoredRuns()) as server, chromium(executable) as browser:
            for width, height in WIDTHS.items():
                context = browser.new_context(viewport={"width": width, "height": height})
                _shoot(context.new_page(), server.url, baseline, current, width)
                context.close()
    print("\n".join(str(path) for path in sorted(OUT.glob("*.png"))))


if __name__ == "__main__":
    main()
