"""promptfoo's output transforms: options.transform (and postprocess), an assertion's transform, in JS
and Python; transformVars and provider transforms are refused by name, never ignored."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalh.cli import app


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(config: Path) -> tuple[int, str, dict[str, Any]]:
    report = config.parent / "out.json"
    result = CliRunner().invoke(app, ["run", str(config), "--no-table", "--no-cache", "-o", str(report)])
    rows = json.loads(report.read_text())["results"]["results"] if report.exists() else []
    return result.exit_code, result.output, {row["vars"]["x"]: row for row in rows}


SUITE = """
prompts: ["hi {{x}}"]
providers: [echo]
evaluateOptions: {timeoutMs: 2000}
defaultTest:
  options:
    transform: output.toUpperCase()
tests:
  - vars: {x: a}
    assert:
      - {type: equals, value: "HI A"}
      - {type: equals, value: "hi a!", transform: "output.toLowerCase() + '!'"}
      - {type: equals, value: "3", transform: "file://count.py:count"}
      - {type: equals, value: "A", transform: "file://last.js"}
      - {type: equals, value: "HI A"}
  - vars: {x: b}
    options:
      transform: "JSON.stringify({said: output})"
    assert:
      - {type: javascript, value: "output === JSON.stringify({said: 'hi b'})"}
  - vars: {x: c}
    options:
      transform: "output.nope.deeper"
    assert:
      - {type: contains, value: HI}
  - vars: {x: d}
    assert:
      - {type: contains, value: HI, transform: "let i = 0;\\nwhile (true) i++;"}
"""


def test_transforms_apply_in_promptfoos_order(tmp_path: Path) -> None:
    write(tmp_path, "count.py", "def count(output, context):\n    return str(len(output.split()) + 1)\n")
    write(tmp_path, "last.js", "module.exports = (output) => output.split(' ').at(-1);\n")
    config = write(tmp_path, "evalh.yaml", SUITE)
    code, output, rows = run(config)
    assert code == 1, output
    assert rows["a"]["success"], rows["a"]["gradingResult"]
    assert rows["a"]["response"]["output"] == "HI A"  # the test's transform is the row's output
    assert rows["b"]["success"], rows["b"]["gradingResult"]  # its own options win over defaultTest's
    assert rows["c"]["failureReason"] == 2
    assert "Transform failed: options.transform threw TypeError" in rows["c"]["error"]
    assert rows["d"]["failureReason"] == 2 and "Transform failed" in rows["d"]["error"]


def test_postprocess_is_the_old_name_of_transform(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "evalh.yaml",
        """
        tests:
          - vars: {x: recorded}
            output: "  padded  "
            options: {postprocess: output.trim()}
            assert:
              - {type: equals, value: padded}
    """,
    )
    code, output, rows = run(config)
    assert code == 0, output
    assert rows["recorded"]["response"]["output"] == "padded"


def test_transform_vars_is_refused_where_it_is_written(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "evalh.yaml",
        """
        tests:
          - output: x
            options:
              transformVars: "{...vars, y: 1}"
            assert:
              - {type: contains, value: x}
    """,
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    assert "evalh.yaml:5:7 tests[0].options.transformVars" in result.output
    assert "not supported" in result.output


def test_broken_transforms_are_located_config_errors(tmp_path: Path) -> None:
    syntax = write(
        tmp_path,
        "syntax.yaml",
        """
        defaultTest:
          options:
            transform: "output.slice(0,"
        tests:
          - output: x
            assert: [{type: contains, value: x}]
    """,
    )
    result = CliRunner().invoke(app, ["validate", str(syntax)])
    assert result.exit_code == 2
    assert "syntax.yaml:4:5 defaultTest.options.transform" in result.output and "SyntaxError" in result.output
    missing = write(
        tmp_path,
        "missing.yaml",
        """
        tests:
          - output: x
            assert:
              - {type: contains, value: x, transform: "file://missing.py"}
    """,
    )
    result = CliRunner().invoke(app, ["validate", str(missing)])
    assert result.exit_code == 2
    assert "tests[0].assert[0].transform" in result.output and "missing.py was not found" in result.output


def test_a_provider_transform_is_refused_not_ignored(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "evalh.yaml",
        """
        providers:
          - {id: echo, transform: output.toUpperCase()}
        prompts: [hi]
        tests:
          - assert: [{type: contains, value: hi}]
    """,
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    assert "providers[0].transform" in result.output and "options.transform" in result.output
