"""First paint of a 10,000-row run in the viewer and in the HTML report, in headless Chromium.

Builds a suite of N tests (default 10,000) with recorded outputs and 3 assertions each (one test in
seven fails), runs it with ``evalh run -o run.json -o run.html``, then opens the run in Debian's
headless chromium (Playwright) twice: served by ``evalh view``'s server, and as the self-contained
HTML file. The figure is the time from the start of navigation to the frame after the matrix's first
page is drawn (the app's ``evalh-matrix-drawn`` performance mark): fetching or reading the data,
parsing it, filtering and drawing included. The first load (a cold browser and file cache) is shown
apart from the median of the next 5, each in a fresh browser context.

    python benchmarks/bench_viewer.py [--tests 10000] [--repeat 1]

``--repeat N`` runs each test N times (``--tests 1000 --repeat 10``: 10,000 rows whose data also holds
each test's figures over its repeats, drawn by the viewer's repeats part).

Target on a 2-core machine: well under 1,000 ms for both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns
from tests.viewer.browser import chromium, chromium_path

TARGET_MS = 1000.0
LOADS = 5


def write_suite(directory: Path, tests: int) -> Path:
    rows = []
    for i in range(tests):
        rows.append(
            {
                "description": f"order {i}",
                "vars": {"order": i, "question": f"Where is order {i}?"},
                "output": f"Order {i} has {'shipped' if i % 7 else 'been lost'}; it left the warehouse.",
                "assert": [
                    {"type": "icontains", "value": f"order {i}"},
                    {"type": "contains", "value": "shipped"},
                    {"type": "regex", "value": r"warehouse\.$"},
                ],
            }
        )
    (directory / "tests.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    config = directory / "bench.yaml"
    config.write_text("description: viewer bench\ntests: file://tests.jsonl\n", encoding="utf-8")
    return config


def first_paint_ms(browser: object, url: str) -> tuple[float, float]:
    """(the first load's figure, the median of the next LOADS); each load in a fresh context."""
    samples = []
    for _ in range(LOADS + 1):
        context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("() => performance.getEntriesByName('evalh-matrix-drawn').length > 0")
        samples.append(page.evaluate("() => performance.getEntriesByName('evalh-matrix-drawn')[0].startTime"))
        rows = page.locator("#matrix tbody tr").count()
        context.close()
        if rows == 0:
            sys.exit(f"{url}: the matrix is empty")
    return samples[0], float(statistics.median(samples[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    executable = chromium_path()
    if executable is None:
        sys.exit("Debian's chromium is needed: apt-get install chromium")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = write_suite(directory, args.tests)
        report, page = directory / "run.json", directory / "run.html"
        command = [sys.executable, "-m", "evalh", "run", str(config), "--no-table", "--no-progress-bar"]
        outputs = ["--repeat", str(args.repeat), "-o", str(report), "-o", str(page)]
        completed = subprocess.run([*command, "--no-cache", *outputs], text=True)
        if completed.returncode not in (0, 1):
            sys.exit(f"evalh run failed with exit {completed.returncode}")
        started = time.perf_counter()
        server = ViewerServer(GivenRuns([str(report)]))
        load_s = time.perf_counter() - started
        server.start()
        try:
            with chromium(executable) as browser:
                served = first_paint_ms(browser, server.url + "#/run/run.json")
                inlined = first_paint_ms(browser, page.as_uri())
        finally:
            server.close()
        sizes = report.stat().st_size / 2**20, page.stat().st_size / 2**20
    rows = f"{args.tests * args.repeat:,} ({args.tests:,} tests x {args.repeat})"
    print(f"rows: {rows}  JSON report {sizes[0]:.1f} MiB, HTML report {sizes[1]:.1f} MiB")
    print(f"evalh view: reading the report into the viewer's data: {load_s * 1000:.0f} ms (once, at start)")
    for name, (cold, figure) in (("evalh view (served)", served), ("HTML report (file)", inlined)):
        print(
            f"first paint of the matrix, {name}: {figure:.0f} ms median of {LOADS} "
            f"(target {TARGET_MS:.0f} ms: {TARGET_MS / figure:.1f}x headroom); first load {cold:.0f} ms"
        )


if __name__ == "__main__":
    main()
