"""Each assertion's value rule is declared once, at registration (``value_schema``), and the config
schema's per-type ``allOf`` rules say exactly the same thing: walked in both directions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from evalh.assertions.registry import all_assertions, get_assertion
from evalh.config.checks import value_problem
from evalh.config.schema import load_schema


def _schema_rules() -> list[tuple[set[str], Mapping[str, Any]]]:
    """(base types, then-clause) of every per-type rule of the schema's assertion definition."""
    rules = []
    for rule in load_schema()["$defs"]["assertion"]["allOf"]:
        names = {name.removeprefix("not-") for name in rule["if"]["properties"]["type"]["enum"]}
        rules.append((names, rule["then"]))
    return rules


def _schema_value_rules() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for names, then in _schema_rules():
        if "value" in then.get("properties", {}):
            for name in names:
                assert name not in found, f"{name}: two schema rules shape its value"
                found[name] = then["properties"]["value"]
    return found


def test_schema_value_rules_equal_the_registry_declarations() -> None:
    declared = {name: dict(d.value_schema) for name, d in all_assertions().items() if d.value_schema}
    assert declared, "no type declares its value's shape"
    # one dict equality: every schema rule is declared, and every declaration is in the schema
    assert _schema_value_rules() == declared


def test_schema_rules_name_only_registered_types() -> None:
    registry = all_assertions()
    for names, _then in _schema_rules():
        assert names <= set(registry), names - set(registry)


def test_a_value_the_schema_requires_is_required_by_the_registry_and_back() -> None:
    registry = all_assertions()
    required_by_schema = {
        name for names, then in _schema_rules() if "value" in then.get("required", []) for name in names
    }
    assert all(registry[name].requires_value for name in required_by_schema)
    shaped = {name for name, d in registry.items() if d.value_schema}
    assert {name for name in shaped if registry[name].requires_value} <= required_by_schema


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
        ("contains", None, "needs a value"),
    ],
)
def test_validate_checks_the_declared_shape(name: str, value: Any, problem: str) -> None:
    definition = get_assertion(name)
    assert definition is not None
    found = value_problem(definition, value, {})
    assert found is not None and problem in found, found


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("word-count", 5),
        ("word-count", {"max": 3}),
        ("contains", 7),
        ("contains-all", "a, b"),
        ("is-json", {}),
    ],
)
def test_good_values_pass(name: str, value: Any) -> None:
    definition = get_assertion(name)
    assert definition is not None
    assert value_problem(definition, value, {}) is None
