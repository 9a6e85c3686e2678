"""Deterministic text assertions: equals, the contains family, starts-with, regex, levenshtein, word-count.

Each handler judges the positive form; ``runner/scoring.py`` applies ``not-``. Reasons state the actual
relation ("Output contains 'foo'" / "Output does not contain 'foo'") so they read well either way.

``regex`` uses Python's ``re`` syntax (``re.search``: found anywhere, no flags; use inline flags such as
``(?i)``), searched with a time limit (``evalh/runtimes/patterns.py``: 1 s, or ``config.timeoutMs``).
Text is compared by Unicode code point (promptfoo compares UTF-16 code units).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import NONEMPTY_TEXT, CheckFn, assertion
from evalh.assertions.strings import (
    deep_equal,
    json_default,
    levenshtein_distance,
    parse_item_list,
    parse_json_output,
    preview,
    stringify_value,
)
from evalh.deadlines import REGEX_TIMEOUT_S, configured_timeout_s, timeout_problem
from evalh.model import AssertionResult, Measurement
from evalh.runtimes.patterns import Pattern, PatternTimedOut, compile_pattern, search

__all__ = [
    "contains",
    "contains_all",
    "contains_any",
    "equals",
    "icontains",
    "icontains_all",
    "icontains_any",
    "levenshtein",
    "regex",
    "starts_with",
    "word_count",
]

# Value shapes, declared once per type (the config schema's allOf rules are tested equal to these).
_SCALAR_VALUE: dict[str, Any] = {"anyOf": [{"type": "string", "minLength": 1}, {"type": "number"}]}
_ITEMS_VALUE: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "minItems": 1, "items": {"type": ["string", "number"]}},
    ]
}
_REFERENCE_VALUE: dict[str, Any] = {"type": "string"}
_WORDS = {"type": "integer", "minimum": 0}
_WORD_COUNT_VALUE: dict[str, Any] = {
    "anyOf": [
        _WORDS,
        {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "properties": {
                "min": {**_WORDS, "description": "Fewest words allowed."},
                "max": {**_WORDS, "description": "Most words allowed."},
            },
        },
    ]
}


_passed = Measurement.pass_fail  # a pass/fail check measures too; runner/scoring.py decides


def _scalar_problem(name: str, value: Any) -> str | None:
    """Problem with a value that must be a non-empty string or a number. validate checks the declared
    shape; this catches a value a template rendered empty at run time."""
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"{name} needs a string or number value (got {type(value).__name__})"
    if value == "":
        return f"{name} needs a non-empty value"
    return None


def _item_list_problem(name: str, value: Any) -> str | None:
    items = parse_item_list(value)
    if items is None:
        return f"{name} needs a list of strings or a comma-separated string"
    if not items:
        return f"{name} needs at least one item (the value is empty)"
    return None


def _check_items(name: str) -> CheckFn:
    def check(value: Any, _config: Mapping[str, Any]) -> str | None:
        return _item_list_problem(name, value)

    return check


# ----------------------------------------------------------------------------------------- equals


def _check_equals(value: Any, _config: Mapping[str, Any]) -> str | None:
    if value is None:
        return "equals needs a value (string, number, object or list)"
    return None


@assertion(
    "equals",
    family="text",
    description="Output equals the value exactly (deep JSON equality when the value is an object or list)",
    requires_value=True,
    check=_check_equals,
)
def equals(ctx: AssertionContext) -> AssertionResult | Measurement:
    value = ctx.value
    if value is None:
        return AssertionResult.failure("equals needs a value (string, number, object or list)")
    if isinstance(value, Mapping | list | tuple):
        expected = json.dumps(value, ensure_ascii=False, default=json_default)
        parsed, actual, _ = parse_json_output(ctx.output)
        if not parsed:
            return _passed(False, f"Output is not JSON, so it does not equal {preview(expected)}")
        hit = deep_equal(actual, value)
    else:
        expected = stringify_value(value)
        hit = ctx.output_text == expected
    if hit:
        return _passed(True, f"Output equals {preview(expected)}")
    return _passed(False, f"Output {preview(ctx.output_text)} does not equal {preview(expected)}")


# --------------------------------------------------------------------------------- contains family


def _contains(ctx: AssertionContext, name: str, fold: bool) -> AssertionResult | Measurement:
    problem = _scalar_problem(name, ctx.value)
    if problem:
        return AssertionResult.failure(problem)
    needle = stringify_value(ctx.value)
    text = ctx.output_text
    hit = needle.lower() in text.lower() if fold else needle in text
    case = " (ignoring case)" if fold else ""
    verb = "contains" if hit else "does not contain"
    return _passed(hit, f"Output {verb} {preview(needle)}{case}")


@assertion(
    "contains",
    family="text",
    description="Output contains the value (case-sensitive substring)",
    requires_value=True,
    value_schema=_SCALAR_VALUE,
)
def contains(ctx: AssertionContext) -> AssertionResult | Measurement:
    return _contains(ctx, "contains", fold=False)


@assertion(
    "icontains",
    family="text",
    description="Output contains the value, ignoring case",
    requires_value=True,
    value_schema=_SCALAR_VALUE,
)
def icontains(ctx: AssertionContext) -> AssertionResult | Measurement:
    return _contains(ctx, "icontains", fold=True)


def _items_or_failure(ctx: AssertionContext, name: str) -> tuple[str, ...] | AssertionResult:
    problem = _item_list_problem(name, ctx.value)
    if problem:
        return AssertionResult.failure(problem)
    items = parse_item_list(ctx.value)
    return items or ()


def _found(items: Iterable[str], text: str, fold: bool) -> list[bool]:
    if fold:
        text = text.lower()
        return [item.lower() in text for item in items]
    return [item in text for item in items]


def _contains_any(ctx: AssertionContext, name: str, fold: bool) -> AssertionResult | Measurement:
    items = _items_or_failure(ctx, name)
    if isinstance(items, AssertionResult):
        return items
    found = [item for item, hit in zip(items, _found(items, ctx.output_text, fold), strict=True) if hit]
    case = " (ignoring case)" if fold else ""
    if found:
        return _passed(
            True, f"Output contains {preview(found[0])}{case}, one of {len(items)} items", found=found
        )
    return _passed(False, f"Output contains none of {list(items)}{case}", found=found)


def _contains_all(ctx: AssertionContext, name: str, fold: bool) -> AssertionResult | Measurement:
    items = _items_or_failure(ctx, name)
    if isinstance(items, AssertionResult):
        return items
    missing = [item for item, hit in zip(items, _found(items, ctx.output_text, fold), strict=True) if not hit]
    case = " (ignoring case)" if fold else ""
    if not missing:
        return _passed(True, f"Output contains all {len(items)} items{case}", missing=missing)
    return _passed(
        False,
        f"Output lacks {len(missing)} of {len(items)} items{case}. Missing: {missing}",
        missing=missing,
    )


@assertion(
    "contains-any",
    family="text",
    description="Output contains at least one of the items (list or comma-separated string)",
    requires_value=True,
    value_schema=_ITEMS_VALUE,
    check=_check_items("contains-any"),
)
def contains_any(ctx: AssertionContext) -> AssertionResult | Measurement:
    return _contains_any(ctx, "contains-any", fold=False)


@assertion(
    "icontains-any",
    family="text",
    description="Output contains at least one of the items, ignoring case",
    requires_value=True,
    value_schema=_ITEMS_VALUE,
    check=_check_items("icontains-any"),
)
def icontains_any(ctx: AssertionContext) -> AssertionResult | Measurement:
    return _contains_any(ctx, "icontains-any", fold=True)


@assertion(
    "contains-all",
    family="text",
    description="Output contains every item (list or comma-separated string)",
    requires_value=True,
    value_schema=_ITEMS_VALUE,
    check=_check_items("contains-all"),
)
def contains_all(ctx: AssertionContext) -> AssertionResult | Measurement:
    return _contains_all(ctx, "contains-all", fold=False)


@assertion(
    "icontains-all",
    family="text",
    description="Output contains every item, ignoring case",
    requires_value=True,
    value_schema=_ITEMS_VALUE,
    check=_check_items("icontains-all"),
)
def icontains_all(ctx: AssertionContext) -> AssertionResult | Measurement:
    return _contains_all(ctx, "icontains-all", fold=True)


@assertion(
    "starts-with",
    family="text",
    description="Output starts with the value",
    requires_value=True,
    value_schema=_SCALAR_VALUE,
)
def starts_with(ctx: AssertionContext) -> AssertionResult | Measurement:
    problem = _scalar_problem("starts-with", ctx.value)
    if problem:
        return AssertionResult.failure(problem)
    prefix = stringify_value(ctx.value)
    hit = ctx.output_text.startswith(prefix)
    return _passed(hit, f"Output {'starts' if hit else 'does not start'} with {preview(prefix)}")


# ------------------------------------------------------------------------------------------ regex


def _pattern(value: Any) -> Pattern | str:
    if not isinstance(value, str) or value == "":
        return "regex needs a non-empty pattern string (Python re syntax)"
    return compile_pattern(value)


def _check_regex(value: Any, config: Mapping[str, Any]) -> str | None:
    compiled = _pattern(value)
    return compiled if isinstance(compiled, str) else timeout_problem(config)


@assertion(
    "regex",
    family="text",
    description="Output matches the Python regular expression somewhere (re.search)",
    requires_value=True,
    value_schema=NONEMPTY_TEXT,
    check=_check_regex,
)
def regex(ctx: AssertionContext) -> AssertionResult | Measurement:
    compiled = _pattern(ctx.value)
    if isinstance(compiled, str):
        return AssertionResult.failure(compiled)
    if problem := timeout_problem(ctx.config):
        return AssertionResult.failure(problem)
    try:
        match = search(compiled, ctx.output_text, configured_timeout_s(ctx.config, REGEX_TIMEOUT_S))
    except PatternTimedOut as error:
        return AssertionResult.failure(str(error))
    if match is None:
        return _passed(False, f"Output does not match /{ctx.value}/")
    return _passed(
        True, f"Output matches /{ctx.value}/ at {preview(match.group(0), 40)}", span=list(match.span())
    )


# ------------------------------------------------------------------------------------ levenshtein


def _check_levenshtein(value: Any, _config: Mapping[str, Any]) -> str | None:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"levenshtein needs a string value (got {type(value).__name__})"
    return None


@assertion(
    "levenshtein",
    family="text",
    description="Edit distance between output and value is at most the threshold",
    default_threshold=5.0,
    threshold_meaning="max distance",
    requires_value=True,
    direction="lower",
    bounds=(0.0, None),
    binary_score=True,
    value_schema=_REFERENCE_VALUE,
    check=_check_levenshtein,
)
def levenshtein(ctx: AssertionContext) -> AssertionResult | Measurement:
    problem = _check_levenshtein(ctx.value, ctx.config)
    if problem:
        return AssertionResult.failure(problem)
    distance = levenshtein_distance(ctx.output_text, stringify_value(ctx.value))
    return Measurement(
        value=float(distance), subject=f"Levenshtein distance {distance}", details={"distance": distance}
    )


# ------------------------------------------------------------------------------------- word-count


def _integer(value: Any) -> int | None:
    """A non-negative whole number from an int or an integral float (promptfoo: a number, never a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _word_bounds(value: Any) -> tuple[int | None, int | None] | str:
    """(min, max) from N or {min, max}; a problem text when the shape is wrong."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"min", "max"})
        if unknown:
            return f"word-count value has unknown keys {unknown}; use min and/or max"
        low, high = value.get("min"), value.get("max")
        if low is None and high is None:
            return "word-count value needs min and/or max"
        bounds = (None if low is None else _integer(low), None if high is None else _integer(high))
        if (low is not None and bounds[0] is None) or (high is not None and bounds[1] is None):
            return "word-count min and max must be whole numbers >= 0"
        if bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
            return f"word-count min {bounds[0]} is greater than max {bounds[1]}"
        return bounds
    exact = _integer(value)
    if exact is None:
        return "word-count needs a whole number >= 0 or {min, max}"
    return exact, exact


def _check_word_count(value: Any, _config: Mapping[str, Any]) -> str | None:
    bounds = _word_bounds(value)
    return bounds if isinstance(bounds, str) else None


@assertion(
    "word-count",
    family="text",
    description="Output has exactly N words, or between min and max words (whitespace-separated)",
    requires_value=True,
    value_schema=_WORD_COUNT_VALUE,
    check=_check_word_count,
)
def word_count(ctx: AssertionContext) -> AssertionResult | Measurement:
    bounds = _word_bounds(ctx.value)
    if isinstance(bounds, str):
        return AssertionResult.failure(bounds)
    low, high = bounds
    count = len(ctx.output_text.split())
    if low is not None and low == high:
        hit = count == low
        return _passed(hit, f"Word count {count} {'equals' if hit else 'is not'} {low}", count=count)
    if low is not None and count < low:
        return _passed(False, f"Word count {count} is below the minimum {low}", count=count)
    if high is not None and count > high:
        return _passed(False, f"Word count {count} is above the maximum {high}", count=count)
    if low is not None and high is not None:
        shown = f"between {low} and {high}"
    else:
        shown = f"at least {low}" if low is not None else f"at most {high}"
    return _passed(True, f"Word count {count} is {shown}", count=count)
