"""promptfoo's transforms, through the CLI, in JS and Python: options.transform (and postprocess), an
assertion's transform, options.transformVars, a provider's transform and an assertion's
contextTransform; broken ones are located errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from tests.assertions.judge_helpers import openai_text
from tests.loopback import LoopbackServer, Reply, Request


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


VARS_SUITE = """
prompts: ["{{greeting}} {{name}} ({{size}})"]
providers: [echo]
defaultTest:
  options:
    transformVars: "({greeting: vars.name.length > 3 ? 'Hello' : 'Hi', size: vars.name.length})"
tests:
  - vars: {x: js, name: Ada}
    assert: [{type: equals, value: "{{greeting}} Ada (3)"}]
  - vars: {x: file, name: Grace}
    options: {transformVars: "file://vars.js:shout"}
    assert: [{type: equals, value: "Hey GRACE ({{size}})"}]
  - vars: {x: py, name: Linus}
    options: {transformVars: "file://vars.py"}
    assert: [{type: equals, value: "Yo linus ({{size}})"}]
"""


def test_transform_vars_merge_over_the_vars_before_prompts_and_assertions_render(tmp_path: Path) -> None:
    write(
        tmp_path,
        "vars.js",
        "exports.shout = (vars, context) => ({greeting: 'Hey', name: vars.name.toUpperCase(),\n"
        "  size: typeof context.uuid + Object.keys(context.prompt).length});\n",
    )
    write(
        tmp_path,
        "vars.py",
        "def get_transform(vars, context):\n"
        "    assert len(context['uuid']) == 36 and context['prompt'] == {}\n"
        "    return {'greeting': 'Yo', 'name': vars['name'].lower(), 'size': '{{ 7*7 }}'}\n",
    )
    code, output, rows = run(write(tmp_path, "evalh.yaml", VARS_SUITE))
    assert code == 0, output
    outputs = {x: row["response"]["output"] for x, row in rows.items()}
    # defaultTest's transformVars, a test's own (a JS file's function, a Python file's get_transform);
    # what a transform returns is data: '{{ 7*7 }}' stays as written in the prompt and the assertion
    assert outputs == {"js": "Hi Ada (3)", "file": "Hey GRACE (string0)", "py": "Yo linus ({{ 7*7 }})"}
    assert rows["py"]["vars"]["name"] == "linus"  # the report shows the vars the rows used


def test_validate_checks_transform_vars_without_running_them(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "evalh.yaml",
        """
        tests:
          - output: x
            options:
              transformVars: "vars.missing.deeper"
            assert:
              - {type: contains, value: x}
    """,
    )
    assert CliRunner().invoke(app, ["validate", str(config)]).exit_code == 0
    code, output, rows = run(config)
    assert code == 2 and not rows, output
    assert "evalh.yaml:5:7 tests[0].options.transformVars: the vars transform threw TypeError" in output


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        ('"vars.name +"', "SyntaxError"),
        ('"file://gone.js"', "gone.js was not found"),
        ('"file://gone.py:fn"', "gone.py was not found"),
    ],
)
def test_a_broken_transform_vars_is_a_located_error_at_validate(
    tmp_path: Path, transform: str, message: str
) -> None:
    config = write(
        tmp_path,
        "evalh.yaml",
        f"""
        defaultTest:
          options:
            transformVars: {transform}
        tests:
          - {{output: x, vars: {{name: a}}}}
    """,
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    assert "evalh.yaml:4:5 defaultTest.options.transformVars" in result.output and message in result.output


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        ('"[vars.name]"', "returned an array; it must return an object of vars"),
        ('"file://vars.py:nope"', "nope"),
        ('"file://vars.js:nope"', "does not export a function named nope"),
        ('"file://vars.py:text"', "returned a string; it must return an object of vars"),
    ],
)
def test_a_transform_vars_that_fails_stops_the_run_before_any_row(
    tmp_path: Path, transform: str, message: str
) -> None:
    write(tmp_path, "vars.py", "def text(vars, context):\n    return 'not vars'\n")
    write(tmp_path, "vars.js", "exports.other = (vars) => vars;\n")
    config = write(
        tmp_path,
        "evalh.yaml",
        f"""
        prompts: ["{{{{name}}}}"]
        providers: [echo]
        tests:
          - vars: {{x: a, name: a}}
            options: {{transformVars: {transform}}}
    """,
    )
    code, output, rows = run(config)
    assert code == 2 and not rows, output
    assert (
        "evalh.yaml:6:15 tests[0].options.transformVars: the vars transform" in output and message in output
    )
    assert "Traceback" not in output


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


PROVIDERS_SUITE = """
prompts: ["hi {{x}}"]
providers:
  - id: echo
    label: js
    transform: "output + '-p' + (context.metadata === undefined ? '' : 'M') + context.vars.x"
  - {id: echo, label: py, transform: "file://wrap.py:wrap"}
  - echo: {label: file, transform: "file://wrap.js"}
  - {id: echo, label: broken, transform: "output.nope.deeper"}
defaultTest:
  options: {transform: "output + '-t'"}
tests:
  - vars: {x: a}
    assert: [{type: contains, value: "-t-a", transform: "output + '-a'"}]
"""


def test_a_providers_transform_runs_before_the_tests(tmp_path: Path) -> None:
    write(
        tmp_path,
        "wrap.py",
        "def wrap(output, context):\n    return '[' + output + ']' + context['vars']['x']\n",
    )
    write(
        tmp_path, "wrap.js", "module.exports = (output, context) => output.split(' ').reverse().join(' ');\n"
    )
    config = write(tmp_path, "evalh.yaml", PROVIDERS_SUITE)
    report = tmp_path / "out.json"
    result = CliRunner().invoke(app, ["run", str(config), "--no-table", "-o", str(report)])
    assert result.exit_code == 1, result.output
    rows = {row["provider"]["label"]: row for row in json.loads(report.read_text())["results"]["results"]}
    # provider's, then the test's options.transform; the assertion's own is not the row's output
    outputs = {label: row["response"]["output"] for label, row in rows.items() if row["success"]}
    assert outputs == {"js": "hi a-pa-t", "py": "[hi a]a-t", "file": "a hi-t"}
    assert rows["broken"]["failureReason"] == 2
    assert "Transform failed: providers[3].transform threw TypeError" in rows["broken"]["error"]


def test_broken_provider_transforms_are_located_config_errors(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "evalh.yaml",
        """
        providers:
          - {id: echo, transform: "output.slice(0,"}
          - echo: {transform: "file://gone.py:fn"}
        prompts: [hi]
        defaultTest:
          options: {provider: {id: echo, transform: output}}
        tests:
          - assert: [{type: contains, value: hi}]
    """,
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    assert "evalh.yaml:3:16 providers[0].transform" in result.output and "SyntaxError" in result.output
    assert "providers[1].transform" in result.output and "gone.py was not found" in result.output
    # a grader's transform is never applied: a warning (an error under --strict), never silence
    assert "defaultTest.options.provider.transform" in result.output and "not applied" in result.output


CONTEXT_SUITE = """
prompts: ['{"answer": "Paris.", "docs": ["Paris is the capital of France.", "It is big."]}']
providers: [{id: echo, transform: JSON.parse(output)}]
defaultTest:
  options:
    transform: output.answer
    provider: {id: "openai:chat:judge", config: {apiBaseUrl: "URL", apiKey: sk-test, retryBaseDelayS: 0.01}}
  vars: {query: What is the capital of France?}
tests:
  - vars: {x: js}
    assert:
      - {type: context-relevance, threshold: 0.5, contextTransform: output.docs}
      - {type: equals, value: Paris.}
  - vars: {x: py}
    assert: [{type: context-recall, value: Paris., contextTransform: "file://ctx.py:first"}]
  - vars: {x: number}
    assert: [{type: context-relevance, contextTransform: output.docs.length}]
  - vars: {x: throws}
    assert: [{type: context-faithfulness, contextTransform: output.nope.deeper}]
"""


def test_context_transform_gives_the_context_judges_their_context(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    def answer(request: Request) -> Reply:
        system = request.json["messages"][0]["content"]
        reply = {"relevant_sentences": ["Paris is the capital of France."]}
        if "Copy, word for word" not in system:
            reply = {"sentences": [{"sentence": "Paris.", "attributed": 1}]}
        return openai_text(json.dumps(reply))

    loopback.route("POST", "/v1/chat/completions", answer)
    write(tmp_path, "ctx.py", "def first(output, context):\n    return output['docs'][:1]\n")
    config = write(tmp_path, "evalh.yaml", CONTEXT_SUITE.replace("URL", loopback.url + "/v1"))
    code, output, rows = run(config)
    assert code == 1, output
    # the JS context reads the provider-transformed object (the test's transform made the output a string)
    assert rows["js"]["success"] and rows["js"]["response"]["output"] == "Paris."
    assert rows["js"]["gradingResult"]["componentResults"][0]["score"] == 0.5  # 1 of its 2 sentences
    prompts = [request.json["messages"][-1]["content"] for request in loopback.requests]
    assert any("Paris is the capital of France.\n\nIt is big." in text for text in prompts)
    assert rows["py"]["success"], rows["py"]["gradingResult"]
    number = rows["number"]["gradingResult"]["componentResults"][0]["reason"]
    assert "contextTransform must return a string or an array of strings, got a number" in number
    throws = rows["throws"]["gradingResult"]["componentResults"][0]["reason"]
    assert "contextTransform failed: threw TypeError" in throws


def test_a_broken_context_transform_is_located_and_an_unused_one_is_a_warning(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "evalh.yaml",
        """
        tests:
          - output: x
            vars: {query: q, context: c}
            assert:
              - {type: context-recall, value: c, contextTransform: "file://gone.js"}
              - {type: contains, value: x, contextTransform: output}
    """,
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    assert "evalh.yaml:6:9 tests[0].assert[0].contextTransform" in result.output
    assert "gone.js was not found" in result.output
    assert "tests[0].assert[1].contextTransform" in result.output and "no effect on contains" in result.output


def test_validate_does_not_call_vars_a_transform_vars_defines_undefined(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "evalh.yaml",
        """
        prompts: ["{{greeting}} {{name}}"]
        providers: [echo]
        defaultTest:
          options: {transformVars: "({greeting: 'Hi'})"}
        tests:
          - vars: {x: a, name: Ada}
            assert: [{type: equals, value: "{{greeting}} Ada"}]
    """,
    )
    result = CliRunner().invoke(app, ["validate", "--strict", str(config)])
    assert result.exit_code == 0, result.output
    assert "greeting" not in result.output
    code, output, rows = run(config)
    assert code == 0 and "greeting" not in output and rows["a"]["response"]["output"] == "Hi Ada"
