"""The javascript assertion: promptfoo's return contract, files, errors; and whole runs through the CLI."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.assertions.registry import all_assertions
from evalh.cli.app import app
from evalh.model import RETURNED_COMPONENTS, AssertionResult
from tests.assertions.helpers import grade, make_context


def run(code: str, output: Any = "hello world", **kwargs: Any) -> AssertionResult:
    return grade(make_context(kwargs.pop("kind", "javascript"), value=code, output=output, **kwargs))


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_javascript_is_registered_as_code() -> None:
    definition = all_assertions()["javascript"]
    assert definition.family == "javascript"
    assert definition.requires_value and definition.code_language == "javascript"


@pytest.mark.parametrize(
    ("code", "threshold", "passed", "score"),
    [
        ("output.startsWith('hello')", None, True, 1.0),
        ("output.startsWith('bye')", None, False, 0.0),
        ("output.length / 100", None, True, 0.11),  # a number passes when > 0 without a threshold
        ("0", None, False, 0.0),
        ("output.length / 100", 0.5, False, 0.11),  # with one, when >= threshold
        ("output.length / 10", 0.5, True, 1.1),
        ("({pass: true, score: 0.25, reason: 'custom'})", None, True, 0.25),
        ("({pass: true, score: 0.25})", 0.5, False, 0.25),  # a threshold binds a returned score too
        ("({score: 0.8})", 0.5, True, 0.8),
        ("({pass: false, reason: 'nope'})", None, False, 0.0),
    ],
)
def test_return_values_and_thresholds(code: str, threshold: float | None, passed: bool, score: float) -> None:
    result = run(code, threshold=threshold)
    assert (result.passed, result.score, result.error) == (passed, pytest.approx(score), False)


def test_reasons_say_javascript() -> None:
    assert run("output.length > 100").reason == "JavaScript assertion returned False"
    assert run("({pass: false, reason: 'too short'})").reason == "too short"
    assert "JavaScript assertion returned 0.11" in run("output.length / 100", threshold=0.5).reason


def test_grading_result_extras_are_kept() -> None:
    code = (
        "({pass: true, score: 1, reason: 'ok', namedScores: {tone: 0.5}, componentResults: "
        "[{pass: true, score: 1, reason: 'part'}]})"
    )
    result = run(code)
    assert result.details["namedScores"] == {"tone": 0.5}
    assert result.details[RETURNED_COMPONENTS] == [{"pass": True, "score": 1, "reason": "part"}]
    bad = run("({pass: true, namedScores: {tone: 'high'}})")
    assert bad.error and "namedScores" in bad.reason


def test_context_has_promptfoos_fields() -> None:
    code = (
        "[context.vars.who, context.prompt, context.config.k, context.test.vars.who, "
        "context.providerResponse.output, 'logProbs' in context, 'provider' in context].join('|')"
    )
    result = run(
        f"{code} === 'Ada|Say hi|v|Ada|hello world|true|true'",
        vars={"who": "Ada"},
        prompt="Say hi",
        config={"k": "v"},
    )
    assert result.passed, result.reason


def test_wrong_return_types_are_errors() -> None:
    no_return = run("const a = 1;\nconst b = 2;")
    assert no_return.error and "forget to return" in no_return.reason
    text = run("'yes'")
    assert text.error and "got string" in text.reason


def test_a_thrown_error_fails_both_forms_like_promptfoo() -> None:
    thrown = run("JSON.parse(output).x", output="not json")
    assert (thrown.passed, thrown.error, thrown.applicable) == (False, False, False)
    assert thrown.reason.startswith("JavaScript assertion threw SyntaxError")


def test_files_with_and_without_a_function(tmp_path: Path) -> None:
    write(
        tmp_path,
        "grade.js",
        """
        const { minWords } = require('./rules.js');
        module.exports = (output) => output.split(' ').length >= minWords;
        module.exports.score = (output, context) => ({pass: true, score: output.length / context.config.max});
    """,
    )
    write(tmp_path, "rules.js", "exports.minWords = 2;\n")
    assert run("file://grade.js", config_dir=tmp_path).passed
    assert not run("file://grade.js", output="one", config_dir=tmp_path).passed
    scored = run("file://grade.js:score", config_dir=tmp_path, config={"max": 22})
    assert scored.score == pytest.approx(0.5)


def test_an_infinite_loop_is_an_error_naming_the_timeout() -> None:
    result = run("let i = 0;\nwhile (true) i++;", config={"timeoutMs": 200})
    assert result.error and "timed out after 0.2 s" in result.reason


# ------------------------------------------------------------------------------------ through the CLI

SUITE = """
tests:
  - description: promptfoo's forms
    vars: {name: Ada}
    output: "Hello Ada, how are you today?"
    assert:
      - {type: javascript, value: "output.includes(context.vars.name)"}
      - {type: javascript, value: "const n = output.split(' ').length; n / 10", threshold: 0.5}
      - type: javascript
        value: |
          const words = output.split(' ');
          return {pass: words.length > 3, score: 0.75, reason: `${words.length} words`,
                  namedScores: {brevity: 0.5}};
      - {type: not-javascript, value: "output.length > 1000"}
      - {type: javascript, value: "file://grade.js"}
      - {type: javascript, value: "file://grade.js:strict"}
  - description: loops
    output: anything
    assert:
      - {type: javascript, value: "let i = 0;\\nwhile (true) i++;", config: {timeoutMs: 200}}
  - description: throws
    output: not json
    assert:
      - {type: javascript, value: "JSON.parse(output).ok"}
"""


def _project(tmp_path: Path) -> Path:
    write(
        tmp_path,
        "grade.js",
        """
        const helper = require('./helper');
        module.exports = (output) => helper.isGreeting(output);
        module.exports.strict = (output) => ({pass: output.endsWith('?'), score: 1, reason: 'asks'});
    """,
    )
    write(tmp_path, "helper.js", "exports.isGreeting = (text) => /^(hello|hi)\\b/i.test(text);\n")
    return write(tmp_path, "evalh.yaml", SUITE)


def test_a_suite_of_javascript_assertions_runs_through_the_cli(tmp_path: Path) -> None:
    config = _project(tmp_path)
    report = tmp_path / "out.json"
    result = CliRunner().invoke(app, ["run", str(config), "--no-table", "--no-cache", "-o", str(report)])
    assert result.exit_code == 1, result.output
    rows = {
        row["testCase"]["description"]: row for row in json.loads(report.read_text())["results"]["results"]
    }
    forms = rows["promptfoo's forms"]
    assert forms["success"], forms["gradingResult"]["reason"]
    assert forms["namedScores"] == {"brevity": 0.5}
    components = forms["gradingResult"]["componentResults"]
    assert [c["pass"] for c in components] == [True] * 6
    assert components[1]["score"] == pytest.approx(0.6)
    assert rows["loops"]["failureReason"] == 2  # ERROR
    assert "timed out" in rows["loops"]["error"]
    assert rows["throws"]["failureReason"] == 1  # FAIL, as promptfoo
    assert "threw SyntaxError" in rows["throws"]["gradingResult"]["reason"]


def validate(folder: Path, config_text: str) -> str:
    """``evalh validate`` of a config written into ``folder``; exit 2 expected, its message returned."""
    config = write(folder, "evalh.yaml", config_text)
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2, result.output
    return result.output


def test_validate_locates_a_syntax_error(tmp_path: Path) -> None:
    inline = (
        "tests:\n  - output: x\n    assert:\n      - type: javascript\n        value: |\n"
        "          const a = 1;\n          return a +;\n"
    )
    message = validate(tmp_path, inline)
    assert "evalh.yaml:4:9 tests[0].assert[0]" in message
    assert "SyntaxError" in message and "line 2" in message


def test_validate_names_an_npm_package_a_file_requires(tmp_path: Path) -> None:
    write(tmp_path, "grade.js", "const _ = require('lodash');\nmodule.exports = (o) => _.isString(o);\n")
    message = validate(
        tmp_path, "tests:\n  - output: x\n    assert:\n      - {type: javascript, value: file://grade.js}\n"
    )
    assert "npm package 'lodash'" in message and "tests[0].assert[0].value" in message


def test_csv_cells_run_javascript(tmp_path: Path) -> None:
    (tmp_path / "cases.csv").write_text(
        "__expected1,__expected2,__expected3,__providerOutput\n"
        "javascript:output.length > 3,fn:output.startsWith('he'),\"eval:output.includes('l')\",hello\n"
        "javascript:output.length > 3,not-fn:output === 'no',eval:output.endsWith('x'),no\n",
        encoding="utf-8",
    )
    config = write(tmp_path, "evalh.yaml", "tests: file://cases.csv\n")
    report = tmp_path / "out.json"
    result = CliRunner().invoke(app, ["run", str(config), "--no-table", "-o", str(report)])
    assert result.exit_code == 1, result.output
    rows = json.loads(report.read_text())["results"]["results"]
    assert [row["success"] for row in rows] == [True, False]
    assert [c["pass"] for c in rows[1]["gradingResult"]["componentResults"]] == [False, False, False]


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "javascript": {"value": "output === 'Paris'", "output": "Paris"},
}
