"""The structured family: is-json and contains-json, with and without a JSON Schema."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from evalh.assertions import structured
from evalh.assertions.registry import all_assertions
from evalh.assertions.strings import loads_strict
from evalh.assertions.structured import extract_json_objects, schema_problem
from evalh.model import AssertionResult
from tests.assertions.helpers import definition_of, grade, make_context

PERSON = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "email": {"type": "string", "format": "email"},
    },
}

PERSON_YAML = """
type: object
required: [name, age]
properties:
  name: {type: string}
  age: {type: integer, minimum: 0}
"""


def run(assertion_type: str, output: Any, value: Any = None) -> AssertionResult:
    return grade(make_context(assertion_type, value=value, output=output))


def check(assertion_type: str, value: Any) -> str | None:
    definition = definition_of(assertion_type)
    assert definition.check is not None
    return definition.check(value, {})


def test_structured_types_are_registered() -> None:
    registry = all_assertions()
    for name in ("is-json", "contains-json"):
        assert registry[name].family == "structured"
        assert not registry[name].requires_value  # the schema is optional
        assert registry[name].check is not None
        assert registry[name].default_threshold is None


# ------------------------------------------------------------------------------------- is-json


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        ('{"a": 1}', True),
        ("  [1, 2, 3]\n", True),
        ("1", True),  # any JSON value, as JSON.parse accepts
        ("true", True),
        ('"text"', True),
        ("null", True),
        ("{'a': 1}", False),  # single quotes
        ('{"a": 1,}', False),  # trailing comma
        ('Here: {"a": 1}', False),  # not the whole output
        ("NaN", False),  # JavaScript rejects it, so do we
        ('{"a": Infinity}', False),
        ("", False),
        (None, False),
        ({"a": 1}, True),  # non-string output is already JSON data
        ([1, 2], True),
        ('{"ünï": "çødé ✓"}', True),
    ],
)
def test_is_json_without_schema(output: Any, passed: bool) -> None:
    result = run("is-json", output)
    assert result.passed is passed
    assert result.score == float(passed)
    assert not result.error
    assert result.reason.startswith("Output is valid JSON" if passed else "Output is not valid JSON")


@pytest.mark.parametrize("schema", [PERSON, PERSON_YAML])
def test_is_json_with_a_schema(schema: Any) -> None:
    good = run("is-json", '{"name": "Ada", "age": 36}', schema)
    assert good.passed
    assert good.reason == "Output is valid JSON matching the schema"

    bad = run("is-json", '{"name": "Ada", "age": "old"}', schema)
    assert not bad.passed and not bad.error
    assert bad.reason == "Output is JSON but does not match the schema: $.age: 'old' is not of type 'integer'"

    missing = run("is-json", '{"name": "Ada"}', schema)
    assert missing.reason.endswith("$: 'age' is a required property")

    assert not run("is-json", "not json", schema).passed


def test_is_json_schema_as_json_string_and_nested_paths() -> None:
    schema = '{"type": "object", "properties": {"items": {"type": "array", "items": {"type": "number"}}}}'
    assert run("is-json", '{"items": [1, 2.5]}', schema).passed
    result = run("is-json", '{"items": [1, "two"]}', schema)
    assert result.details["violation"] == "$.items[1]: 'two' is not of type 'number'"


def test_is_json_checks_formats() -> None:
    assert run("is-json", '{"name": "A", "age": 1, "email": "a@example.com"}', PERSON).passed
    result = run("is-json", '{"name": "A", "age": 1, "email": "not-an-email"}', PERSON)
    assert not result.passed
    assert "$.email" in result.reason and "email" in result.reason


def test_is_json_validates_dict_output_against_the_schema() -> None:
    assert run("is-json", {"name": "Ada", "age": 36}, PERSON).passed
    assert not run("is-json", {"name": "Ada", "age": -1}, PERSON).passed


def test_empty_schema_value_means_no_schema() -> None:
    assert run("is-json", "[1]", "").passed
    assert check("is-json", None) is None
    assert check("is-json", "") is None


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"type": "strange"}, "not a valid JSON Schema"),
        ({"type": "object", "required": "name"}, "not a valid JSON Schema"),
        ("type: [unclosed", "not valid YAML or JSON"),
        ("just a word", "must be an object"),
        ([1, 2], "must be an object"),
        (5, "must be an object"),
    ],
)
def test_invalid_schemas_fail_validation(value: Any, fragment: str) -> None:
    for assertion_type in ("is-json", "contains-json"):
        problem = check(assertion_type, value)
        assert problem is not None and fragment in problem, problem


def test_read_only_mapping_schema_is_accepted() -> None:
    frozen = MappingProxyType({"type": "object", "properties": MappingProxyType({"a": {"type": "string"}})})
    assert schema_problem(frozen) is None
    assert run("is-json", '{"a": "x"}', frozen).passed
    assert not run("is-json", '{"a": 1}', frozen).passed


def test_valid_schemas_pass_the_check() -> None:
    assert schema_problem(PERSON) is None
    assert schema_problem(PERSON_YAML) is None
    assert schema_problem(True) is None
    assert schema_problem({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}) is None


# ------------------------------------------------------------------------------- contains-json


@pytest.mark.parametrize(
    ("text", "objects"),
    [
        ('Result: {"a": 1} done', [{"a": 1}]),
        ('{"a": 1} and {"b": 2}', [{"a": 1}, {"b": 2}]),
        ('{"outer": {"inner": {"x": [1, {"y": 2}]}}}', [{"outer": {"inner": {"x": [1, {"y": 2}]}}}]),
        ('{"s": "braces } { inside"}', [{"s": "braces } { inside"}]),
        ('{"s": "escaped \\" quote }"}', [{"s": 'escaped " quote }'}]),
        ('{"s": "backslash \\\\"} tail', [{"s": "backslash \\"}]),
        ('{"a": {"b": 1', [{"a": {"b": 1}}]),  # unclosed braces auto-closed at the end
        ('{"a": 1, // the answer\n "b": 2}', [{"a": 1, "b": 2}]),
        ('{"a": 1 /* note } */, "b": 2}', [{"a": 1, "b": 2}]),
        ('{"url": "http://x.org/a"}', [{"url": "http://x.org/a"}]),
        ("[1, 2, 3]", []),  # top-level arrays are not extracted
        ('[{"a": 1}]', [{"a": 1}]),  # ...but objects inside them are
        ("{not json} {also: not}", []),
        ('{broken {"ok": true}', [{"ok": True}]),
        ("no braces at all", []),
        ("", []),
        ('```json\n{\n  "k": "v"\n}\n```', [{"k": "v"}]),
        ('{"ü": "✓"}', [{"ü": "✓"}]),
    ],
)
def test_extract_json_objects(text: str, objects: list[Any]) -> None:
    assert extract_json_objects(text) == objects


def test_extracting_from_hostile_text_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    # '{' * n made every brace scan to the end of the text: n**2 steps, a hang for a 100 kB model
    # output (contains-json, and every judge reading the output and the grader's reply).
    scanned: list[int] = []
    balanced_end = structured._balanced_end

    def counting(text: str, start: int) -> tuple[int, int]:
        end, unclosed = balanced_end(text, start)
        scanned.append(end - start)
        return end, unclosed

    monkeypatch.setattr(structured, "_balanced_end", counting)
    costs = []
    for size in (20_000, 40_000):
        scanned.clear()
        extract_json_objects("{" * size)
        costs.append(sum(scanned))
    assert costs[1] <= 2.5 * costs[0]  # doubling the text at most doubles the work (it was 4x)
    assert extract_json_objects("{" * 40_000 + ' {"ok": true}') == []  # too hostile to search whole
    code = "function f() { if (x) { return {a: 1}; } }\n" * 2_000  # much nesting, still found after it
    assert extract_json_objects(code + '{"ok": true}') == [{"ok": True}]


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        ('Sure! {"answer": 42}', True),
        ("no json here", False),
        ("[1, 2]", False),
        ('{"a": {"b": 1', True),
        (None, False),
        ({"a": 1}, True),
        ([1, 2], True),  # non-string output counts as JSON data
    ],
)
def test_contains_json_without_schema(output: Any, passed: bool) -> None:
    result = run("contains-json", output)
    assert result.passed is passed
    assert not result.error


def test_contains_json_reasons() -> None:
    assert run("contains-json", '{"a": 1} {"b": 2}').reason == "Output contains 2 JSON objects"
    assert run("contains-json", "nothing").reason == "Output contains no JSON object ('nothing')"


def test_contains_json_with_a_schema_needs_one_matching_object() -> None:
    text = 'First {"name": "Bob", "age": "x"} then {"name": "Ada", "age": 36}'
    result = run("contains-json", text, PERSON)
    assert result.passed
    assert result.reason == "Output contains 2 JSON objects, one matching the schema"
    assert result.details["matching"] == 1

    wrong = run("contains-json", 'Only {"name": "Bob", "age": "x"}', PERSON_YAML)
    assert not wrong.passed and not wrong.error
    assert wrong.reason == (
        "Output contains 1 JSON object but none matches the schema: $.age: 'x' is not of type 'integer'"
    )

    assert not run("contains-json", "no objects", PERSON).passed


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "is-json": {"value": {"type": "object"}, "output": '{"a": 1}'},
    "contains-json": {"output": 'here: {"a": 1}'},
}


# ------------------------------------------------------------------------------- deeply nested JSON

DEEP = "[" * 100_000 + "]" * 100_000  # past json.loads' recursion bound
DEEPISH = "[" * 800 + "]" * 800  # parses, but deeper than the schema validator's recursion


@pytest.mark.parametrize("schema", [None, {"type": "array"}])
def test_is_json_on_json_nested_too_deeply_fails_with_a_reason(schema: Any) -> None:
    result = run("is-json", DEEP, schema)
    assert not result.passed and not result.error
    reading = "nested too deeply to read (evalh reads JSON nested up to about 900 levels)"
    assert result.reason == f"Output is not valid JSON ({reading})"


def test_a_schema_check_of_json_too_deep_to_validate_fails_with_a_reason() -> None:
    schema = {"type": "array", "items": {"$ref": "#"}}
    result = run("is-json", DEEPISH, schema)
    assert not result.passed and not result.error
    assert result.reason.endswith(
        "$: nested too deeply to check against the schema (about 250 levels at most)"
    )
    assert run("is-json", DEEPISH).passed  # without a schema it is valid JSON


def test_contains_json_skips_an_object_nested_too_deeply() -> None:
    result = run("contains-json", '{"a": ' * 1_200 + "1" + "}" * 1_200)
    assert not result.passed and not result.error  # a failed candidate, not a crash
    assert result.reason.startswith("Output contains no JSON object")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": [1, 2.5, "x", null, true]}', {"a": [1, 2.5, "x", None, True]}),
        (' "spaced" ', "spaced"),
        (b'{"bytes": 1}', {"bytes": 1}),  # bytes, as json.loads reads them
    ],
)
def test_loads_strict_reads_json_as_json_loads_does(text: Any, expected: Any) -> None:
    assert loads_strict(text) == expected


@pytest.mark.parametrize(
    "text",
    ["NaN", '{"a": Infinity}', "[-Infinity]", '\ufeff{"a": 1}', "{'a': 1}", '{"a": 1} x', "", "[" * 5000],
)
def test_loads_strict_rejects_what_javascript_rejects_with_a_value_error(text: str) -> None:
    # one shared decoder serves every call now: each text still fails alone, as before
    with pytest.raises(ValueError):
        loads_strict(text)
    assert loads_strict("[1]") == [1]
