"""Deterministic text assertions: equals, the contains family, starts-with, regex, levenshtein, word-count.

Each handler judges the positive form; ``runner/scoring.py`` applies ``not-``. Reasons state the actual
relation ("Output contains 'foo'" / "Output does not contain 'foo'") so they read well either way.

``regex`` uses Python's ``re`` syntax (``re.search``: found anywhere, no flags; use inline flags such as
``(?i)``). Text is compared by Unicode code point (promptfoo compares UTF-16 code units).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import CheckFn, assertion
from evalh.model import AssertionResult

__all__ = [
    "deep_equal",
    "json_default",
    "levenshtein_distance",
    "parse_item_list",
    "preview",
    "stringify_value",
]

_PREVIEW_CHARS = 80


def preview(text: str, limit: int = _PREVIEW_CHARS) -> str:
    """``text`` quoted for a reason, shortened to ``limit`` characters."""
    if len(text) > limit:
        return repr(text[:limit]) + f"... ({len(text)} chars)"
    return repr(text)


def _passed(passed: bool, reason: str, **details: Any) -> AssertionResult:
    return AssertionResult(passed=passed, score=1.0 if passed else 0.0, reason=reason, details=details)


# ----------------------------------------------------------------------------------------- values


def json_default(value: Any) -> Any:
    """``json.dumps`` hook: read-only mappings (frozen config values) serialize like dicts."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")


def stringify_value(value: Any) -> str:
    """A scalar value as promptfoo's ``String(value)``: 42 -> "42", 1.0 -> "1", True -> "true"."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=json_default)


def _scalar_problem(name: str, value: Any) -> str | None:
    """Problem with a value that must be a non-empty string or a number."""
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"{name} needs a string or number value (got {type(value).__name__})"
    if value == "":
        return f"{name} needs a non-empty value"
    return None


@lru_cache(maxsize=4096)
def _split_comma_list(text: str) -> tuple[str, ...]:
    """promptfoo's CSV-like split: quoted items keep commas, ``""`` escapes a quote, empties dropped."""
    items: list[str] = []
    current: list[str] = []
    in_quotes = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            if in_quotes and text.startswith('"', index + 1):
                current.append('"')
                index += 1
            else:
                in_quotes = not in_quotes
        elif char == "," and not in_quotes:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        index += 1
    items.append("".join(current).strip())
    return tuple(item for item in items if item)


def parse_item_list(value: Any) -> tuple[str, ...] | None:
    """A list value (items stringified) or a comma-separated string; None when the shape is wrong."""
    if isinstance(value, str):
        return _split_comma_list(value)
    if isinstance(value, list | tuple):
        items: list[str] = []
        for item in value:
            if item is None or not isinstance(item, str | int | float):
                return None
            items.append(stringify_value(item))
        return tuple(items)
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


def _check_scalar(name: str) -> CheckFn:
    def check(value: Any, _config: Mapping[str, Any]) -> str | None:
        return _scalar_problem(name, value)

    return check


# ----------------------------------------------------------------------------------------- equals


def deep_equal(left: Any, right: Any) -> bool:
    """JSON deep equality as JavaScript's isDeepStrictEqual sees it: 1 == 1.0, but True != 1."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(deep_equal(left[key], right[key]) for key in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(deep_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, Mapping | list | tuple) or isinstance(right, Mapping | list | tuple):
        return False
    return type(left) is type(right) and bool(left == right)


def _parse_json_output(output: Any) -> tuple[bool, Any]:
    if output is not None and not isinstance(output, str):
        return True, output
    try:
        return True, json.loads(output or "", parse_constant=_reject_constant)
    except ValueError:
        return False, None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


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
def equals(ctx: AssertionContext) -> AssertionResult:
    value = ctx.value
    if value is None:
        return AssertionResult.failure("equals needs a value (string, number, object or list)")
    if isinstance(value, Mapping | list | tuple):
        expected = json.dumps(value, ensure_ascii=False, default=json_default)
        parsed, actual = _parse_json_output(ctx.output)
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


def _contains(ctx: AssertionContext, name: str, fold: bool) -> AssertionResult:
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
    check=_check_scalar("contains"),
)
def contains(ctx: AssertionContext) -> AssertionResult:
    return _contains(ctx, "contains", fold=False)


@assertion(
    "icontains",
    family="text",
    description="Output contains the value, ignoring case",
    requires_value=True,
    check=_check_scalar("icontains"),
)
def icontains(ctx: AssertionContext) -> AssertionResult:
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


def _contains_any(ctx: AssertionContext, name: str, fold: bool) -> AssertionResult:
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


def _contains_all(ctx: AssertionContext, name: str, fold: bool) -> AssertionResult:
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
    check=_check_items("contains-any"),
)
def contains_any(ctx: AssertionContext) -> AssertionResult:
    return _contains_any(ctx, "contains-any", fold=False)


@assertion(
    "icontains-any",
    family="text",
    description="Output contains at least one of the items, ignoring case",
    requires_value=True,
    check=_check_items("icontains-any"),
)
def icontains_any(ctx: AssertionContext) -> AssertionResult:
    return _contains_any(ctx, "icontains-any", fold=True)


@assertion(
    "contains-all",
    family="text",
    description="Output contains every item (list or comma-separated string)",
    requires_value=True,
    check=_check_items("contains-all"),
)
def contains_all(ctx: AssertionContext) -> AssertionResult:
    return _contains_all(ctx, "contains-all", fold=False)


@assertion(
    "icontains-all",
    family="text",
    description="Output contains every item, ignoring case",
    requires_value=True,
    check=_check_items("icontains-all"),
)
def icontains_all(ctx: AssertionContext) -> AssertionResult:
    return _contains_all(ctx, "icontains-all", fold=True)


@assertion(
    "starts-with",
    family="text",
    description="Output starts with the value",
    requires_value=True,
    check=_check_scalar("starts-with"),
)
def starts_with(ctx: AssertionContext) -> AssertionResult:
    problem = _scalar_problem("starts-with", ctx.value)
    if problem:
        return AssertionResult.failure(problem)
    prefix = stringify_value(ctx.value)
    hit = ctx.output_text.startswith(prefix)
    return _passed(hit, f"Output {'starts' if hit else 'does not start'} with {preview(prefix)}")


# ------------------------------------------------------------------------------------------ regex


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str] | str:
    """The compiled pattern, or the problem text when it is invalid."""
    try:
        return re.compile(pattern)
    except re.error as error:
        return f"invalid regular expression: {error} (Python re syntax)"


def _pattern(value: Any) -> re.Pattern[str] | str:
    if not isinstance(value, str) or value == "":
        return "regex needs a non-empty pattern string (Python re syntax)"
    return _compile(value)


def _check_regex(value: Any, _config: Mapping[str, Any]) -> str | None:
    compiled = _pattern(value)
    return compiled if isinstance(compiled, str) else None


@assertion(
    "regex",
    family="text",
    description="Output matches the Python regular expression somewhere (re.search)",
    requires_value=True,
    check=_check_regex,
)
def regex(ctx: AssertionContext) -> AssertionResult:
    compiled = _pattern(ctx.value)
    if isinstance(compiled, str):
        return AssertionResult.failure(compiled)
    match = compiled.search(ctx.output_text)
    if match is None:
        return _passed(False, f"Output does not match /{ctx.value}/")
    return _passed(
        True, f"Output matches /{ctx.value}/ at {preview(match.group(0), 40)}", span=list(match.span())
    )


# ------------------------------------------------------------------------------------ levenshtein


def _strip_common_affixes(left: str, right: str) -> tuple[str, str]:
    """Drop the shared prefix and suffix: they never change the distance."""
    shortest = min(len(left), len(right))
    start = 0
    while start < shortest and left[start] == right[start]:
        start += 1
    end = 0
    while end < shortest - start and left[-1 - end] == right[-1 - end]:
        end += 1
    return left[start : len(left) - end], right[start : len(right) - end]


def levenshtein_distance(left: str, right: str) -> int:
    """Edit distance (insert, delete, substitute) by code point.

    Myers/Hyyrö bit-parallel algorithm: the DP column is a Python int bit-vector, so the cost is
    one handful of big-int operations per character of the longer string.
    """
    if left == right:
        return 0
    left, right = _strip_common_affixes(left, right)
    if len(left) > len(right):
        left, right = right, left
    if not left:
        return len(right)
    masks: dict[str, int] = {}
    for index, char in enumerate(left):
        masks[char] = masks.get(char, 0) | (1 << index)
    full = (1 << len(left)) - 1
    last = 1 << (len(left) - 1)
    positive, negative, distance = full, 0, len(left)
    for char in right:
        eq = masks.get(char, 0)
        vertical = eq | negative
        horizontal = ((((eq & positive) + positive) & full) ^ positive) | eq
        plus = negative | (~(horizontal | positive) & full)
        minus = positive & horizontal
        if plus & last:
            distance += 1
        elif minus & last:
            distance -= 1
        plus = ((plus << 1) | 1) & full
        minus = (minus << 1) & full
        positive = minus | (~(vertical | plus) & full)
        negative = plus & vertical
    return distance


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
    check=_check_levenshtein,
)
def levenshtein(ctx: AssertionContext) -> AssertionResult:
    problem = _check_levenshtein(ctx.value, ctx.config)
    if problem:
        return AssertionResult.failure(problem)
    threshold = 5.0 if ctx.threshold is None else ctx.threshold
    if threshold < 0 or math.isnan(threshold):
        return AssertionResult.failure(f"levenshtein threshold must be a distance >= 0 (got {threshold:g})")
    distance = levenshtein_distance(ctx.output_text, stringify_value(ctx.value))
    hit = distance <= threshold
    relation = "less than or equal to" if hit else "greater than"
    return _passed(
        hit,
        f"Levenshtein distance {distance} is {relation} threshold {threshold:g}",
        distance=distance,
    )


# ------------------------------------------------------------------------------------- word-count


def _integer(value: Any) -> int | None:
    """A non-negative whole number from an int, an integral float or a digit string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
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
    check=_check_word_count,
)
def word_count(ctx: AssertionContext) -> AssertionResult:
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
