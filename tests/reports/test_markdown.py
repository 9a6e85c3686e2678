"""The Markdown summary (``-o summary.md``) through ``evalh run`` in-process, rendered by GitHub's own
Markdown library (cmark-gfm, raw HTML let through as GitHub lets it through before sanitising): the
counts, hostile model outputs shown as their plain text and never as markup, links or mentions, long
lists folded and cut, the comparison with --baseline, and no secret in any form."""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import cmarkgfm
from cmarkgfm.cmark import Options
from scipy.stats import binomtest
from typer.testing import CliRunner, Result

from evalh.cli.app import app
from evalh.reports.markdown import BUDGET, escape_inline, markdown_text, to_markdown
from evalh.secrets import register
from tests.reports.sample import sample_run

HOSTILE = (
    "![pixel](https://evil.example/p.png) <img src=x onerror=alert(1)> <a href='https://evil.example'>x</a> "
    "[click](javascript:alert(1)) www.evil.example mail@evil.example @octocat #12 `code` | cell $x^2$ "
    "**bold** <details><summary>fake</summary></details> &amp; :smile:"
)
# The only elements evalh's own markup makes.
OWN_TAGS = {
    "h2",
    "h3",
    "p",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "strong",
    "br",
    "details",
    "summary",
}


class _Html(HTMLParser):
    """The rendered page: every tag, and the text of each table cell in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.cells: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell).replace("\u200b", ""))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def rendered(markdown: str) -> _Html:
    page = _Html()
    page.feed(cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE))
    return page


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["run", *map(str, args), "--no-table", "--no-write"])


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_counts_columns_metrics_failures_and_errors(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        "import sys\nif 'boom' in sys.argv[1]:\n    sys.exit('model crashed')\nprint(sys.argv[1])\n"
    )
    config = write_config(
        tmp_path / "evalh.yaml",
        {
            "description": "Support bot",
            "prompts": ["{{q}}"],
            "providers": [{"id": f"exec:{sys.executable} {script.name}", "label": "app"}],
            "tests": [
                {"description": "greets", "vars": {"q": "hello"}, "assert": [_contains("hello", "polite")]},
                {"description": "hostile", "vars": {"q": HOSTILE}, "assert": [_contains("zzz", "polite")]},
                {"description": "crashes", "vars": {"q": "boom"}, "assert": [_contains("boom")]},
            ],
        },
    )
    result = run(config, "-o", tmp_path / "summary.md")
    assert result.exit_code == 1, result.output
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert markdown.startswith("## ❌ Support bot\n")
    wilson = binomtest(1, 3).proportion_ci(confidence_level=0.95, method="wilson")  # tests as the unit
    interval = f"\\[{100 * wilson.low:.0f}\\-{100 * wilson.high:.0f}%\\]"
    assert f"**1 of 3 passed (33.3% {interval})** · 1 failed · 1 errors" in markdown
    page = rendered(markdown)
    assert page.tags <= OWN_TAGS, page.tags - OWN_TAGS  # no image, link, script or raw HTML of the output
    assert "details" not in page.tags  # short lists stay open
    cells = page.cells
    # the column's pass rate and counts, then the named metric over the rows that ran
    assert cells[cells.index("app") : cells.index("app") + 7] == [
        "app",
        "{{q}}",
        "33.3%",
        "1",
        "1",
        "1",
        "0.50",
    ]
    assert cells[cells.index("polite") : cells.index("polite") + 5] == ["polite", "0.50", "0.00", "1.00", "2"]
    hostile = cells.index("hostile")
    assert cells[hostile : hostile + 4] == ["hostile", "app", "{{q}}", "0.00"]
    assert cells[hostile + 4] == "contains: Output does not contain 'zzz'"
    assert cells[hostile + 5] == HOSTILE[:199] + "…"  # the output as plain text, cut
    crashed = cells.index("crashes")
    assert "model crashed" in cells[crashed + 3]


def _contains(value: str, metric: str | None = None) -> dict[str, Any]:
    return {"type": "contains", "value": value, **({"metric": metric} if metric else {})}


def test_every_hostile_text_renders_as_itself() -> None:
    texts = [
        HOSTILE,
        "a|b\\|c",
        "<!-- x -->",
        "line\nbreak\x1b[31m",
        "1. item",
        "# title",
        "> quote",
        "~~x~~",
    ]
    table = "| x |\n| --- |\n" + "".join(f"| {markdown_text(text, 10_000)} |\n" for text in texts)
    page = rendered(table)
    assert page.tags <= OWN_TAGS
    expected = [" ".join(text.split()).replace("\x1b", "\\x1b") for text in texts]
    assert page.cells == ["x", *expected]


def test_long_lists_are_folded_and_cut_to_the_budget(tmp_path: Path) -> None:
    tests = [
        {"description": f"case {i}", "output": f"answer {i} " + "blah " * 100, "assert": [_contains("zzz")]}
        for i in range(150)
    ]
    config = write_config(tmp_path / "evalh.yaml", {"tests": tests})
    assert run(config, "-o", tmp_path / "summary.md").exit_code == 1
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    page = rendered(markdown)
    assert {"details", "summary"} <= page.tags
    assert "<summary>150 rows</summary>" in markdown
    shown = sum(1 for cell in page.cells if cell.startswith("case "))
    assert 10 < shown < 150
    assert f"… and {150 - shown} more (the JSON report has every row)." in markdown
    assert len(markdown) < BUDGET + 4_000


def test_regressions_and_fixes_since_the_baseline(tmp_path: Path) -> None:
    def suite(answers: dict[str, str]) -> Path:
        tests = [
            {"description": name, "output": answer, "assert": [{"type": "icontains", "value": "yes"}]}
            for name, answer in answers.items()
        ]
        return write_config(tmp_path / "evalh.yaml", {"tests": tests})

    suite({"steady": "yes", "breaks": "yes", "heals": "no", "still failing": "no"})
    assert run(tmp_path / "evalh.yaml", "-o", tmp_path / "base.json").exit_code == 1
    config = suite(
        {"steady": "yes", "breaks": "no <b>way</b>", "heals": "yes", "still failing": "no", "new": "no"}
    )
    result = run(config, "--baseline", tmp_path / "base.json", "-o", tmp_path / "summary.md")
    assert "Regressions: passed in the baseline, fail now (1):" in result.stdout
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    base_id = json.loads((tmp_path / "base.json").read_text(encoding="utf-8"))["evalId"]
    assert f"### Compared with the baseline {markdown_text(base_id)}" in markdown
    assert "❌ **2 new failure(s) since the baseline.**" in markdown
    assert "1 regressions · 1 new failing tests · 1 fixed" in markdown
    assert "Pass rate 50.0% (4 rows) → 40.0% (5 rows)" in markdown
    page = rendered(markdown)
    assert page.tags <= OWN_TAGS
    cells = page.cells
    regression = cells.index("breaks")
    assert cells[regression + 3 : regression + 6] == [
        "PASS 1.00",
        "FAIL 0.00",
        "icontains: Output does not contain 'yes' (ignoring case)",
    ]
    assert "### Fixed: failed in the baseline, pass now (1)" in markdown
    fixed = cells.index("heals")
    assert cells[fixed + 3 : fixed + 6] == ["FAIL 0.00", "PASS 1.00", ""]
    assert "### New tests that fail (1)" in markdown
    assert "still failing" in cells  # in the failures list, not among the changes
    assert sum(1 for cell in cells if cell == "still failing") == 1


def test_without_a_baseline_there_is_no_comparison_and_a_green_run_says_so(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "evalh.yaml", {"tests": [{"output": "yes", "assert": [_contains("yes")]}]}
    )
    assert run(config, "-o", tmp_path / "summary.md").exit_code == 0
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert markdown.startswith("## ✅ evalh run\n")
    assert "baseline" not in markdown and "### Failures" not in markdown and "### Errors" not in markdown


def test_a_secret_is_redacted_before_it_is_escaped(tmp_path: Path) -> None:
    secret = "sk-live.secret_value-1234"
    register(secret)
    assert markdown_text(f"key={secret}") == "key\\=\\[REDACTED\\]"
    config = write_config(
        tmp_path / "evalh.yaml",
        {
            "env": {"SERVICE_API_KEY": "sk-other.planted_key-5678"},
            "prompts": ["say {{ env.SERVICE_API_KEY }}"],
            "providers": ["echo"],
            "tests": [{"description": "leaks", "assert": [_contains("nothing")]}],
        },
    )
    assert run(config, "-o", tmp_path / "summary.md").exit_code == 1
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "say \\[REDACTED\\]" in markdown
    for value in ("sk-other.planted_key-5678", secret):
        assert value not in markdown and escape_inline(value) not in markdown


def test_the_writer_is_registered_for_dot_md(tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(
        textwrap.dedent("tests: [{output: x, assert: [{type: equals, value: x}]}]"), encoding="utf-8"
    )
    result = run(config, "-o", tmp_path / "a.MD")
    assert result.exit_code == 0 and (tmp_path / "a.MD").read_text(encoding="utf-8").startswith("## ✅")


def test_an_interrupted_run_is_marked_and_control_characters_are_shown_escaped() -> None:
    run = replace(sample_run(), interrupted=True, interrupted_by="SIGTERM", not_run=3)
    markdown = to_markdown(run)
    assert markdown.startswith("## ❌ Sample suite\n")
    assert "> [!WARNING]\n> Interrupted by SIGTERM: 3 planned rows did not run." in markdown
    assert "\x1b" not in markdown and "\x00" not in markdown and "\x07" not in markdown
    markdown.encode("utf-8")  # no lone surrogate left
    page = rendered(markdown)
    assert page.tags <= OWN_TAGS | {"blockquote"}
    assert any(
        "esc\\x1b[31mred\\x1b[0m [bold]markup[/bold] <tag> & lone\\udcff" in cell for cell in page.cells
    )
