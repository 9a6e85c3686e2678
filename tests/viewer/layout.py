"""What the viewer's layout tests measure in the page (a phone's 390 x 844, a desktop's 1440 x 900), and
a run that needs them: a config without a description whose results fail two assertions at once, error,
hold markup and a long token."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.loopback import LoopbackServer

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}

LONG_TOKEN = "https://example.com/" + "a" * 180
MARKUP = "<img src=x onerror=\"document.body.dataset.pwned='1'\">"

# A run of the echo provider: test 1 fails two of three assertions (one with a threshold), test 2 errors
# (its judge answers 404) besides failing a plain assertion, test 3 holds markup, test 4 a long token.
_UNNAMED_CONFIG = """\
prompts: ["Tell {{{{ name }}}} about {{{{ topic }}}}"]
providers: [echo]
tests:
  - description: two of three assertions fail
    vars: {{name: Ada, topic: refunds}}
    assert:
      - {{type: contains, value: Ada}}
      - {{type: contains, value: Zebra}}
      - {{type: rouge-n, value: "Something else entirely about quokkas", threshold: 0.9}}
  - description: the judge cannot be reached
    vars: {{name: Dee, topic: returns}}
    assert:
      - {{type: contains, value: Zebra}}
      - type: llm-rubric
        value: Explains returns
        provider:
          id: openai:chat:judge
          config: {{apiBaseUrl: "{judge}/v1", apiKey: sk-test-viewer, retryBaseDelayS: 0.01}}
  - description: markup stays text
    vars: {{name: Eve, topic: {markup}}}
    assert: [{{type: contains, value: Eve}}]
  - description: a long token
    vars: {{name: Cy, topic: "{token}"}}
    assert: [{{type: contains, value: Cy}}]
"""


def run_unnamed(directory: Path, *outputs: str, record: bool = False) -> Path:
    """Run the config above (``directory/unnamed.yaml``, no description) with `evalh run` in a process of
    its own (Playwright's sync API keeps an event loop in the test's thread), writing ``outputs``
    (file names in ``directory``) and, with ``record``, recording it in the run store."""
    import json

    config = directory / "unnamed.yaml"
    judge = LoopbackServer()  # no route: the judge's every call is a 404
    try:
        text = _UNNAMED_CONFIG.format(judge=judge.url, markup=json.dumps(MARKUP), token=LONG_TOKEN)
        config.write_text(text, encoding="utf-8")
        args = [sys.executable, "-m", "evalh", "run", str(config), "--no-cache"]
        args += [part for name in outputs for part in ("-o", str(directory / name))]
        ran = subprocess.run([*args, *([] if record else ["--no-write"])], capture_output=True, text=True)
    finally:
        judge.close()
    assert ran.returncode == 1, ran.stderr  # tests 1 and 2 do not pass
    return config


@contextmanager
def sized_page(browser: Browser, viewport: dict[str, int]) -> Iterator[Page]:
    """A page of ``viewport``'s size that fails its test on a script error, a CSP violation or a request
    off this machine, as conftest's ``page`` does."""
    context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on(
        "request",
        lambda r: (
            None if r.url.startswith(("http://127.0.0.1:", "file://", "data:")) else problems.append(r.url)
        ),
    )
    try:
        yield page
    finally:
        context.close()
    assert problems == []


def ready(page: Page) -> None:
    page.wait_for_selector("body[data-ready=true]")


# Every element (under ``root``) that reaches beyond the viewport's sides without being inside a box that
# scrolls sideways on its own (the matrix, a table's .table-scroll): what a phone would cut off or make the
# whole page scroll for. The details panel scrolls down, and must never need to scroll sideways.
_OUTSIDE = """(selector) => {
  const width = document.documentElement.clientWidth;
  const boxed = (el) => el.closest(".table-scroll, .matrix-wrap") !== null;
  const classes = (el) => (typeof el.className === "string" ? el.className.trim().split(/\\s+/) : []);
  const name = (el) => [el.tagName.toLowerCase() + (el.id ? "#" + el.id : ""), ...classes(el)].join(".");
  const out = [];
  for (const el of document.querySelectorAll(selector + ", " + selector + " *")) {
    const box = el.getBoundingClientRect();
    if (!box.width && !box.height) continue;
    if ((box.left < -1 || box.right > width + 1) && !boxed(el.parentElement || el)) out.push(name(el));
  }
  return out;
}"""

# Ordinary words (2 to 20 letters) drawn over two lines: a word broken mid-word. A longer token may break.
_BROKEN_WORDS = """(selector) => {
  const out = [];
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.textContent.matchAll(/(?<![\\w.\\/-])[A-Za-z]{2,20}(?![\\w\\/-])/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const drawn = [...range.getClientRects()].filter((r) => r.width > 0);
        const tops = new Set(drawn.map((r) => Math.round(r.top)));
        if (tops.size > 1) out.push(match[0]);
      }
    }
  }
  return out;
}"""


def outside_viewport(page: Page, selector: str) -> list[str]:
    found: list[str] = page.evaluate(_OUTSIDE, selector)
    return found


def broken_words(page: Page, selector: str) -> list[str]:
    found: list[str] = page.evaluate(_BROKEN_WORDS, selector)
    return found


def page_width(page: Page) -> dict[str, Any]:
    """The page's scrolling width against the viewport's: equal when nothing widens the page."""
    sizes: dict[str, Any] = page.evaluate(
        "({scroll: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth})"
    )
    return sizes
