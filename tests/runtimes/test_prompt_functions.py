"""promptfoo's prompt functions (issue 10, item 3), through the CLI with the real Python worker and the
real JavaScript engine: ``file://prompt.py:fn`` and ``file://prompt.js[:fn]`` are called per row with
``{vars, provider}``, and what they return is the prompt; failures are ERROR rows, a missing file or
function a located config error at validate.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.config.test_promptfoo_semantics import evalh, run_rows, write

PY_PROMPTS = """
def greet(context):
    return f"Hello {context['vars']['name']} from {context['provider']['id']}"

def chat(context):
    return [{"role": "system", "content": "Be brief"}, {"role": "user", "content": context["vars"]["name"]}]

def wrapped(context):
    return {"prompt": "wrapped " + context["vars"]["name"]}

def broken(context):
    raise ValueError("no prompt today")

def nothing(context):
    return None

class Prompts:
    @staticmethod
    def formal(context):
        return "Dear " + context["vars"]["name"]
"""

JS_PROMPTS = """
module.exports = function (context) { return 'js ' + context.vars.name + ' ' + context.provider.id; };
module.exports.shout = (context) => context.vars.name.toUpperCase() + '!';
"""


SCRIPT = """
import json, sys
context = json.loads(sys.argv[1])
print("script {{ not rendered }} " + context["vars"]["name"] + " " + context["provider"]["id"])
"""


def test_python_and_javascript_prompt_functions_give_each_rows_prompt(tmp_path: Path) -> None:
    write(tmp_path / "prompts.py", PY_PROMPTS)
    write(tmp_path / "script.py", SCRIPT)
    write(tmp_path / "prompts.js", JS_PROMPTS)
    config = write(
        tmp_path / "c.yaml",
        """
        prompts:
          - file://prompts.py:greet
          - file://prompts.py:chat
          - file://prompts.py:wrapped
          - file://script.py
          - file://prompts.py:Prompts.formal
          - file://prompts.js
          - id: file://prompts.js:shout
            label: shouting
        providers: [echo]
        tests:
          - vars: {name: Ada}
          - vars: {name: Bob}
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    outputs = [row["response"]["output"] for row in rows]
    chat = json.dumps(
        [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Ada"}], indent=2
    )
    assert outputs[:7] == [
        "Hello Ada from echo",
        chat,
        "wrapped Ada",
        "script {{ not rendered }} Ada echo",  # a file without :fn runs as a script; not a template
        "Dear Ada",  # file://x.py:Class.method, as promptfoo allows
        "js Ada echo",
        "ADA!",
    ]
    assert outputs[7] == "Hello Bob from echo"
    labels = [row["prompt"]["label"] for row in rows[:7]]
    assert labels[0] == "prompts.py:greet" and labels[6] == "shouting"


def test_a_failing_prompt_function_is_an_error_row(tmp_path: Path) -> None:
    write(tmp_path / "prompts.py", PY_PROMPTS)
    write(tmp_path / "loop.js", "module.exports = function (context) { while (true) {} };\n")
    write(tmp_path / "fails.py", "import sys\nsys.exit('bad context')\n")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: [file://prompts.py:broken, file://prompts.py:nothing, file://loop.js, file://fails.py]
        providers: [echo]
        evaluateOptions: {timeoutMs: 500}
        tests:
          - vars: {name: Ada}
        """,
    )
    result, rows = run_rows(config)
    errors = [row["error"] for row in rows]
    assert [row["failureReason"] for row in rows] == [2, 2, 2, 2], errors
    assert "ValueError: no prompt today" in errors[0]
    assert "must return a string or chat messages, got NoneType" in errors[1]
    assert "Prompt function file://loop.js failed: timed out" in errors[2]
    assert "exited with code 1: bad context" in errors[3]
    assert result.exit_code != 0


def test_a_missing_prompt_function_is_a_located_config_error(tmp_path: Path) -> None:
    write(tmp_path / "prompts.py", PY_PROMPTS)
    config = write(
        tmp_path / "c.yaml",
        """
        prompts:
          - file://prompts.py:absent
          - file://gone.py:greet
          - file://gone.js
        providers: [echo]
        """,
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert "c.yaml:3" in result.stderr and "prompts.py defines no function 'absent'" in result.stderr
    assert "c.yaml:4" in result.stderr and "gone.py was not found" in result.stderr
    assert "c.yaml:5" in result.stderr and "gone.js was not found" in result.stderr


def test_a_prompt_given_as_json_text_is_sent_as_promptfoo_sends_it(tmp_path: Path) -> None:
    # promptfoo parses a prompt function's or exec program's text that is a JSON object or list: a
    # message list is a chat prompt, anything else is sent indented by two spaces
    write(
        tmp_path / "make.py",
        "import json, sys\n"
        "context = json.loads(sys.argv[-1])\n"
        "print(json.dumps([{'role': 'user', 'content': 'About ' + context['vars']['name']}]))\n",
    )
    write(
        tmp_path / "prompt.py",
        "def text(context):\n    return '{\"ask\": \"' + context['vars']['name'] + '\"}'\n",
    )
    config = write(
        tmp_path / "c.yaml",
        """
        prompts:
          - {raw: "exec:python3 make.py", label: program}
          - {raw: "file://prompt.py:text", label: function}
        providers: [echo]
        tests: [{vars: {name: Ada}}]
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    by_label = {row["prompt"]["label"]: row["response"]["output"] for row in rows}
    assert json.loads(by_label["program"]) == [{"role": "user", "content": "About Ada"}]
    assert by_label["program"].startswith('[\n  {\n    "role": "user"')  # a chat prompt, echoed indented
    assert by_label["function"] == '{\n  "ask": "Ada"\n}'
