"""Var scripts (promptfoo's ``vars: {context: file://load.py}`` run through ``get_var``): run per row in
the real Python worker and the real embedded JavaScript engine, through the CLI in process."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh.errors import EXIT_CONFIG
from tests.config.test_promptfoo_semantics import evalh, run_rows, write

PY_VARS = """
def get_var(var_name, prompt, other_vars):
    return {"output": "  <%s for %s>\\n" % (var_name, other_vars["question"])}


def echo_prompt(var_name, prompt, other_vars):
    return {"output": "raw=" + prompt.replace("{", "(").replace("}", ")")}


def after(var_name, prompt, other_vars):
    return {"output": "after " + other_vars["context"]}


def failing(var_name, prompt, other_vars):
    return {"error": "no documents for " + other_vars["question"]}


def not_text(var_name, prompt, other_vars):
    return {"output": 42}


def huge(var_name, prompt, other_vars):
    return {"output": "x" * 300_000}


def sleeps(var_name, prompt, other_vars):
    import time
    time.sleep(30)
"""

JS_VARS = """
module.exports = function (varName, prompt, vars, provider) {
  return { output: varName + ' via ' + provider.id + ' for ' + vars.question + ' {{question}}' };
};
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "load.py", PY_VARS)
    write(tmp_path / "load.js", JS_VARS)
    return tmp_path


def test_a_python_var_script_runs_per_row_with_the_prompt_as_written(project: Path) -> None:
    config = write(
        project / "c.yaml",
        """\
        prompts: ["A {{context}}", "B {{context}} {{raw}}"]
        providers: [echo]
        tests:
          - vars:
              question: leave
              context: file://load.py
              raw: file://load.py:echo_prompt
            assert:
              - type: javascript
                value: "context.vars.context === '<context for leave>'"
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stdout
    outputs = [row["response"]["output"] for row in rows]
    # trimmed as promptfoo trims a Python output; each prompt hands the script its own template
    assert outputs == ["A <context for leave>", "B <context for leave> raw=B ((context)) ((raw))"]
    assert rows[0]["vars"]["context"] == "file://load.py"  # reported as written, as promptfoo does


def test_a_javascript_var_script_gets_the_provider_and_its_output_stays_data(project: Path) -> None:
    config = write(
        project / "c.yaml",
        """\
        prompts: ["{{context}}"]
        providers: [echo]
        tests:
          - vars: {question: late, context: file://load.js}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stdout
    assert rows[0]["response"]["output"] == "context via echo for late {{question}}"


def test_later_scripts_see_the_values_of_earlier_ones(project: Path) -> None:
    config = write(
        project / "c.yaml",
        """\
        prompts: ["{{second}}"]
        providers: [echo]
        defaultTest:
          vars: {context: file://load.py}
        tests:
          - vars: {question: q, second: file://load.py:after}
        """,
    )
    _, rows = run_rows(config)
    assert rows[0]["response"]["output"] == "after <context for q>"


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("failing", "var context: file://load.py:failing returned the error: no documents for q"),
        ("not_text", "returned an output that is int, not a string"),
        ("sleeps", "var context: file://load.py:sleeps failed"),
        ("huge", "var context: file://load.py:huge returned more than 262144 bytes, the cap on one reply"),
    ],
)
def test_a_failing_var_script_fails_its_row_only(
    project: Path, function: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_MAX_REPLY_MB", "0.25")  # a value past it would fill every report of the row
    config = write(
        project / "c.yaml",
        f"""\
        prompts: ["{{{{context}}}}"]
        providers: [echo]
        evaluateOptions: {{timeoutMs: 1500}}
        tests:
          - vars: {{question: q, context: "file://load.py:{function}"}}
          - vars: {{context: plain}}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code != EXIT_CONFIG
    assert rows[0]["success"] is False and message in rows[0]["error"]
    assert rows[1]["response"]["output"] == "plain"


def test_a_var_value_given_on_the_command_line_is_never_run(project: Path) -> None:
    write(project / "boom.py", "def get_var(*args):\n    raise SystemExit('ran')\n")
    config = write(project / "c.yaml", 'prompts: ["{{context}}"]\nproviders: [echo]\ntests: [{}]\n')
    _, rows = run_rows(config, "--var", "context=file://boom.py")
    assert rows[0]["response"]["output"] == "file://boom.py"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("file://missing.py", "var script file://missing.py: file missing.py was not found"),
        ("file://load.py:nothing", "load.py defines no function 'nothing'"),
        ("file://broken.js", "var script file://broken.js"),
    ],
)
def test_a_var_script_that_cannot_run_is_a_located_config_error(
    project: Path, value: str, message: str
) -> None:
    write(project / "broken.js", "module.exports = function (\n")
    config = write(
        project / "c.yaml", f'prompts: ["{{{{x}}}}"]\nproviders: [echo]\ntests:\n  - vars: {{x: "{value}"}}\n'
    )
    result = evalh("validate", str(config))
    assert result.exit_code == EXIT_CONFIG
    assert message in result.stderr and "c.yaml:4" in result.stderr and "tests[0].vars.x" in result.stderr
    assert "Traceback" not in result.stderr


def test_typescript_and_module_var_scripts_run(project: Path) -> None:
    write(
        project / "v.ts", "export default (name: string): {output: string} => ({ output: `ts ${name}` });\n"
    )
    write(project / "v.mjs", "export default function (name) { return { output: 'mjs ' + name }; }\n")
    config = write(
        project / "c.yaml",
        'prompts: ["{{a}} {{b}}"]\nproviders: [echo]\ntests:\n  - vars: {a: file://v.ts, b: file://v.mjs}\n',
    )
    _, rows = run_rows(config)
    assert rows[0]["response"]["output"] == "ts a mjs b"
