"""Extension hooks (promptfoo's ``extensions: [file://hooks.py:fn]``): beforeAll while the config loads,
beforeEach before each row, afterEach and afterAll once the run is over; the real Python worker and
the real embedded JavaScript engine, through the CLI in process."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, ConfigError
from tests.config.test_promptfoo_semantics import evalh, run_rows, write

HOOKS_PY = """
import os


def legacy(hook_name, context):
    if hook_name == "beforeAll":
        added = {"vars": {"word": "added"}, "assert": [{"type": "contains", "value": "added"}]}
        context["suite"]["tests"].append(added)
        context["suite"]["defaultTest"]["assert"].append({"type": "contains", "value": "Say"})
        return context
    if hook_name == "beforeEach":
        context["test"]["vars"]["word"] = "pirate " + context["test"]["vars"]["word"]
        return context
    if hook_name in ("afterEach", "afterAll"):
        with open(os.path.join(os.path.dirname(__file__), "log.txt"), "a") as log:
            if hook_name == "afterEach":
                log.write("each %s %s\\n" % (context["result"]["success"], context["test"]["vars"]["word"]))
            else:
                log.write("all %d\\n" % len(context["results"]))
        if hook_name == "afterEach":
            context["result"]["namedScores"] = {"mine": 1}
            return context


def beforeAll(context, options):
    context["suite"]["prompts"] = []
    return context


def bad_tests(hook_name, context):
    if hook_name == "beforeAll":
        context["suite"]["tests"].append({"assert": [{"type": "no-such-type"}]})
        return context


def raises(hook_name, context):
    raise RuntimeError("hook broke")


def too_many(hook_name, context):
    if hook_name == "beforeAll":
        context["suite"]["tests"] = [{"vars": {"word": "w"}}] * 100_001
        return context


def huge_var(hook_name, context):
    if hook_name == "beforeEach":
        context["test"]["vars"]["word"] = "w" * 300_000
        return context
"""

HOOKS_JS = """
module.exports.beforeEach = function (context, options) {
  context.test.vars.word = context.test.vars.word + ' via ' + options.hookName;
  return context;
};
module.exports.asserts = function (hookName, context) {
  if (hookName === 'beforeEach') { context.test.assert = [{type: 'equals', value: 'x'}]; return context; }
};
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "hooks.py", HOOKS_PY)
    write(tmp_path / "hooks.js", HOOKS_JS)
    return tmp_path


def _config(project: Path, *extensions: str) -> Path:
    listed = "".join(f"  - {ref}\n" for ref in extensions)
    head = "prompts: ['Say {{word}}']\nproviders: [echo]\n"
    return write(project / "c.yaml", f"{head}extensions:\n{listed}tests:\n  - vars: {{word: hi}}\n")


def test_before_all_adds_tests_and_default_assertions_while_the_config_loads(project: Path) -> None:
    suite = load_suite(_config(project, "file://hooks.py:legacy"))
    assert [test.vars["word"] for test in suite.tests] == ["hi", "added"]
    assert [spec.value for spec in suite.tests[1].asserts] == ["Say", "added"]
    assert suite.extensions == ("file://hooks.py:legacy",)


def test_before_each_changes_vars_and_after_hooks_are_told_of_each_row(project: Path) -> None:
    result, rows = run_rows(_config(project, "file://hooks.py:legacy", "file://hooks.js:beforeEach"))
    assert [row["response"]["output"] for row in rows] == [
        "Say pirate hi via beforeEach",
        "Say pirate added via beforeEach",
    ]
    assert rows[0]["vars"]["word"] == "pirate hi via beforeEach"  # as promptfoo reports the changed test
    assert (project / "log.txt").read_text() == (
        "each True pirate hi via beforeEach\neach True pirate added via beforeEach\nall 2\n"
    )
    # the afterEach hook's namedScores are not applied, and evalh says so
    assert "changed result.namedScores; evalh does not apply" in result.stderr
    assert "mine" not in rows[0]["namedScores"]


def test_a_before_each_change_evalh_cannot_take_fails_the_row(project: Path) -> None:
    _, rows = run_rows(_config(project, "file://hooks.js:asserts"))
    assert rows[0]["success"] is False
    assert "a beforeEach hook changed test.assert; evalh takes" in rows[0]["error"]


def test_a_before_each_test_larger_than_a_reply_fails_the_row(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_MAX_REPLY_MB", "0.25")  # past it, the var would fill every report of the row
    _, rows = run_rows(_config(project, "file://hooks.py:huge_var"))
    assert rows[0]["success"] is False
    assert "(beforeEach) returned a test larger than 262144 bytes, the cap on one reply" in rows[0]["error"]
    assert len(rows[0]["prompt"]["raw"]) < 1000


@pytest.mark.parametrize(
    ("extension", "where", "message"),
    [
        (
            "file://hooks.py:beforeAll",
            "c.yaml:3:",
            "changed suite.prompts; evalh takes a beforeAll hook's tests",
        ),
        ("file://hooks.py:raises", "c.yaml:3:", "(beforeAll) raised RuntimeError: hook broke"),
        ("file://hooks.py", "c.yaml:4:5 extensions[0]", "names no function"),
        ("file://hooks.py:missing", "c.yaml:4:5 extensions[0]", "defines no function 'missing'"),
        ("file://hooks.py:bad_tests", "hooks.py:bad_tests(beforeAll).suite.tests[1]", "'no-such-type'"),
        ("file://hooks.py:too_many", "c.yaml:3:", "returned 100,001 tests; at most 100,000 are accepted"),
    ],
)
def test_a_hook_that_cannot_run_or_changes_what_evalh_built_is_a_config_error(
    project: Path, extension: str, where: str, message: str
) -> None:
    config = _config(project, extension)
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert caught.value.exit_code == EXIT_CONFIG
    assert where in str(caught.value) and message in str(caught.value)
    result = evalh("validate", str(config))
    assert result.exit_code == EXIT_CONFIG and "Traceback" not in result.stderr
