"""The Markdown summary at its limits, through ``evalh run``: a run whose failures, errors and baseline
regressions each fill a list still fits one GitHub comment (65,536 characters), and Unicode bidi
controls in an output cannot reorder what a reader sees of a cell."""

from __future__ import annotations

from pathlib import Path

from evalh.reports.markdown import TOTAL_BUDGET
from tests.reports.test_markdown import OWN_TAGS, rendered, run, write_config

GITHUB_COMMENT_LIMIT = 65_536


def _suite(path: Path, expected: str) -> Path:
    tests = [
        {"description": f"case {i} " + "d" * 100, "vars": {"q": f"question {i} " + "q" * 250}}
        for i in range(300)
    ]
    config = {
        "prompts": ["{{q}}"],
        "providers": ["echo", {"id": "exec:/nonexistent/evalh-no-such-program", "label": "gone"}],
        "defaultTest": {"assert": [{"type": "contains", "value": expected}]},
        "tests": tests,
    }
    return write_config(path, config)


def test_failures_errors_and_regressions_together_fit_one_github_comment(tmp_path: Path) -> None:
    baseline = tmp_path / "base.json"
    run(_suite(tmp_path / "base.yaml", "question"), "-o", baseline)  # echo rows pass, exec rows error
    summary = tmp_path / "summary.md"
    result = run(_suite(tmp_path / "now.yaml", "z" * 200), "--baseline", baseline, "-o", summary)
    assert result.exit_code == 1, result.output
    markdown = summary.read_text(encoding="utf-8")
    for heading in ("### Regressions", "### Failures (300)", "### Errors (300)"):
        assert heading in markdown
    assert len(markdown) <= TOTAL_BUDGET < GITHUB_COMMENT_LIMIT  # was 80,000 characters and more
    assert markdown.count("more (the JSON report has every row).") == 3
    assert rendered(markdown).tags <= OWN_TAGS


def test_bidi_controls_in_an_output_are_shown_escaped(tmp_path: Path) -> None:
    spoof = "fails \u202eSSAP\u202c and \u2067isolated\u2069 \u200fmark"
    config = write_config(
        tmp_path / "evalh.yaml",
        {
            "tests": [
                {"description": "bidi", "output": spoof, "assert": [{"type": "contains", "value": "zzz"}]}
            ]
        },
    )
    summary = tmp_path / "summary.md"
    assert run(config, "-o", summary).exit_code == 1
    markdown = summary.read_text(encoding="utf-8")
    for control in "\u202e\u202c\u2067\u2069":
        assert control not in markdown
    cells = rendered(markdown).cells
    assert "fails \\u202eSSAP\\u202c and \\u2067isolated\\u2069 \u200fmark" in cells


def _cut_table(markdown: str, heading: str, noun: str, total: int) -> int:
    """How many of ``total`` entries the table under ``heading`` shows, checking it says how many more."""
    section = markdown.split(heading, 1)[1].split("\n### ", 1)[0]
    shown = sum(1 for line in section.splitlines() if line.startswith("| ")) - 2  # header and rule
    assert 0 < shown < total
    assert f"… and {total - shown} more (the JSON report has all the {noun})." in section
    return shown


def test_thousands_of_columns_are_cut_to_the_budget(tmp_path: Path) -> None:
    prompts = [{"raw": "{{q}} " + str(i), "label": f"prompt {i} " + "p" * 100} for i in range(60)]
    providers = [{"id": "echo", "label": f"provider {i} " + "e" * 100} for i in range(30)]
    config = {"prompts": prompts, "providers": providers, "tests": [{"vars": {"q": "x"}}]}
    summary = tmp_path / "summary.md"
    assert run(write_config(tmp_path / "evalh.yaml", config), "-o", summary).exit_code == 0
    markdown = summary.read_text(encoding="utf-8")
    assert len(markdown) <= TOTAL_BUDGET  # was 463,795 characters
    _cut_table(markdown, "### Pass rate by provider and prompt", "columns", 60 * 30)
    assert rendered(markdown).tags <= OWN_TAGS


def test_thousands_of_named_metrics_are_cut_to_the_budget(tmp_path: Path) -> None:
    checks = [{"type": "contains", "value": "x", "metric": f"metric {i} " + "m" * 110} for i in range(600)]
    config = {"prompts": ["{{q}}"], "providers": ["echo"], "tests": [{"vars": {"q": "x"}, "assert": checks}]}
    summary = tmp_path / "summary.md"
    assert run(write_config(tmp_path / "evalh.yaml", config), "-o", summary).exit_code == 0
    markdown = summary.read_text(encoding="utf-8")
    assert len(markdown) <= TOTAL_BUDGET  # was 90,417 characters
    _cut_table(markdown, "### Named metrics", "metrics", 600)
    assert rendered(markdown).tags <= OWN_TAGS
