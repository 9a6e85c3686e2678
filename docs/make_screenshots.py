"""The viewer's screenshots in docs/screenshots/, taken in Debian's headless chromium.

Makes the two runs the viewer's tests use (a baseline and a current run with a regression, a fixed
test and a failing LLM judge; see tests/viewer/runs.py), serves them with `evalh view`'s server and
photographs the run history, a run's matrix filtered to failures, a cell's details with the judge's
prompt and reply, and the two runs compared.

    python docs/make_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns
from tests.viewer.browser import chromium, chromium_path
from tests.viewer.runs import write_runs

OUT = Path(__file__).resolve().parent / "screenshots"


def main() -> None:
    executable = chromium_path()
    if executable is None:
        sys.exit("Debian's chromium is needed: apt-get install chromium")
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = ViewerServer(GivenRuns([str(run) for run in write_runs(Path(tmp))]))
        server.start()
        try:
            with chromium(executable) as browser:
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.goto(server.url)
                page.wait_for_selector("body[data-ready=true]")
                page.screenshot(path=OUT / "history.png")
                page.click("a.run-link >> text=current.json")
                page.wait_for_selector("body[data-ready=true]")
                page.select_option("#status-filter", "failures")
                page.screenshot(path=OUT / "run.png")
                page.locator("#matrix td.cell.FAIL").last.click()
                page.click("details.judge summary")
                page.screenshot(path=OUT / "details.png")
                page.goto(server.url + "#/compare/baseline.json/current.json")
                page.wait_for_selector("body[data-ready=true]")
                page.screenshot(path=OUT / "compare.png")
        finally:
            server.close()
    print("\n".join(str(path) for path in sorted(OUT.glob("*.png"))))


if __name__ == "__main__":
    main()
