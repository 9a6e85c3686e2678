"""Value rules once: each assertion declares its value's shape (and its config keys) at registration;
the config schema's assertion section is generated from those declarations, and validate checks every
rendered value against them. The schema file itself names no assertion type."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.assertions.registry import all_assertions, get_assertion
from evalh.cli.app import app
from evalh.config.checks import value_problem
from evalh.config.schema import base_schema, load_schema, schema_path

REGISTRY = all_assertions()


def _schema_rules() -> dict[str, Mapping[str, Any]]:
    """base type -> then-clause of its rule in the assembled schema's assertion definition."""
    rules: dict[str, Mapping[str, Any]] = {}
    for rule in load_schema()["$defs"]["assertion"]["allOf"]:
        if "then" not in rule:
            continue
        names = {name.removeprefix("not-") for name in rule["if"]["properties"]["type"]["enum"]}
        for name in names:
            assert name not in rules, f"{name}: two schema rules shape it"
            rules[name] = rule["then"]
    return rules


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_type_declares_its_value(name: str) -> None:
    declared = REGISTRY[name].value_schema
    assert declared is not None, f"{name} declares no value_schema"
    assert declared.get("description"), f"{name}'s value_schema has no description (editors show it)"


def test_the_schema_value_rules_are_the_declarations_both_ways() -> None:
    rules = _schema_rules()
    assert set(rules) == set(REGISTRY)  # a rule per registered type, and for no other
    for name, then in rules.items():
        assert then["properties"]["value"] == dict(REGISTRY[name].value_schema or {}), name
        required = set(then.get("required", []))
        assert ("value" in required) is REGISTRY[name].requires_value, name
        assert ("threshold" in required) is REGISTRY[name].requires_threshold, name


def test_the_schema_config_rules_are_the_declarations() -> None:
    for name, then in _schema_rules().items():
        definition = REGISTRY[name]
        config = then["properties"]["config"]
        declared = set(definition.config_schema or {})
        scored = {"binary"} if definition.direction is not None else set()
        assert set(config["properties"]) == declared | scored, name
        assert config["additionalProperties"] is definition.open_config, name


def test_the_schema_file_names_no_assertion_type() -> None:
    base = base_schema()
    assertion = base["$defs"]["assertion"]
    assert "enum" not in assertion["properties"]["type"] and "allOf" not in assertion
    text = schema_path().read_text(encoding="utf-8")
    for name in REGISTRY:
        assert f'"{name}"' not in text and f'"not-{name}"' not in text, name


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("word-count", "5", "value: must be a whole number or a mapping"),  # promptfoo: never a string
        ("word-count", {"min": 1, "least": 2}, "value.least: unknown key 'least'"),
        ("contains", "", "value: must not be empty"),
        ("contains-any", [], "value: must have at least 1 item"),
        ("regex", 3, "value: must be a string"),
        ("similar", [1], "value[0]: must be a string"),
        ("is-json", 3, "value: must be a mapping"),
        ("contains", None, "value: needs a value"),
        ("llm-rubric", "  ", "value: must not be empty or blank"),
        ("refusal-quality", "yes", "value: must be true or false"),
        ("latency", 100, "value: latency takes no value"),
    ],
)
def test_validate_checks_the_declared_shape(name: str, value: Any, problem: str) -> None:
    definition = get_assertion(name)
    assert definition is not None
    found = value_problem(definition, value, {})
    assert found is not None and found.startswith(problem), found


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("word-count", 5),
        ("word-count", {"max": 3}),
        ("contains", 7),
        ("contains-all", "a, b"),
        ("is-json", {}),
        ("latency", ""),
        ("answer-relevance", "ignored, as promptfoo ignores it"),
    ],
)
def test_good_values_pass(name: str, value: Any) -> None:
    definition = get_assertion(name)
    assert definition is not None
    assert value_problem(definition, value, {}) is None


def _config(tmp_path: Path, *assertions: str) -> Path:
    """evalh.yaml with one test (a recorded output) holding ``assertions`` (YAML flow mappings)."""
    config = tmp_path / "evalh.yaml"
    rows = "".join(f"      - {assertion}\n" for assertion in assertions)
    config.write_text(f"tests:\n  - output: HELLO\n    assert:\n{rows}", encoding="utf-8")
    return config


def _validate(tmp_path: Path, assertion: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(_config(tmp_path, assertion))])
    return result.exit_code, result.output


def test_a_type_absent_from_the_registry_is_refused_with_a_did_you_mean(tmp_path: Path) -> None:
    code, output = _validate(tmp_path, "{type: contians, value: x}")
    assert code == 2
    assert "evalh.yaml:4:10 tests[0].assert[0].type: unknown assertion type 'contians'" in output
    assert "Did you mean 'contains'?" in output


def test_a_rendered_value_is_checked_where_it_is_written(tmp_path: Path) -> None:
    # a template can render what its literal form hid; validate checks the rendered value, located
    (tmp_path / "items.json").write_text("[]", encoding="utf-8")
    code, output = _validate(tmp_path, "{type: contains-any, value: file://items.json}")
    assert code == 2
    assert "tests[0].assert[0].value: contains-any: must have at least 1 item(s)" in output


# A family of one type, registered the way every family registers, in a fresh interpreter: the schema
# file does not know it, the assembled schema and validate do.
_NEW_FAMILY = """
import sys
from evalh.assertions.registry import all_assertions, assertion
from evalh.model import Measurement

all_assertions()


@assertion(
    "shouts",
    family="test",
    description="The output is in capitals",
    value_schema={"type": "boolean", "description": "Whether capitals are expected."},
    config_schema={"strict": {"type": "boolean", "description": "No lower-case letter at all."}},
)
def shouts(ctx):
    return Measurement.pass_fail(ctx.output_text.isupper() is (ctx.value is not False), "capitals")


from evalh.cli.app import main

sys.argv = ["evalh", *sys.argv[1:]]
main()
"""


def _with_new_type(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "new_family.py"
    script.write_text(textwrap.dedent(_NEW_FAMILY), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )


def test_a_registered_type_absent_from_the_schema_file_is_accepted(tmp_path: Path) -> None:
    assert '"shouts"' not in schema_path().read_text(encoding="utf-8")
    config = _config(
        tmp_path, "{type: shouts, value: true, config: {strict: true}}", "{type: not-shouts, value: false}"
    )
    result = _with_new_type(tmp_path, "validate", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid (1 tests, 2 assertions" in result.stdout
    schema = json.loads(_with_new_type(tmp_path, "schema").stdout)
    assert {"shouts", "not-shouts"} <= set(schema["$defs"]["assertion"]["properties"]["type"]["enum"])


def test_a_new_types_mistakes_are_located_with_did_you_means(tmp_path: Path) -> None:
    config = _config(
        tmp_path, "{type: shouts, value: 3}", "{type: shouts, config: {strikt: true}}", "{type: shuots}"
    )
    result = _with_new_type(tmp_path, "validate", str(config))
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "evalh.yaml:4:24 tests[0].assert[0].value: must be true or false (got a whole number 3)"
        in result.stderr
    )
    assert "tests[0].assert[1].config.strikt: unknown key 'strikt'. Did you mean 'strict'?" in result.stderr
    assert "tests[0].assert[2].type: unknown assertion type 'shuots'. Did you mean 'shouts'?" in result.stderr


def test_schema_command_prints_and_writes_the_assembled_schema(tmp_path: Path) -> None:
    printed = CliRunner().invoke(app, ["schema"])
    assert printed.exit_code == 0 and json.loads(printed.output) == load_schema()
    target = tmp_path / "evalh.schema.json"
    written = CliRunner().invoke(app, ["schema", "-o", str(target)])
    assert written.exit_code == 0 and str(target) in written.output
    assert json.loads(target.read_text(encoding="utf-8")) == load_schema()
    assert "similar:euclidean" in load_schema()["$defs"]["assertion"]["properties"]["type"]["enum"]
    refused = CliRunner().invoke(app, ["schema", "-o", str(tmp_path)])  # a directory
    assert refused.exit_code == 2 and "cannot write the schema" in refused.output


@pytest.mark.parametrize(
    ("good", "bad", "problem"),
    [
        (
            "{type: rouge-n, value: x, config: {n: 2}}",
            "{type: rouge-n, value: x, config: {n: 0}}",
            "config.n",
        ),
        (
            "{type: bertscore, value: x, provider: local, config: {baseline: 0.5}}",
            "{type: bertscore, value: x, provider: local, config: {baseline: 1.5}}",
            "config.baseline",
        ),
        ("{type: llm-rubric, value: fair}", "{type: llm-rubric, value: '  '}", "value"),
        # True equals 1 (and hashes as 1) in Python: a shape must still tell a flag from a number
        ("{type: equals, value: HI, weight: 1}", "{type: equals, value: HI, weight: true}", "weight"),
        (
            "{type: llm-rubric, value: fair, threshold: 0.5}",
            "{type: llm-rubric, value: fair, threshold: .nan}",
            "threshold",
        ),
    ],
)
def test_a_bad_value_is_refused_after_a_good_one_of_the_same_shape(
    tmp_path: Path, good: str, bad: str, problem: str
) -> None:
    # 10,000 tests validate through a cache of valid shapes: a shape must tell these apart
    config = tmp_path / "evalh.yaml"
    config.write_text(
        f"tests:\n  - output: HI\n    assert: [{good}]\n  - output: HI\n    assert: [{bad}]\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["validate", "--grader", "openai:chat:gpt-4o-mini", str(config)])
    assert result.exit_code == 2, result.output
    assert f"tests[1].assert[0].{problem}" in result.output and "tests[0]" not in result.output
