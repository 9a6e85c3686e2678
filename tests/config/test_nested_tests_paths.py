"""promptfoo's path rules inside a tests file in a subfolder (``readTest``): a test's vars files
(``vars: ../vars/x.yaml``) are named from the tests file's folder; every other path (var values,
assertion files) from the config's. Paths leaving the config's tree need allowFileOutsideConfigDir."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, ConfigError

HEAD = "prompts: ['{{greeting}} {{name}}']\nproviders: [echo]\n"


def _project(root: Path, config: str, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    (root / "evalh.yaml").write_text(HEAD + config, encoding="utf-8")
    return root / "evalh.yaml"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # messages show paths relative to here


VARS = {
    "vars/ada.yaml": "greeting: Hello\nname: Ada\n",
    "vars/extra.yaml": "name: Lovelace\n",
    "vars/parts/a.yaml": "greeting: Howdy\n",
    "vars/parts/b.yaml": "name: Hopper\n",
    "cases/local.yml": "greeting: Hi\nname: Grace\n",
    "docs/name.txt": "Turing\n",
    "asserts/check.js": "module.exports = (output) => output.length > 3;\n",
}


def test_a_tests_files_vars_files_are_named_from_its_folder(tmp_path: Path) -> None:
    cases = (
        "- vars: ../vars/ada.yaml\n"
        "- vars: [../vars/ada.yaml, ../vars/extra.yaml]\n"
        "- vars: local.yml\n"
        "- vars: ../vars/parts/*.yaml\n"
        "- vars: file://local.yml\n"  # with file:// too (promptfoo reads no vars at all from it)
    )
    config = _project(tmp_path, "tests: file://cases/people.yaml\n", {**VARS, "cases/people.yaml": cases})
    names = [(test.vars["greeting"], test.vars["name"]) for test in load_suite(config).tests]
    assert names == [
        ("Hello", "Ada"),
        ("Hello", "Lovelace"),
        ("Hi", "Grace"),
        ("Howdy", "Hopper"),
        ("Hi", "Grace"),
    ]


def test_a_deeper_tests_file_climbs_from_its_own_folder(tmp_path: Path) -> None:
    config = _project(
        tmp_path,
        "tests:\n  - file://cases/more/deep.yaml\n",
        {**VARS, "cases/more/deep.yaml": "- vars: ../../vars/ada.yaml\n"},
    )
    assert load_suite(config).tests[0].vars == {"greeting": "Hello", "name": "Ada"}


def test_var_values_and_assertion_files_in_a_tests_file_are_named_from_the_config(tmp_path: Path) -> None:
    cases = (
        "- vars: {greeting: Dear, name: file://docs/name.txt}\n"
        "  assert:\n"
        "    - {type: javascript, value: file://asserts/check.js}\n"
    )
    config = _project(tmp_path, "tests: file://cases/values.yaml\n", {**VARS, "cases/values.yaml": cases})
    (test,) = load_suite(config).tests
    assert test.vars["name"] == "Turing"
    assert test.asserts[0].value == "file://asserts/check.js"


def test_a_missing_vars_file_says_where_it_was_looked_for(tmp_path: Path) -> None:
    config = _project(tmp_path, "tests: file://cases/t.yaml\n", {"cases/t.yaml": "- vars: vars/ada.yaml\n"})
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    message = str(caught.value)
    assert "cases/t.yaml:1:3 tests[0].vars: file not found:" in message
    assert "cases/vars/ada.yaml" in message
    assert "vars files named in a tests file are relative to that file's directory" in message


def test_a_vars_file_outside_the_config_tree_needs_the_option(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (tmp_path / "shared.yaml").write_text("greeting: Hey\nname: Out\n", encoding="utf-8")
    files = {"cases/t.yaml": "- vars: ../../shared.yaml\n"}
    config = _project(root, "tests: file://cases/t.yaml\n", files)
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert caught.value.exit_code == EXIT_CONFIG
    assert "tests[0].vars: '../../shared.yaml' names a file outside the config's directory" in str(
        caught.value
    )
    assert "allowFileOutsideConfigDir: true" in str(caught.value)
    allowed = _project(
        root, "evaluateOptions: {allowFileOutsideConfigDir: true}\ntests: file://cases/t.yaml\n", files
    )
    assert load_suite(allowed).tests[0].vars == {"greeting": "Hey", "name": "Out"}


def test_vars_files_of_inline_tests_are_still_named_from_the_config(tmp_path: Path) -> None:
    config = _project(tmp_path, "tests:\n  - vars: vars/ada.yaml\n", VARS)
    assert load_suite(config).tests[0].vars == {"greeting": "Hello", "name": "Ada"}


def test_an_assertion_file_outside_the_config_tree_needs_the_option(tmp_path: Path) -> None:
    # promptfoo names it from the config's folder, so ../shared/ leaves the project
    root = tmp_path / "project"
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "check.js").write_text("module.exports = () => true;\n", encoding="utf-8")
    files = {"cases/t.yaml": "- assert: [{type: javascript, value: file://../shared/check.js}]\n"}
    config = _project(root, "tests: file://cases/t.yaml\n", files)
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "tests[0].assert[0].value: 'file://../shared/check.js' names a file outside" in str(caught.value)
    assert "allowFileOutsideConfigDir: true" in str(caught.value)
    allowed = _project(
        root, "evaluateOptions: {allowFileOutsideConfigDir: true}\ntests: file://cases/t.yaml\n", files
    )
    assert load_suite(allowed).tests[0].asserts[0].value == "file://../shared/check.js"
