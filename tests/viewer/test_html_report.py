"""The .html report: the viewer in one file, the run inlined as JSON that cannot break out of its
element, a Content-Security-Policy that admits only the inlined script and style, nothing external."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html.parser
import json
import re
from pathlib import Path

from evalh.model import RunRecord
from evalh.reports.html import REPEAT_SCRIPT, REPEAT_STYLESHEET, SCRIPTS, STYLESHEET, asset, script_bundle
from evalh.reports.json import to_promptfoo_json
from evalh.reports.viewdata import run_view
from evalh.reports.writers import write_reports
from tests.reports.sample import sample_run

BREAKOUT = "</script><script>document.title='pwned'</script><!-- </SCRIPT "


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open = tag
            if tag == "script":
                self.scripts.append((dict(attrs), ""))
            else:
                self.styles.append("")

    def handle_endtag(self, tag: str) -> None:
        self._open = None

    def handle_data(self, data: str) -> None:
        if self._open == "script":
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        elif self._open == "style":
            self.styles[-1] += data
        else:
            self.text.append(data)


def _run_with_breakout() -> RunRecord:
    run = sample_run()
    first = dataclasses.replace(run.results[0], output=BREAKOUT)
    return dataclasses.replace(run, results=(first, *run.results[1:]))


def _write(tmp_path: Path, run: RunRecord) -> tuple[str, _Page]:
    (path,) = write_reports(run, [tmp_path / "r.html"])
    text = path.read_bytes().decode("utf-8")
    page = _Page()
    page.feed(text)
    return text, page


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_the_run_is_inlined_as_json_that_cannot_end_its_element(tmp_path: Path) -> None:
    run = _run_with_breakout()
    text, page = _write(tmp_path, run)
    assert [attrs.get("type") for attrs, _ in page.scripts] == ["application/json", None]
    assert text.lower().count("</script") == 2  # the two elements' own end tags, nothing from the data
    data = json.loads(page.scripts[0][1])
    expected = run_view(json.loads(json.dumps(to_promptfoo_json(run))), ref="")
    assert data["view"]["lines"] == expected["lines"]
    cells = [cell for line in data["view"]["lines"] for cell in line["cells"] if cell]
    assert BREAKOUT in [cell["output"] for cell in cells]
    # Control characters and lone surrogates are shown as escapes, as the other reports show them.
    nasty = [cell["output"] for cell in cells if "<tag>" in cell["output"]]
    assert nasty and all("\\x1b[31mred" in o and "\\udcff" in o and "\x1b" not in o for o in nasty)


def test_only_the_inlined_script_and_style_may_run(tmp_path: Path) -> None:
    _, page = _write(tmp_path, sample_run())
    (policy,) = [a["content"] for t, a in page.elements if t == "meta" and a.get("http-equiv")]
    assert policy is not None
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == f"'{_sha256(page.scripts[1][1])}'"
    assert directives["style-src"] == f"'{_sha256(page.styles[0])}'"
    # a run without repeats: the page as it was before repeats were drawn (their part is left out)
    assert page.scripts[1][1] == script_bundle(repeats=False) == "\n".join(asset(name) for name in SCRIPTS)
    assert page.styles[0] == asset(STYLESHEET)


def test_nothing_external(tmp_path: Path) -> None:
    _, page = _write(tmp_path, sample_run())
    links = [value for _, attrs in page.elements for key, value in attrs.items() if key in ("src", "href")]
    assert all(value in ("data:,", "#/") for value in links), links
    assert not re.search(r"https?://", "".join(code for _, code in page.scripts[1:]) + page.styles[0])


def test_figures_readable_without_scripts(tmp_path: Path) -> None:
    run = dataclasses.replace(sample_run(), interrupted=True, interrupted_by="SIGTERM", not_run=3)
    _, page = _write(tmp_path, run)
    text = "".join(page.text)
    assert "Sample suite" in text and "pass rate 41.67%" in text
    assert "Interrupted by SIGTERM: 3 not run." in text


def test_every_asset_ships_as_package_data() -> None:
    import importlib.resources

    static = importlib.resources.files("evalh") / "assets" / "viewer"
    for name in (*SCRIPTS, STYLESHEET, REPEAT_SCRIPT, REPEAT_STYLESHEET):
        assert (static / name).is_file(), name
        assert "</script" not in asset(name).lower()  # each is inlined in a <script> or <style>
