"""A python assertion's value is code: it is never rendered as a template, so a var (a --var, a CSV cell,
an env value reached through a var) is data to it. A string literal that is exactly ``'{{ name }}'`` (a
promptfoo habit) becomes a Python literal of the value; any other template is a located config error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config.code_values import code_value
from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, TemplateError
from tests.config.conftest import WriteFiles


def injection(marker: Path, quote: str = "'") -> str:
    """A var value that, rendered into ``output == '{{ title }}'``, would run a shell command."""
    return f"{quote} or __import__('os').system('touch {marker}') or {quote}"


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


def run_cli(config: Path, *extra: str) -> tuple[int, str, list[dict[str, Any]]]:
    """``evalh run`` in-process: exit code, console text and the JSON report's rows."""
    report = config.parent / "out.json"
    result = CliRunner().invoke(app, ["run", str(config), "-o", str(report), "--no-cache", *extra])
    rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"] if report.exists() else []
    return result.exit_code, result.output, rows


def reasons(rows: list[dict[str, Any]]) -> list[str]:
    return [part["reason"] for row in rows for part in row["gradingResult"]["componentResults"]]


CHECKS = (
    "[{type: python, value: \"output == '{{ title }}'\"}, "
    "{type: python, value: 'output == \"{{title}}\"'}, "
    "{type: python, value: \"context['vars']['title'] == output\"}]"
)


def test_a_cli_var_cannot_inject_code_into_python(project: WriteFiles, marker: Path) -> None:
    title = injection(marker)
    config = project(f"prompts: ['{{{{ title }}}}']\nproviders: [echo]\ntests: [{{assert: {CHECKS}}}]\n")
    code, console, rows = run_cli(config, "--var", f"title={title}")
    assert code == 0, console
    assert not marker.exists()
    assert rows[0]["response"]["output"] == title  # each assertion saw the literal value
    assert [row["success"] for row in rows] == [True]


def test_a_csv_cell_cannot_inject_code_into_python(project: WriteFiles, marker: Path) -> None:
    single, double = injection(marker), injection(marker, quote='"')
    cells = "\n".join('"' + value.replace('"', '""') + '"' for value in (single, double))
    config = project(
        f"prompts: ['{{{{ title }}}}']\nproviders: [echo]\ndefaultTest: {{assert: {CHECKS}}}\n"
        "tests: file://tests.csv\n",
        {"tests.csv": f"title\n{cells}\n"},
    )
    code, console, rows = run_cli(config)
    assert code == 0, console
    assert not marker.exists()
    assert [row["response"]["output"] for row in rows] == [single, double]
    assert all(row["success"] for row in rows)


def test_an_env_value_through_a_var_cannot_inject_code(
    project: WriteFiles, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_TEST_TITLE", injection(marker))
    config = project(
        "prompts: ['{{ title }}']\nproviders: [echo]\n"
        f"tests: [{{vars: {{title: '{{{{ env.EVALH_TEST_TITLE }}}}'}}, assert: {CHECKS}}}]\n"
    )
    code, console, rows = run_cli(config)
    assert code == 0, console
    assert not marker.exists()
    assert rows[0]["success"] and rows[0]["response"]["output"] == injection(marker)


@pytest.mark.parametrize(
    "value",
    ["O'Brien", 'say "hi"', "back\\slash \\n not a newline", "two\nlines\r\nthree", "é ✓ {'a': 1}"],
)
def test_a_whole_quoted_template_becomes_a_literal_of_the_value(project: WriteFiles, value: str) -> None:
    config = project(
        "prompts: ['hi']\nproviders: [echo]\n"
        f"tests: [{{vars: {{title: {json.dumps(value)}}}, output: {json.dumps(value)}, assert: "
        "[{type: python, value: \"output == '{{ title }}' and output == context['vars']['title']\"}, "
        "{type: python, value: \"x = r'''{{ title }}'''\\nreturn x == output\"}]}]\n"
    )
    code, console, rows = run_cli(config)
    assert code == 0, console
    assert reasons(rows) == ["Python assertion returned True"] * 2


def test_the_template_expression_is_rendered_as_data_with_filters_and_env(
    project: WriteFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_TEST_NAME", "Ann ' \\")
    config = project(
        "prompts: ['hi']\nproviders: [echo]\n"
        "tests: [{vars: {n: bob}, assert: [{type: python, "
        "value: \"['{{ n | upper }}', '{{ env.EVALH_TEST_NAME }}', '{{ missing | default(1) }}']\"}]}]\n"
    )
    spec = load_suite(config).tests[0].asserts[0]
    assert spec.value == repr(["BOB", "Ann ' \\", "1"]).replace(", ", ", ")


def test_python_code_without_a_template_is_kept_as_written(project: WriteFiles) -> None:
    # not a template (the engine cannot parse it), so promptfoo could not have rendered it either
    code = "'{{' in output and {'a': {'b': 1}} == json.loads('{\"a\": {\"b\": 1}}')"
    config = project(
        "prompts: ['hi']\nproviders: [echo]\n"
        f"tests: [{{output: 'a {{{{ b', assert: [{{type: python, value: {json.dumps(code)}}}]}}]\n"
    )
    assert load_suite(config).tests[0].asserts[0].value == code


@pytest.mark.parametrize(
    ("code", "place"),
    [
        ("output == 'Dear {{ title }}'", "line 1, column 17"),
        ("output == {{ title }}", "line 1, column 11"),
        ("# {{ title }}\nreturn True", "line 1, column 3"),
        ("x = 1\nreturn f'{{ title }}' == output", "line 2, column 10"),
        ("output == b'{{ title }}'", "line 1, column 13"),
        ("output == '{% if title %}yes{% endif %}'", "line 1, column 12"),
        ("'''a\n{{ title }}''' == output", "line 2, column 1"),
    ],
)
def test_other_templates_in_python_code_are_located_errors(
    project: WriteFiles, code: str, place: str
) -> None:
    config = project(
        "prompts: ['hi']\nproviders: [echo]\n"
        f"tests:\n  - vars: {{title: x}}\n    assert: [{{type: python, value: {json.dumps(code)}}}]\n"
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == EXIT_CONFIG, result.output
    assert "evalh.yaml:5:" in result.output and "tests[0].assert[0].value" in result.output
    message = " ".join(result.output.split())
    assert "never rendered as a template" in message and place in message
    assert "context['vars']['name'] instead of {{ name }}" in message
    assert "Traceback" not in result.output


def test_a_template_joined_to_another_string_is_an_error() -> None:
    with pytest.raises(TemplateError, match="not a plain string literal"):
        code_value("python", "output == '{{ title }}' 'x'", lambda _: "v", where="here")


def test_a_templated_file_path_is_an_error(project: WriteFiles, marker: Path) -> None:
    config = project(
        "prompts: ['hi']\nproviders: [echo]\n"
        "tests: [{assert: [{type: python, value: 'file://{{ name }}.py'}]}]\n",
        {"check.py": "def get_assert(output, context):\n    return True\n"},
    )
    with pytest.raises(TemplateError, match="file:// path of python code is never rendered"):
        load_suite(config, cli_vars={"name": "check"})


def test_javascript_code_accepts_no_template() -> None:
    with pytest.raises(TemplateError, match="javascript code is never rendered") as caught:
        code_value("javascript", "output === '{{ title }}'", lambda _: "v", where="here")
    assert caught.value.hint is not None and "context.vars.name" in caught.value.hint


def test_a_suite_default_timeout_applies_to_python_assertions(project: WriteFiles) -> None:
    loop = "while True:\\n    pass"
    config = project(
        "evaluateOptions: {timeoutMs: 300}\nprompts: ['hi']\nproviders: [echo]\n"
        f'tests:\n  - assert: [{{type: python, value: "{loop}"}}]\n'
        f'  - assert: [{{type: python, value: "{loop}", config: {{timeoutMs: 400}}}}]\n'
    )
    code, console, rows = run_cli(config)
    assert code == 1, console
    assert [reason.split(" and ")[0] for reason in reasons(rows)] == [
        "python assertion timed out after 0.3 s",
        "python assertion timed out after 0.4 s",
    ]
