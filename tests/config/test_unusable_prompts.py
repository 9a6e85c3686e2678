"""A prompt whose template cannot render (a syntax error, an unknown filter) is a warning at load, and
its rows are ERRORs naming the problem while the other prompts run, as promptfoo errors that prompt's
rows ("Template render error"); `--strict` makes it a config error (exit 2) before any call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app


@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("Hi {{ name | allcaps }}", "No filter named 'allcaps'"),
        ("Hi {% for x in items %\n}", "unexpected '}'"),
    ],
)
def test_only_the_unusable_prompts_rows_error(tmp_path: Path, template: str, said: str) -> None:
    config = {
        "prompts": [template, "Bye {{ name }}"],
        "providers": ["echo"],
        "tests": [{"vars": {"name": "Ada"}, "assert": [{"type": "contains", "value": "Ada"}]}],
    }
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    out = tmp_path / "out.json"
    result = CliRunner().invoke(app, ["run", str(path), "-o", str(out), "--no-write", "--no-table"])
    assert result.exit_code == 1, result.output
    assert "evalh: warning:" in result.stderr and said in result.stderr and "prompts[0]" in result.stderr
    rows = sorted(json.loads(out.read_text())["results"]["results"], key=lambda row: row["promptIdx"])
    assert [row["failureReason"] for row in rows] == [2, 0]
    assert said in rows[0]["error"] and rows[1]["response"]["output"] == "Bye Ada"
    strict = CliRunner().invoke(app, ["run", str(path), "--strict", "--no-write", "--no-table"])
    assert strict.exit_code == 2 and said in strict.stderr and "evalh: error:" in strict.stderr
