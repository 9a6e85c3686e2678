"""The checker's short paths for repeated assertions (an assertion checked clean before is not checked
again; one whose type and threshold were checked clean has only its value checked) say exactly what
checking every assertion in full says: the same problems at the same places in the same order, the same
warnings, and the same notes for the warnings after the walk. Random suites with problems in them, on
the real registry, against a checker that checks every assertion in full."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from evalh.assertions.registry import base_type, get_assertion
from evalh.common.notices import warnings_to
from evalh.config.checks import AssertionChecker
from evalh.config.files import LoadContext
from evalh.config.shapes import fragment_checker
from evalh.errors import Where
from evalh.model import AssertionSpec, ProviderChoice, ProviderSpec, TestCase


class _NothingKept(set[Any]):
    """A set that keeps nothing: the full checker's memory of clean assertions stays empty."""

    def add(self, element: Any) -> None:
        pass


class _FullChecker(AssertionChecker):
    """Checks every assertion in full, as if none had been seen before."""

    def _check(self, spec: AssertionSpec, test: TestCase, depth: int = 1) -> None:
        written = spec.raw.get("value")
        as_written = written is not None and type(written) is type(spec.value) and written == spec.value
        self._check_fully(spec, test, depth, as_written, None)


def _checker(cls: type[AssertionChecker], where_of: dict[int, Where], strict: bool) -> AssertionChecker:
    checker = cls(LoadContext(config_file=Path("/project/evalh.yaml")), None, where_of)
    if cls is _FullChecker:
        checker.clean = _NothingKept()
        checker.clean_but_value = _NothingKept()
    return checker


# (type, value, raw value): a raw value other than the value stands for a rendered template
_VALUES: list[tuple[Any, Any]] = [
    ("x", "x"),
    ("robot", "robot"),
    ("", ""),
    ("   ", "   "),
    ("rendered", "{{expected}}"),
    ("file://missing.txt", "file://missing.txt"),
    ("[bad(", "[bad("),
    ("^ok$", "^ok$"),
    (1, 1),
    (True, True),
    (1.0, 1.0),
    (None, None),
    (["a", "b"], ["a", "b"]),
    (["a", ""], ["a", ""]),
    ({"type": "object"}, {"type": "object"}),
    ({"type": "nonsense"}, {"type": "nonsense"}),
    ("{{ x", "{{ x"),
    (3, "{{n}}"),
    (1, "{{n}}"),  # numbers from a rendered file:// value: 1, true and 1.0 are equal in Python only
    (True, "{{n}}"),
    (1.0, "{{n}}"),
]
_TYPES = [
    "equals",
    "contains",
    "not-contains",
    "icontains",
    "regex",
    "not-regex",
    "levenshtein",
    "is-json",
    "contains-json",
    "contains-any",
    "word-count",
    "similar",
    "select-best",
    "max-score",
    "not-select-best",
    "latency",
    "cost",
    "is-valid-openai-tools-call",
    "trajectory:tool-used",
    "trace-span-count",
    "javascript",
    "contans",  # unknown: a did-you-mean
    "not-contans",
]
_CONFIGS: list[dict[str, Any]] = [
    {"providers": ["echo"]},
    {"timeout": 5},
    {"timeout": -1},
    {"timeoutMs": "x"},
]
_VALUES.append(("output.length > 1", "output.length > 1"))  # javascript, whose check reads the config
_THRESHOLDS: list[float | None] = [None, None, None, 0.5, 10.0, 2.0, -1.0, 0.0, math.nan, math.inf]


def _schema_takes(kind: str, value: Any) -> bool:
    """Whether the schema's rule for the type takes the value as written (else the test is refused)."""
    definition = get_assertion(base_type(kind)[0])
    schema = definition.value_schema if definition is not None else None
    return schema is None or value is None or not fragment_checker(schema).problems(value)


def _spec(rng: random.Random, pool: list[dict[str, Any]], path: str, depth: int) -> AssertionSpec:
    if depth < 7 and rng.random() < 0.06:  # an assert-set, now and then nested too deep
        children = tuple(_spec(rng, pool, f"{path}.assert[{i}]", depth + 1) for i in range(rng.randint(1, 3)))
        return AssertionSpec(type="assert-set", children=children, path=path, raw={"type": "assert-set"})
    fields = rng.choice(pool) if rng.random() < 0.8 else _fields(rng)  # most repeat one of a few
    return AssertionSpec(**fields, path=path)


def _fields(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(_TYPES)
    value, written = rng.choice(_VALUES)
    if written == value and not _schema_takes(kind, value):  # as written, it would not have loaded
        written = "{{v}}"  # rendered, then
    with_provider = rng.random() < 0.05
    return {
        "type": kind,
        "value": value,
        "threshold": rng.choice(_THRESHOLDS),
        "config": rng.choice(_CONFIGS) if rng.random() < 0.15 else {},
        "raw": {"type": kind} if written is None else {"type": kind, "value": written},
        "provider": ProviderChoice(default=ProviderSpec(id="echo")) if with_provider else None,
    }


def _suite(seed: int) -> tuple[list[TestCase], dict[int, Where]]:
    """Tests that repeat a few assertions many times, with problems among them."""
    rng = random.Random(seed)
    pool = [_fields(rng) for _ in range(rng.randint(3, 15))]
    tests = []
    for index in range(rng.randint(20, 60)):
        count = rng.randint(0, 6)
        specs = tuple(_spec(rng, pool, f"tests[{index}].assert[{i}]", 1) for i in range(count))
        provider = ProviderChoice(default=ProviderSpec(id="local")) if rng.random() < 0.2 else None
        tests.append(TestCase(index, asserts=specs, path=f"tests[{index}]", provider=provider))
    where_of: dict[int, Where] = {}
    for test in tests:  # most placed (file:line:col), some by their path only
        for spec in test.asserts:
            if rng.random() < 0.8:
                where_of[id(spec)] = f"evalh.yaml:{test.index + 3}:5 {spec.path}"
    return tests, where_of


def _outcome(cls: type[AssertionChecker], seed: int, strict: bool) -> dict[str, Any]:
    tests, where_of = _suite(seed)
    checker = _checker(cls, where_of, strict)
    shown: list[str] = []
    with warnings_to(shown.append, strict=strict):
        checker.check_tests(tests)
        checker.warn_untraced()
        checker.warn_toolless([ProviderSpec(id="openai:chat:x", config={"tool": []}, path="providers[0]")])
    return {
        "problems": list(checker.ctx.problems.problems),
        "warnings": shown,
        "needs_grader": checker.needs_grader,
        "first_traced": checker.first_traced and checker.first_traced.path,
        "tool_calls": [spec.path for spec in checker.tool_calls],
    }


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("seed", range(60))
def test_repeated_assertions_are_said_as_the_full_check_says(seed: int, strict: bool) -> None:
    fast = _outcome(AssertionChecker, seed, strict)
    assert fast == _outcome(_FullChecker, seed, strict)


def test_the_random_suites_have_problems_warnings_and_notes() -> None:
    """The comparisons above compare something: most suites have each kind of finding."""
    outcomes = [_outcome(AssertionChecker, seed, False) for seed in range(40)]
    assert sum(bool(outcome["problems"]) for outcome in outcomes) >= 35
    assert sum(bool(outcome["warnings"]) for outcome in outcomes) >= 20
    assert sum(len(outcome["tool_calls"]) > 1 for outcome in outcomes) >= 20
    assert sum(bool(outcome["needs_grader"]) for outcome in outcomes) >= 20


def test_a_repeated_assertion_with_a_new_value_has_only_its_value_checked() -> None:
    """Two levenshtein assertions of one threshold: the second's new value is checked (a problem said
    at its place), its threshold is not said again to be fine; a third with another threshold in full."""
    specs = [
        AssertionSpec(
            type="levenshtein", value=value, threshold=threshold, raw={}, path=f"tests[{i}].assert[0]"
        )
        for i, (value, threshold) in enumerate([("a", 5.0), (None, 5.0), ("b", -1.0), (None, -1.0)])
    ]
    tests = [TestCase(i, asserts=(spec,)) for i, spec in enumerate(specs)]
    checker = _checker(AssertionChecker, {}, False)
    checker.check_tests(tests)
    assert checker.clean_but_value == {("levenshtein", 5.0)}
    assert [text.split(":")[0] for _, text in checker.ctx.problems.problems] == [
        "tests[1].assert[0]",  # needs a value
        "tests[2].assert[0].threshold",
        "tests[3].assert[0]",
        "tests[3].assert[0].threshold",
    ]


def test_a_value_the_schema_did_not_see_is_checked_though_an_equal_one_as_written_was_clean() -> None:
    """A value as written was checked by the schema, so its shape is not checked again; the same value
    rendered from a template was not, so it is: being equal to a clean one is not enough."""
    as_written = AssertionSpec(type="contains", value="", raw={"value": ""}, path="tests[0].assert[0]")
    rendered = AssertionSpec(type="contains", value="", raw={"value": "{{x}}"}, path="tests[1].assert[0]")
    checker = _checker(AssertionChecker, {}, False)
    checker.check_tests([TestCase(0, asserts=(as_written,)), TestCase(1, asserts=(rendered,))])
    (problem,) = [text for _, text in checker.ctx.problems.problems]
    assert problem.startswith("tests[1].assert[0].value: contains: must not be empty")


def test_an_assertion_that_compares_outputs_is_checked_in_each_test() -> None:
    """max-score's check reads its test's other assertions and whether it is in a set: checked clean in
    one test, it is still refused where it is alone and inside an assert-set."""

    def max_score(path: str) -> AssertionSpec:
        return AssertionSpec(type="max-score", raw={"type": "max-score"}, path=path)

    other = AssertionSpec(type="contains", value="x", raw={"value": "x"}, path="tests[0].assert[1]")
    in_set = AssertionSpec(type="assert-set", children=(max_score("tests[2].assert[0].assert[0]"),))
    tests = [
        TestCase(0, asserts=(max_score("tests[0].assert[0]"), other)),
        TestCase(1, asserts=(max_score("tests[1].assert[0]"),)),
        TestCase(2, asserts=(in_set,)),
    ]
    checker = _checker(AssertionChecker, {}, False)
    checker.check_tests(tests)
    assert [text.split(":")[0] for _, text in checker.ctx.problems.problems] == [
        "tests[1].assert[0]",
        "tests[2].assert[0].assert[0]",
    ]


def test_a_repeated_value_with_a_config_is_checked_with_its_config() -> None:
    """The check of a javascript value reads its config's timeout: the same code and threshold with a
    bad timeout is refused though it was clean without one."""
    specs = [
        AssertionSpec(
            type="javascript", value="output.length > 1", config=config, path=f"tests[{i}].assert[0]"
        )
        for i, config in enumerate([{}, {"timeout": -1}, {}, {"timeout": -1}])
    ]
    checker = _checker(AssertionChecker, {}, False)
    checker.check_tests([TestCase(i, asserts=(spec,)) for i, spec in enumerate(specs)])
    assert [text.split(": ", 2)[0::2] for _, text in checker.ctx.problems.problems] == [
        ["tests[1].assert[0].value", "config.timeout must be a positive number (got -1)"],
        ["tests[3].assert[0].value", "config.timeout must be a positive number (got -1)"],
    ]


def test_an_assert_set_is_checked_with_its_children_after_an_empty_one() -> None:
    """An assert-set without assertions checks clean; one of the same threshold with a bad child is
    still gone into."""
    empty = AssertionSpec(type="assert-set", path="tests[0].assert[0]")
    bad_child = AssertionSpec(type="contains", path="tests[1].assert[0].assert[0]")
    tests = [
        TestCase(0, asserts=(empty,)),
        TestCase(
            1, asserts=(AssertionSpec(type="assert-set", children=(bad_child,), path="tests[1].assert[0]"),)
        ),
    ]
    checker = _checker(AssertionChecker, {}, False)
    checker.check_tests(tests)
    (problem,) = [text for _, text in checker.ctx.problems.problems]
    assert problem.startswith("tests[1].assert[0].assert[0]: contains needs a value")
