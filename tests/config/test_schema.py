"""The config schema: valid 2020-12, complete, documented, and the one check every config passes."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from evalh.assertions.registry import FAMILY_MODULES, all_assertions
from evalh.config.load import load_suite
from evalh.config.locate import parse_document
from evalh.config.schema import (
    assertion_type_names,
    config_validator,
    load_schema,
    schema_path,
    schema_problems,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples" / "configs").glob("*.yaml"))
BRIEFING_TYPES = [
    "equals",
    "contains",
    "icontains",
    "contains-any",
    "contains-all",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "regex",
    "is-json",
    "contains-json",
    "levenshtein",
    "word-count",
    "python",
    "latency",
    "assert-set",
    "similar",
    "similar:cosine",
    "similar:dot",
    "similar:euclidean",
    "bertscore",
    "bertscore-like",
    "llm-rubric",
    "factuality",
    "model-graded-factuality",
    "model-graded-closedqa",
    "answer-relevance",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "g-eval",
    "refusal-quality",
    "is-refusal",
    "rouge-n",
    "rouge-l",
    "bleu",
    "gleu",
    "exact-match",
    "f1",
    "jaccard",
    "retrieval-hit-at-k",
    "retrieval-recall-at-k",
    "retrieval-precision-at-k",
    "retrieval-mrr",
    "retrieval-ndcg-at-k",
    "answer-containment-at-k",
    "ordinal-distance",
    "citation-groundedness",
]


def test_schema_is_valid_2020_12_with_an_id() -> None:
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://evalh.dev/schemas/evalh.schema.json"
    assert schema_path().name == "evalh.schema.json"


def test_schema_assertion_types_equal_the_registry() -> None:
    """The schema's enum is exactly the registered types and their not- forms: one source of truth."""
    names = assertion_type_names()
    registered = set(all_assertions())
    assert set(names) == registered | {f"not-{name}" for name in registered}
    assert len(names) == len(set(names))
    assert set(BRIEFING_TYPES) <= registered  # the catalogue, all implemented (and later types)


def test_every_assertion_family_module_imports() -> None:
    # the registry skips a family module that is absent; a shipped build must have them all
    for module in FAMILY_MODULES:
        importlib.import_module(module)


def _properties(node: Any, trail: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            found.append((f"{trail}.{name}", sub))
        for key, sub in node.items():
            if key != "properties":
                found.extend(_properties(sub, f"{trail}/{key}"))
    elif isinstance(node, list):
        for index, sub in enumerate(node):
            found.extend(_properties(sub, f"{trail}[{index}]"))
    return found


def test_every_property_has_a_description() -> None:
    """Editors show these on hover and in completion (rule fragments under allOf/if/then are not shown)."""
    rules = ("/allOf", "/if", "/then", "/else", "/not")
    documented = [
        (trail, sub) for trail, sub in _properties(load_schema()) if not any(r in trail for r in rules)
    ]
    assert len(documented) >= 35
    missing = [trail for trail, sub in documented if isinstance(sub, dict) and not sub.get("description")]
    assert missing == []


def test_closed_objects_reject_unknown_keys() -> None:
    schema = load_schema()
    assert schema["additionalProperties"] is False
    for name in ("test", "assertion", "providerObject"):
        assert schema["$defs"][name]["additionalProperties"] is False
    assert schema["properties"]["evaluateOptions"]["additionalProperties"] is False


@pytest.mark.parametrize(
    ("assertion", "valid"),
    [
        ({"type": "contains", "value": "x"}, True),
        ({"type": "contains", "value": 3}, True),
        ({"type": "contains", "value": ""}, False),
        ({"type": "contains"}, False),
        ({"type": "not-contains-any", "value": "a,b"}, True),
        ({"type": "contains-any", "value": ["a", 1]}, True),
        ({"type": "contains-any", "value": []}, False),
        ({"type": "word-count", "value": {"min": 1}}, True),
        ({"type": "word-count", "value": -1}, False),
        ({"type": "word-count", "value": "ten"}, False),
        ({"type": "levenshtein", "value": "x", "threshold": 2}, True),
        ({"type": "levenshtein", "value": "x", "threshold": "2"}, False),
        ({"type": "latency", "threshold": 100}, True),
        ({"type": "latency"}, False),
        ({"type": "regex", "value": 5}, False),
        ({"type": "similar", "value": ["a", "b"], "threshold": 0.8}, True),
        ({"type": "similar", "value": [1]}, False),
        ({"type": "similar:euclidean", "value": "x", "threshold": -1}, False),
        ({"type": "assert-set", "assert": [{"type": "is-json"}]}, True),
        ({"type": "assert-set"}, False),
        ({"type": "equals", "value": "x", "assert": []}, False),
        ({"type": "equals", "value": "x", "weight": -1}, False),
        ({"type": "llm-rubric", "value": "x", "provider": {"text": "echo"}}, True),
        ({"type": "nonsense", "value": "x"}, False),
    ],
)
def test_per_type_rules(assertion: dict[str, Any], valid: bool) -> None:
    config = {"tests": [{"assert": [assertion]}]}
    assert (schema_problems(config) == []) is valid


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        ({"tests": [{"assert": ["contains"]}]}, ("tests", 0, "assert", 0), "must be a mapping (key: value)"),
        ({"tests": [5]}, ("tests", 0), "must be a string or a mapping (key: value)"),
        ({"defaultTest": ["a"]}, ("defaultTest",), "must be a mapping (key: value) or a string"),
    ],
)
def test_a_value_that_is_not_a_mapping_gets_one_problem(
    config: dict[str, Any], path: tuple[Any, ...], message: str
) -> None:
    # `not: {required: [...]}` fails for any non-object unless it also says type: object, which made
    # `assert: [contains]` read "assert-set takes no value" as well
    problems = schema_problems(config)
    assert [(problem.path, problem.message.split(" (got")[0]) for problem in problems] == [(path, message)]


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_examples_validate(example: Path) -> None:
    data = parse_document(example.read_text(encoding="utf-8"), example.name).data
    assert list(config_validator().iter_errors(data)) == []
    load_suite(example)  # and pass every semantic check


def test_examples_exist_or_skip() -> None:
    if not EXAMPLES:
        pytest.skip("no examples/configs yet")
    assert all(path.suffix == ".yaml" for path in EXAMPLES)
