"""Strictness that bends as promptfoo bends, with a located warning, and ``--strict`` (issue 10, item 7).

Through the CLI in process: an undefined template variable renders empty with one warning per place
and name (an error with --strict or evaluateOptions.strict, for run and validate); an unknown key far
from any known key is ignored with a warning, a near-miss stays an error with its did-you-mean.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner, Result

from evalh.cli.app import app


def evalh(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def warnings(result: Result) -> list[str]:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("evalh: warning:")]


UNDEFINED = """
    prompts: ["Hi {{ name }}{{ nmae }}!"]
    providers: [echo]
    tests:
      - vars: {name: Ada}
        assert: [{type: equals, value: "Hi Ada!"}]
      - vars: {name: Bob}
        assert: [{type: equals, value: "Hi Bob!{{ missing_in_value }}"}]
      - vars: {name: Cy}
"""


def test_an_undefined_variable_renders_empty_with_one_located_warning(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", UNDEFINED)
    report = tmp_path / "out.json"
    result = evalh("run", str(config), "-o", str(report), "--no-table", "--no-progress-bar")
    rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
    assert [row["response"]["output"] for row in rows] == ["Hi Ada!", "Hi Bob!", "Hi Cy!"]
    assert result.exit_code == 0, result.stderr
    shown = warnings(result)
    prompt_warnings = [line for line in shown if "'nmae'" in line]
    assert len(prompt_warnings) == 1  # once for the prompt, not once per test
    assert "c.yaml:2:" in prompt_warnings[0] and "renders empty" in prompt_warnings[0]
    value_warnings = [line for line in shown if "'missing_in_value'" in line]
    assert len(value_warnings) == 1 and "tests[1].assert[0].value" in value_warnings[0]


def test_strict_makes_an_undefined_variable_an_error_for_run_and_validate(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", UNDEFINED)
    for command in ("run", "validate"):
        result = evalh(command, str(config), "--strict")
        assert result.exit_code == 2, (command, result.stderr)
        message = " ".join(result.stderr.split())
        assert "variable 'nmae'" in message and "c.yaml:2:" in message, message
        assert "undefined variable 'missing_in_value'" in message
        assert "renders empty" not in message
    lenient = evalh("validate", str(config))
    assert lenient.exit_code == 0 and len(warnings(lenient)) == 2


def test_evaluate_options_strict_is_the_config_key_for_strict(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", UNDEFINED + "    evaluateOptions: {strict: true}\n")
    result = evalh("run", str(config), "--no-table")
    assert result.exit_code == 2
    assert "variable 'nmae'" in result.stderr


def test_an_unknown_key_far_from_any_known_key_is_ignored_with_a_warning(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        outputs: [a.json]
        tests:
          - output: hello
            reviewer: ada
            assert: [{type: equals, value: hello}]
        """,
    )
    result = evalh("run", str(config), "--no-table", "--no-progress-bar")
    assert result.exit_code == 0, result.stderr
    shown = " ".join(warnings(result))
    assert "c.yaml:2:1 outputs: unknown key 'outputs', ignored" in shown
    assert "c.yaml:5:5 tests[0].reviewer: unknown key 'reviewer', ignored" in shown
    strict = evalh("run", str(config), "--no-table", "--strict")
    assert strict.exit_code == 2 and "unknown key 'outputs'" in strict.stderr


def test_a_near_miss_of_a_known_key_stays_an_error_with_a_did_you_mean(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", "test:\n  - output: hello\n")
    result = evalh("run", str(config), "--no-table")
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "c.yaml:1:1 test: unknown key 'test'" in message and "Did you mean 'tests'?" in message
