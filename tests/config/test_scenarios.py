"""``scenarios:`` run as promptfoo runs them (issue 27): the cross product of each scenario's config
entries and tests, after the config's own tests, merged by promptfoo's ``mergeScenarioTest`` rules;
checked against promptfoo 0.123 in benchmarks/compat/scenarios."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import TestCase
from tests.config.conftest import WriteFiles

_CONFIG = """\
prompts: ["{{phrase}} in {{language}} ({{topic}})"]
providers: [echo]
defaultTest:
  vars: {topic: weather, phrase: default}
  assert:
    - type: contains
      value: " in "
  metadata: {suite: demo}
tests:
  - vars: {phrase: plain, language: English}
scenarios:
  - description: greetings
    config:
      - vars: {language: French}
        assert:
          - type: contains
            value: French
      - vars: {language: Italian, phrase: ciao}
        description: italian entry
        options: {transform: output.toUpperCase()}
        threshold: 0.5
    tests:
      - description: hello
        vars: {phrase: hello}
        assert:
          - type: contains
            value: hello
      - vars: {phrase: goodbye}
        metadata: {kind: farewell}
  - description: no tests, so nothing runs
    config:
      - vars: {language: Dutch}
  - config:
      - vars: {language: German}
        metadata: {conversationId: own}
    tests:
      - vars: {topic: rain}
"""


def _asserted(test: TestCase) -> list[str]:
    return [str(spec.value) for spec in test.asserts]


def test_scenario_tests_follow_the_tests_as_the_cross_product_of_entries_and_tests(
    project: WriteFiles,
) -> None:
    tests = load_suite(project(_CONFIG)).tests
    shown = [(test.vars["phrase"], test.vars["language"], test.vars["topic"]) for test in tests]
    assert shown == [
        ("plain", "English", "weather"),
        ("hello", "French", "weather"),
        ("goodbye", "French", "weather"),
        ("hello", "Italian", "weather"),  # the test's vars win over the entry's
        ("goodbye", "Italian", "weather"),
        ("default", "German", "rain"),  # defaultTest's vars under the entry's and the test's
    ]
    assert [test.index for test in tests] == list(range(6))


def test_scenario_merge_keeps_promptfoo_order_of_assertions_descriptions_and_options(
    project: WriteFiles,
) -> None:
    tests = load_suite(project(_CONFIG)).tests
    # defaultTest's assertions first, then the entry's, then the test's
    assert _asserted(tests[1]) == [" in ", "French", "hello"]
    assert _asserted(tests[3]) == [" in ", "hello"]
    # the test's description wins; the entry's stands in for a test without one
    assert [test.description for test in tests[1:5]] == ["hello", None, "hello", "italian entry"]
    assert tests[4].options == {"transform": "output.toUpperCase()"}
    assert tests[4].threshold == 0.5
    assert tests[2].metadata["kind"] == "farewell"


def test_each_config_entry_numbers_a_conversation_unless_one_is_set(project: WriteFiles) -> None:
    tests = load_suite(project(_CONFIG)).tests
    assert "conversationId" not in tests[0].metadata
    ids = [test.metadata["conversationId"] for test in tests[1:]]
    # the Dutch entry (a scenario without tests) still counts: promptfoo numbers every entry
    assert ids == ["__scenario_0__", "__scenario_0__", "__scenario_1__", "__scenario_1__", "own"]
    assert tests[1].metadata["suite"] == "demo"


def test_scenarios_run_through_the_cli_with_their_verdicts(project: WriteFiles) -> None:
    config = project(_CONFIG)
    report = config.parent / "out.json"
    result = CliRunner().invoke(app, ["run", str(config), "-o", str(report), "--no-table", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
    outputs = [row["response"]["output"] for row in rows]
    assert outputs[3] == "HELLO IN ITALIAN (WEATHER)"  # the entry's options.transform
    assert [row["testIdx"] for row in rows] == list(range(6))
    assert rows[1]["testCase"]["metadata"]["conversationId"] == "__scenario_0__"


def test_scenarios_alone_add_no_empty_test(project: WriteFiles) -> None:
    config = project(
        """\
prompts: ["{{x}}"]
providers: [echo]
scenarios:
  - config: [{vars: {x: a}}, {vars: {x: b}}]
    tests: [{assert: [{type: contains, value: a}]}]
"""
    )
    tests = load_suite(config).tests
    assert [test.vars["x"] for test in tests] == ["a", "b"]


def test_scenarios_and_their_tests_come_from_files(project: WriteFiles) -> None:
    config = project(
        """\
prompts: ["{{x}} {{y}}"]
providers: [echo]
scenarios: file://scenarios/*.yaml
""",
        {
            "scenarios/a.yaml": "- config: [{vars: {x: one}}]\n  tests: file://cases.yaml\n",
            "scenarios/b.yaml": "config: [{vars: {x: two}}]\n"
            "tests: [file://cases.yaml, {vars: {y: inline}}]\n",
            "cases.yaml": "- vars: {y: first}\n- vars: {y: second}\n",
        },
    )
    tests = load_suite(config).tests
    assert [f"{test.vars['x']} {test.vars['y']}" for test in tests] == [
        "one first",
        "one second",
        "two first",
        "two second",
        "two inline",
    ]
    assert tests[3].metadata["conversationId"] == "__scenario_1__"


def test_a_scenario_without_config_is_a_located_error(project: WriteFiles) -> None:
    config = project("prompts: [x]\nproviders: [echo]\nscenarios:\n  - tests: [{vars: {a: 1}}]\n")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    message = str(caught.value)
    assert "evalh.yaml:4:5 scenarios[0]" in message and "missing required key 'config'" in message


def test_a_bad_scenario_in_a_file_is_located_in_that_file(project: WriteFiles) -> None:
    config = project(
        "prompts: [x]\nproviders: [echo]\nscenarios: [file://s.yaml]\n",
        {"s.yaml": "- config: [{vars: {a: 1}}]\n  tests:\n    - assert: [{type: contians, value: x}]\n"},
    )
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "s.yaml:3:17 [0].tests[0].assert[0].type" in str(caught.value)
    assert "Did you mean 'contains'" in str(caught.value)


def test_a_problem_in_a_config_entry_is_located_in_the_entry(project: WriteFiles) -> None:
    config = project(
        """\
prompts: ["{{x}}"]
providers: [echo]
scenarios:
  - config:
      - assert:
          - type: similar
            value: x
            threshold: 7
    tests:
      - vars: {x: 1}
"""
    )
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    # line 6 is the entry's assertion (the merged test's assert[0]), not the test on line 10
    assert "evalh.yaml:6:13 scenarios[0].config[0].tests[0].assert[0]" in str(caught.value)


def test_scenarios_of_several_configs_concatenate(project: WriteFiles) -> None:
    first = project("prompts: ['{{x}}']\nproviders: [echo]\nscenarios: [file://s.yaml]\n", name="a.yaml")
    second = project(
        "scenarios:\n  - config: [{vars: {x: b}}]\n    tests: [{}]\n",
        {
            "sub/s.yaml": "config: [{vars: {x: sub}}]\ntests: [{}]\n",
            "s.yaml": "config: [{vars: {x: a}}]\ntests: [{}]\n",
        },
        name="b.yaml",
    )
    third = project("scenarios: [file://s.yaml]\n", name="sub/c.yaml")
    tests = load_suite([first, second, third]).tests
    assert [test.vars["x"] for test in tests] == ["a", "b", "sub"]  # each file:// from its own config


def test_a_scenarios_tests_may_come_from_a_generator_and_a_subfolder_tests_file(project: WriteFiles) -> None:
    config = project(
        """\
prompts: ["{{x}} {{y}}"]
providers: [echo]
scenarios:
  - config: [{vars: {x: one}}]
    tests: [file://gen.py:make, file://cases/tests.yaml]
""",
        {
            "gen.py": "def make(config=None):\n    return [{'vars': {'y': 'generated'}}]\n",
            "cases/tests.yaml": "- vars: file://../vars/y.yaml\n",  # named from the tests file's folder
            "vars/y.yaml": "y: from-vars-file\n",
        },
    )
    tests = load_suite(config).tests
    assert [test.vars["y"] for test in tests] == ["generated", "from-vars-file"]
