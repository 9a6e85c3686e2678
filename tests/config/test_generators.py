"""Test generators (promptfoo's ``tests: file://gen.py:fn``, ``file://gen.js``, ``{path, config}``): the
real Python worker and the real embedded JavaScript engine, their tests checked like a file's."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config import generators
from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, ConfigError
from tests.config.conftest import WriteFiles

HEAD = "prompts: ['{{word}}']\nproviders: [echo]\n"

PY_GEN = """
def generate_tests(config=None):
    return [{"vars": {"word": w}, "assert": [{"type": "contains", "value": w}]} for w in ("a", "b")]


def with_config(config):
    return [{"description": config["label"], "vars": {"word": word}} for word in config["words"]]


class Suite:
    @staticmethod
    def cases():
        return [{"vars": {"word": "method"}}]


def tuples():
    return [{"vars": {"word": "t"}, "assert": ({"type": "contains", "value": "t"},)}]


def one_bad():
    return [{"vars": {"word": "ok"}}, {"vars": {"word": "x"}, "assert": [{"type": "no-such-type"}]}]


def not_a_list():
    return {"vars": {"word": "x"}}


def raises():
    raise ValueError("dataset missing")


def a_set():
    return [{"vars": {"word": {1, 2}}}]


def outside():
    return [{"vars": {"word": "file://../secret.txt"}}]


def sleeps():
    import time
    time.sleep(60)
    return []
"""

JS_GEN = """
module.exports = async function (config) {
  return [{vars: {word: config === undefined ? 'js' : 'configured'}}];
};
module.exports.named = function () { return [{vars: {word: 'named'}}, {vars: {word: 'two'}}]; };
module.exports.withConfig = function (config) {
  return config.words.map(function (w) { return {vars: {word: w}}; });
};
module.exports.throws = function () { throw new Error('no cases'); };
module.exports.nothing = function () {};
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # messages show paths relative to here


def _with_generators(project: WriteFiles, tests: str) -> Path:
    files = {"gen.py": PY_GEN, "gen.js": JS_GEN, "list.js": "module.exports = [{vars: {word: 'l'}}];\n"}
    return project(HEAD + tests, {**files, "words.yaml": "[x, y]\n"})


def _words(config: Path) -> list[str]:
    return [str(test.vars["word"]) for test in load_suite(config).tests]


def _refused(config: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert caught.value.exit_code == EXIT_CONFIG
    return str(caught.value)


def test_python_generators_sit_in_a_tests_list_beside_inline_tests(project: WriteFiles) -> None:
    config = _with_generators(
        project,
        "tests:\n"
        "  - vars: {word: inline}\n"
        "  - file://gen.py\n"  # promptfoo's default function: generate_tests
        "  - path: file://gen.py:with_config\n"
        "    config: {label: conf, words: [c, d]}\n"
        "  - vars: {word: last}\n",
    )
    suite = load_suite(config)
    assert [str(test.vars["word"]) for test in suite.tests] == ["inline", "a", "b", "c", "d", "last"]
    assert [test.index for test in suite.tests] == [0, 1, 2, 3, 4, 5]
    assert suite.tests[1].asserts[0].value == "a"
    assert suite.tests[3].description == "conf"


def test_tests_may_be_one_generator_alone(project: WriteFiles) -> None:
    assert _words(_with_generators(project, "tests: file://gen.py:generate_tests\n")) == ["a", "b"]
    assert _words(_with_generators(project, "tests: file://gen.py:Suite.cases\n")) == ["method"]


def test_the_path_and_config_form_reads_the_configs_data_files(project: WriteFiles) -> None:
    config = _with_generators(
        project, "tests:\n  path: file://gen.py:with_config\n  config: {label: l, words: file://words.yaml}\n"
    )
    assert _words(config) == ["x", "y"]


def test_javascript_generators_are_called_with_their_config_and_awaited(project: WriteFiles) -> None:
    config = _with_generators(
        project,
        "tests:\n"
        "  - file://gen.js\n"
        "  - file://gen.js:named\n"
        "  - path: file://gen.js\n"
        "    config: {}\n"
        "  - path: file://gen.js:withConfig\n"
        "    config: {words: [p, q]}\n",
    )
    assert _words(config) == ["js", "named", "two", "configured", "p", "q"]


def test_a_javascript_module_may_export_its_list_of_tests(project: WriteFiles) -> None:
    files = {"esm.mjs": "export default [{vars: {word: 'esm'}}, {vars: {word: 'two'}}];\n"}
    config = _with_generators(project, "tests:\n  - file://list.js\n  - file://esm.mjs\n")
    project(config.read_text(), files)
    assert _words(config) == ["l", "esm", "two"]


def test_typescript_and_module_generators_run(project: WriteFiles) -> None:
    files = {
        "gen.ts": "export default function (): Array<{vars: {word: string}}> {\n"
        "  return [{vars: {word: 'ts'}}];\n}\n",
        "gen.mjs": "export function made() { return [{vars: {word: 'mjs'}}]; }\n",
    }
    config = project(HEAD + "tests:\n  - file://gen.ts\n  - file://gen.mjs:made\n", files)
    assert _words(config) == ["ts", "mjs"]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("file://gen.py:raises", "test generator gen.py:raises raised ValueError: dataset missing"),
        ("file://gen.py:not_a_list", "test generator gen.py:not_a_list returned an object, not a list"),
        ("file://gen.py:missing", "gen.py has no function missing()"),
        ("file://gen.py:a_set", "gen.py:a_set returned tests that are not plain JSON data (a set)"),
        ("file://gen.js:throws", "test generator gen.js:throws threw Error: no cases"),
        ("file://gen.js:nothing", "gen.js:nothing returned nothing (null / None), not a list"),
        ("file://gen.js:missing", "test generator gen.js:missing returned nothing (null / None), not a list"),
        ("file://nope.py", "evalh.yaml:5:5 tests[1]: file not found: nope.py"),
    ],
)
def test_a_generator_that_gives_no_tests_is_a_located_error(
    project: WriteFiles, entry: str, expected: str
) -> None:
    config = _with_generators(project, f"tests:\n  - vars: {{word: w}}\n  - {entry}\n")
    message = _refused(config)
    assert expected in message
    assert "evalh.yaml:5:5 tests[1]" in message


def test_a_generated_test_is_checked_and_located_in_the_generator(project: WriteFiles) -> None:
    message = _refused(_with_generators(project, "tests:\n  - vars: {word: w}\n  - file://gen.py:one_bad\n"))
    assert "gen.py:one_bad()[1] tests[2].assert[0].type" in message
    assert "no-such-type" in message


def test_a_generated_test_may_name_files_only_inside_the_config_directory(project: WriteFiles) -> None:
    message = _refused(_with_generators(project, "tests: file://gen.py:outside\n"))
    assert "gen.py:outside()[0] tests[0].vars.word: 'file://../secret.txt' names a file outside" in message
    assert "allowFileOutsideConfigDir" in message


def test_too_many_generated_tests_are_refused(project: WriteFiles, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generators, "MAX_GENERATED_TESTS", 1)
    message = _refused(_with_generators(project, "tests: file://gen.py\n"))
    assert "gen.py:generate_tests returned 2 tests; at most 1 are accepted" in message


def test_a_generator_that_never_returns_is_stopped(
    project: WriteFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(generators, "TEST_GENERATOR_TIMEOUT_S", 0.5)
    assert "gen.py:sleeps did not return within 0.5 s" in _refused(
        _with_generators(project, "tests: file://gen.py:sleeps\n")
    )


def test_a_bad_path_entry_is_a_schema_error(project: WriteFiles) -> None:
    message = _refused(_with_generators(project, "tests:\n  - path: file://gen.py\n    confg: {}\n"))
    assert "evalh.yaml:5:5 tests[0].confg: unknown key 'confg'. Did you mean 'config'?" in message


def test_run_and_validate_report_a_raising_generator_without_a_traceback(project: WriteFiles) -> None:
    config = _with_generators(project, "tests: file://gen.py:raises\n")
    for command in ("run", "validate"):
        result = CliRunner().invoke(app, [command, str(config)])
        assert result.exit_code == EXIT_CONFIG, result.output
        assert "raised ValueError: dataset missing" in result.output
        assert "Traceback" not in result.output


def test_generated_tests_are_taken_as_json_data(project: WriteFiles) -> None:
    (test,) = load_suite(_with_generators(project, "tests: file://gen.py:tuples\n")).tests
    assert [spec.value for spec in test.asserts] == ["t"]


def test_a_path_entry_may_name_a_tests_file(project: WriteFiles) -> None:
    config = project(HEAD + "tests:\n  - path: file://cases.yaml\n", {"cases.yaml": "- vars: {word: f}\n"})
    assert _words(config) == ["f"]
