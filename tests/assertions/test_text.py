"""The text family: equals, contains*, starts-with, regex, levenshtein, word-count."""

from __future__ import annotations

import random
from types import MappingProxyType
from typing import Any

import pytest

from evalh.assertions.registry import all_assertions
from evalh.assertions.strings import (
    deep_equal,
    levenshtein_distance,
    parse_item_list,
    stringify_value,
)
from evalh.config.checks import value_problem
from evalh.model import AssertionResult
from tests.assertions.helpers import declared_problems, definition_of, grade, make_context

TEXT_TYPES = (
    "equals",
    "contains",
    "icontains",
    "contains-any",
    "contains-all",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "regex",
    "levenshtein",
    "word-count",
)


def run(assertion_type: str, value: Any, output: Any, **kwargs: Any) -> AssertionResult:
    return grade(make_context(assertion_type, value=value, output=output, **kwargs))


def check(assertion_type: str, value: Any) -> str | None:
    """What validate says of the value: its declared shape, then the type's own check."""
    return value_problem(definition_of(assertion_type), value, {})


# ------------------------------------------------------------------------------------ registry


def test_every_text_type_is_registered_in_the_text_family() -> None:
    registry = all_assertions()
    for name in TEXT_TYPES:
        definition = registry[name]
        assert definition.family == "text"
        assert definition.requires_value
        assert definition.check is not None or definition.value_schema is not None  # validate checks it
        assert definition.description and "\n" not in definition.description
        assert definition.needs == ()


def test_levenshtein_defaults_to_a_max_distance_of_5() -> None:
    definition = definition_of("levenshtein")
    assert definition.default_threshold == 5
    assert definition.threshold_meaning == "max distance"
    assert make_context("levenshtein", value="x").threshold == 5
    assert make_context("levenshtein", value="x", threshold=0).threshold == 0


# -------------------------------------------------------------------------------------- equals


@pytest.mark.parametrize(
    ("value", "output", "passed"),
    [
        ("Paris", "Paris", True),
        ("Paris", "paris", False),
        ("Paris", "Paris ", False),
        ("", "", True),
        ("", None, True),  # None output reads as ""
        ("x", None, False),
        (42, "42", True),
        (1.0, "1", True),  # numbers stringify like JavaScript's String()
        (2.5, "2.5", True),
        (True, "true", True),
        ("héllo wörld ✓", "héllo wörld ✓", True),
        ("\u00e9", "e\u0301", False),  # composed vs decomposed: different code points
    ],
)
def test_equals_compares_strings_exactly(value: Any, output: Any, passed: bool) -> None:
    result = run("equals", value, output)
    assert result.passed is passed
    assert result.score == float(passed)
    assert not result.error


@pytest.mark.parametrize(
    ("value", "output", "passed"),
    [
        ({"a": 1, "b": [1, 2]}, '{"b": [1, 2], "a": 1}', True),  # key order does not matter
        ({"a": 1}, '{"a": 1.0}', True),
        ({"a": 1}, '{"a": true}', False),  # no 1 == True
        ({"a": True}, '{"a": 1}', False),
        ({"a": 1}, '{"a": 1, "b": 2}', False),
        ([1, 2], "[2, 1]", False),
        ([1, {"x": None}], ' [1, {"x": null}] ', True),
        ({"a": "1"}, '{"a": 1}', False),
        ({"a": 1}, "not json {", False),
        ({"a": 1}, "", False),
        ({"a": 1}, None, False),
        ({"a": 1}, {"a": 1}, True),  # a non-string output is compared as data
        ([1, 2], [1, 2], True),
        ({"a": [1]}, {"a": [2]}, False),
    ],
)
def test_equals_with_an_object_value_compares_parsed_json(value: Any, output: Any, passed: bool) -> None:
    result = run("equals", value, output)
    assert result.passed is passed
    assert not result.error


def test_equals_accepts_read_only_mapping_values() -> None:
    frozen = MappingProxyType({"a": MappingProxyType({"b": [1]})})
    assert run("equals", frozen, '{"a": {"b": [1]}}').passed
    assert run("equals", frozen, '{"a": {"b": [2]}}').reason == (
        """Output '{"a": {"b": [2]}}' does not equal '{"a": {"b": [1]}}'"""
    )


def test_equals_reasons_read_well_both_ways() -> None:
    assert run("equals", "yes", "yes").reason == "Output equals 'yes'"
    assert run("equals", "yes", "no").reason == "Output 'no' does not equal 'yes'"
    not_json = run("equals", {"a": 1}, "oops").reason
    assert not_json.startswith("Output is not JSON, so it does not equal")


def test_equals_with_a_string_value_and_dict_output_compares_the_json_text() -> None:
    # compact like JavaScript's JSON.stringify, so promptfoo configs keep their meaning
    assert run("equals", '{"a":1}', {"a": 1}).passed
    assert not run("equals", '{"a": 1}', {"a": 1}).passed


def test_equals_reason_shortens_long_output() -> None:
    reason = run("equals", "short", "x" * 500).reason
    assert "(500 chars)" in reason
    assert len(reason) < 200


def test_deep_equal_follows_javascript_strictness() -> None:
    assert deep_equal({"a": [1, 2.0]}, {"a": (1, 2)})
    assert not deep_equal(0, False)
    assert not deep_equal(None, 0)
    assert not deep_equal("1", 1)
    assert not deep_equal({"a": 1}, [("a", 1)])


# ------------------------------------------------------------------------------------ contains


@pytest.mark.parametrize(
    ("assertion_type", "value", "output", "passed"),
    [
        ("contains", "cat", "concatenate", True),
        ("contains", "Cat", "concatenate", False),
        ("icontains", "CAT", "conCatenate", True),
        ("icontains", "dog", "concatenate", False),
        ("contains", 42, "answer: 42.", True),
        ("contains", "ü", "Grüße", True),
        ("icontains", "GRÜSSE", "grüsse", True),
        ("contains", "a.b", "axb", False),  # no regex meaning
        ("contains", "x", None, False),
        ("contains", "x", "", False),
    ],
)
def test_contains(assertion_type: str, value: Any, output: Any, passed: bool) -> None:
    result = run(assertion_type, value, output)
    assert result.passed is passed
    assert result.score == float(passed)


def test_contains_on_dict_output_searches_its_json() -> None:
    assert run("contains", '"city":"Paris"', {"city": "Paris"}).passed
    assert run("contains", "Paris", {"city": "Paris"}).passed
    assert not run("contains", "London", {"city": "Paris"}).passed


def test_contains_reasons() -> None:
    assert run("contains", "foo", "a foo").reason == "Output contains 'foo'"
    assert run("contains", "foo", "bar").reason == "Output does not contain 'foo'"
    assert run("icontains", "FOO", "foo").reason == "Output contains 'FOO' (ignoring case)"


@pytest.mark.parametrize("value", [None, "", [], {"a": 1}, True])
def test_contains_with_an_unusable_value_is_refused_by_validate(value: Any) -> None:
    assert check("contains", value) is not None


def test_contains_check_accepts_strings_and_numbers() -> None:
    assert check("contains", "x") is None
    assert check("icontains", 3) is None
    assert check("contains", "") == "value: must not be empty"


# ---------------------------------------------------------------------------- comma-separated lists


@pytest.mark.parametrize(
    ("value", "items"),
    [
        ("a,b,c", ("a", "b", "c")),
        (" a , b ,c ", ("a", "b", "c")),
        ("a,,b,", ("a", "b")),
        ('"x, y", z', ("x, y", "z")),
        ('"say ""hi""", bye', ('say "hi"', "bye")),
        ('a"b"c', ("abc",)),
        ("single", ("single",)),
        ("", ()),
        (" , ,", ()),
        (["a, b", 3, 1.0], ("a, b", "3", "1")),
        (["refund", "as an ai"], ("refund", "as an ai")),  # texts only: taken as they are
        ((), ()),
    ],
)
def test_item_lists_follow_promptfoo_csv_rules(value: Any, items: tuple[str, ...]) -> None:
    assert parse_item_list(value) == items


def test_item_lists_reject_other_shapes() -> None:
    assert parse_item_list(3) is None
    assert parse_item_list({"a": "b"}) is None
    assert parse_item_list(["a", None]) is None
    assert parse_item_list(["a", ["b"]]) is None


@pytest.mark.parametrize(
    ("assertion_type", "value", "output", "passed"),
    [
        ("contains-any", ["red", "blue"], "a blue sky", True),
        ("contains-any", "red, blue", "a blue sky", True),
        ("contains-any", ["red", "green"], "a blue sky", False),
        ("contains-any", ["Blue"], "a blue sky", False),
        ("icontains-any", ["BLUE", "red"], "a Blue sky", True),
        ("icontains-any", "RED,GREEN", "a blue sky", False),
        ("contains-all", ["a", "sky"], "a blue sky", True),
        ("contains-all", "blue, sky, sun", "a blue sky", False),
        ("contains-all", '"1, 2", 3', "1, 2, 3", True),
        ("contains-all", '"1,2"', "1, 2", False),
        ("icontains-all", ["BLUE", "SKY"], "a blue sky", True),
        ("icontains-all", ["BLUE", "sea"], "a blue sky", False),
        ("contains-any", [42], "the answer is 42", True),
        ("contains-all", ["x"], None, False),
    ],
)
def test_contains_any_and_all(assertion_type: str, value: Any, output: Any, passed: bool) -> None:
    result = run(assertion_type, value, output)
    assert result.passed is passed
    assert result.score == float(passed)
    assert not result.error


def test_contains_all_reason_lists_the_missing_items() -> None:
    result = run("contains-all", ["alpha", "beta", "gamma"], "only beta here")
    assert result.reason == "Output lacks 2 of 3 items. Missing: ['alpha', 'gamma']"
    assert result.details["missing"] == ["alpha", "gamma"]
    assert run("contains-all", "a,b", "ab").reason == "Output contains all 2 items"


def test_contains_any_reasons() -> None:
    assert run("contains-any", "x,b", "abc").reason == "Output contains 'b', one of 2 items"
    assert run("icontains-any", "x,y", "abc").reason == "Output contains none of ['x', 'y'] (ignoring case)"


@pytest.mark.parametrize("assertion_type", ["contains-any", "contains-all", "icontains-any", "icontains-all"])
@pytest.mark.parametrize("value", [[], "", " , ", None, 5, {"a": 1}])
def test_empty_or_malformed_lists_are_refused_by_validate(assertion_type: str, value: Any) -> None:
    assert check(assertion_type, value) is not None  # validate prefixes the type


def test_list_check_accepts_lists_and_strings() -> None:
    assert check("contains-any", ["a"]) is None
    assert check("contains-all", "a, b") is None


# --------------------------------------------------------------------------------- starts-with


@pytest.mark.parametrize(
    ("value", "output", "passed"),
    [
        ("Hello", "Hello world", True),
        ("hello", "Hello world", False),
        ("world", "Hello world", False),
        ("Hello world!", "Hello world", False),
        ("{", {"a": 1}, True),
        (1, "1. First", True),
        ("x", None, False),
    ],
)
def test_starts_with(value: Any, output: Any, passed: bool) -> None:
    result = run("starts-with", value, output)
    assert result.passed is passed
    expected = "starts" if passed else "does not start"
    assert result.reason.startswith(f"Output {expected} with")


def test_starts_with_needs_a_value() -> None:
    assert check("starts-with", "") is not None
    assert check("starts-with", None) is not None
    assert check("starts-with", "x") is None


# --------------------------------------------------------------------------------------- regex


@pytest.mark.parametrize(
    ("pattern", "output", "passed"),
    [
        (r"\d{3}-\d{4}", "call 555-1234 now", True),
        (r"^\d+$", "12a", False),
        (r"^\d+$", "123", True),
        ("a.c", "abc", True),
        (r"a\.c", "abc", False),
        (r"\$\d+\.\d{2}", "costs $12.50", True),
        (r"(?i)hello", "HELLO", True),
        ("hello", "HELLO", False),
        (r"^line2$", "line1\nline2", False),  # no multiline flag
        (r"(?m)^line2$", "line1\nline2", True),
        (r"[ä-ü]+", "Grüße", True),
        (r"\bcat\b", "concatenate", False),
        ("x", None, False),
        (r'"a":\s*1', {"a": 1}, True),
    ],
)
def test_regex_searches_with_python_syntax(pattern: str, output: Any, passed: bool) -> None:
    result = run("regex", pattern, output)
    assert result.passed is passed
    assert not result.error


def test_regex_reasons_and_span() -> None:
    hit = run("regex", r"\d+", "abc 123 def")
    assert hit.reason == "Output matches /\\d+/ at '123'"
    assert hit.details["span"] == [4, 7]
    assert run("regex", r"\d+", "none").reason == "Output does not match /\\d+/"


@pytest.mark.parametrize("pattern", ["(unclosed", "[a-", "*x", "(?P<1>x)"])
def test_an_invalid_regex_fails_validation(pattern: str) -> None:
    problem = check("regex", pattern)
    assert problem is not None and problem.startswith("value: invalid regular expression: ")


def test_regex_needs_a_pattern_string() -> None:
    assert check("regex", "") is not None
    assert check("regex", 5) is not None
    assert check("regex", r"ok\d") is None


# --------------------------------------------------------------------------------- levenshtein


@pytest.mark.parametrize(
    ("left", "right", "distance"),
    [
        ("", "", 0),
        ("", "abc", 3),
        ("abc", "", 3),
        ("kitten", "sitting", 3),
        ("flaw", "lawn", 2),
        ("intention", "execution", 5),
        ("abc", "abc", 0),
        ("abc", "acb", 2),
        ("café", "cafe", 1),
        ("日本語", "日本", 1),
        ("a" * 70, "b" * 70, 70),  # wider than a machine word
        ("a" * 100 + "x", "a" * 100 + "y", 1),
    ],
)
def test_levenshtein_distance_known_values(left: str, right: str, distance: int) -> None:
    assert levenshtein_distance(left, right) == distance
    assert levenshtein_distance(right, left) == distance


def _reference_distance(left: str, right: str) -> int:
    previous = list(range(len(right) + 1))
    for i, a in enumerate(left, 1):
        current = [i]
        for j, b in enumerate(right, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]


def test_levenshtein_distance_matches_the_textbook_dp_on_random_strings() -> None:
    rng = random.Random(20240611)
    for _ in range(1500):
        left = "".join(rng.choice("abcé ") for _ in range(rng.randint(0, 30)))
        right = "".join(rng.choice("abcé ") for _ in range(rng.randint(0, 90)))
        assert levenshtein_distance(left, right) == _reference_distance(left, right), (left, right)


def test_levenshtein_distance_counts_code_points_on_every_kind_of_character() -> None:
    """Astral characters (one code point, two UTF-16 units), lone surrogates, combining marks, NUL and
    strings wider than a machine word: the distance is the textbook one over code points."""
    rng = random.Random(29)
    alphabet = "ab é\u0301\U0001f600\U0001f601\ud800\udfff\x00\u65e5"
    for _ in range(2000):
        left = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        right = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert levenshtein_distance(left, right) == _reference_distance(left, right), (left, right)
    for _ in range(10):
        left = "".join(rng.choice(alphabet) for _ in range(rng.randint(60, 200)))
        right = "".join(rng.choice(alphabet) for _ in range(rng.randint(60, 200)))
        assert levenshtein_distance(left, right) == _reference_distance(left, right)
    assert levenshtein_distance("\U0001f600", "") == 1
    assert levenshtein_distance("\U0001f600", "\U0001f601") == 1


@pytest.mark.parametrize(
    ("value", "output", "threshold", "passed", "distance"),
    [
        ("kitten", "sitting", None, True, 3),  # default max distance 5
        ("intention", "execution", None, True, 5),
        ("abcdefg", "gfedcba", None, False, 6),
        ("kitten", "sitting", 2, False, 3),
        ("kitten", "sitting", 3, True, 3),
        ("same", "same", 0, True, 0),  # threshold 0 is honoured
        ("same", "Same", 0, False, 1),
        ("", None, 0, True, 0),
        (12, "13", 1, True, 1),
    ],
)
def test_levenshtein_assertion(
    value: Any, output: Any, threshold: float | None, passed: bool, distance: int
) -> None:
    result = run("levenshtein", value, output, threshold=threshold)
    assert result.passed is passed
    assert result.score == float(passed)
    assert result.details["distance"] == distance
    relation = "less than or equal to" if passed else "greater than"
    limit = 5 if threshold is None else threshold
    assert result.reason == f"Levenshtein distance {distance} is {relation} threshold {limit:g}"


def test_levenshtein_rejects_bad_values_and_thresholds() -> None:
    assert check("levenshtein", None) is not None
    assert check("levenshtein", ["a"]) is not None
    assert check("levenshtein", "ok") is None
    negative = declared_problems({"type": "levenshtein", "value": "a", "threshold": -1})
    assert negative == ["threshold: must be >= 0.0 (got -1) for a 'levenshtein' assertion"]


# ---------------------------------------------------------------------------------- word-count


@pytest.mark.parametrize(
    ("value", "output", "passed", "count"),
    [
        (3, "one two three", True, 3),
        (3, "  one\ttwo\n\nthree  ", True, 3),
        (3, "one two", False, 2),
        (0, "", True, 0),
        (0, None, True, 0),
        (0, "   ", True, 0),
        (2.0, "a b", True, 2),
        ({"min": 2}, "a b c", True, 3),
        ({"min": 4}, "a b c", False, 3),
        ({"max": 3}, "a b c", True, 3),
        ({"max": 2}, "a b c", False, 3),
        ({"min": 1, "max": 3}, "a b", True, 2),
        ({"min": 3, "max": 3}, "a b c", True, 3),
        ({"min": 1, "max": 2}, "", False, 0),
        (2, "héllo wörld", True, 2),
        (2, "one-word two", True, 2),
    ],
)
def test_word_count(value: Any, output: Any, passed: bool, count: int) -> None:
    result = run("word-count", value, output)
    assert result.passed is passed
    assert result.details["count"] == count
    assert not result.error


def test_word_count_reasons() -> None:
    assert run("word-count", 2, "a b").reason == "Word count 2 equals 2"
    assert run("word-count", 3, "a b").reason == "Word count 2 is not 3"
    assert run("word-count", {"min": 3}, "a b").reason == "Word count 2 is below the minimum 3"
    assert run("word-count", {"max": 1}, "a b").reason == "Word count 2 is above the maximum 1"
    assert run("word-count", {"min": 1, "max": 3}, "a b").reason == "Word count 2 is between 1 and 3"
    assert run("word-count", {"min": 1}, "a b").reason == "Word count 2 is at least 1"
    assert run("word-count", {"max": 3}, "a b").reason == "Word count 2 is at most 3"


@pytest.mark.parametrize(
    "value",
    [None, -1, 2.5, "two", "2", True, {}, {"min": -1}, {"min": 5, "max": 2}, {"least": 2}, {"max": "x"}, [3]],
)
def test_word_count_value_shapes_are_checked(value: Any) -> None:
    assert check("word-count", value) is not None


def test_word_count_check_accepts_good_shapes() -> None:
    for value in (0, 10, {"min": 1}, {"max": 9}, {"min": 2, "max": 2}):
        assert check("word-count", value) is None, value


def test_stringify_value_matches_javascript_string() -> None:
    assert stringify_value(3) == "3"
    assert stringify_value(3.0) == "3"
    assert stringify_value(0.5) == "0.5"
    assert stringify_value(False) == "false"
    assert stringify_value("x") == "x"


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "equals": {"value": "Paris", "output": "Paris"},
    "contains": {"value": "Par", "output": "Paris"},
    "icontains": {"value": "par", "output": "Paris"},
    "contains-any": {"value": ["x", "Par"], "output": "Paris"},
    "contains-all": {"value": "Pa, ris", "output": "Paris"},
    "icontains-any": {"value": ["PAR"], "output": "Paris"},
    "icontains-all": {"value": ["pa", "RIS"], "output": "Paris"},
    "starts-with": {"value": "Pa", "output": "Paris"},
    "regex": {"value": "P.r", "output": "Paris"},
    "levenshtein": {"value": "Paris", "output": "Pariss"},
    "word-count": {"value": {"min": 1, "max": 3}, "output": "in Paris"},
}
