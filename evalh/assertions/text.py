"""Deterministic text assertions: equals, the contains family, starts-with, regex, levenshtein, word-count.

Each handler measures the positive form: a pass/fail verdict (``PassFail``: passed, reason, details) for
the pass/fail checks, a ``Measurement`` of the edit distance for ``levenshtein``; ``runner/scoring.py``
decides: the threshold, ``not-``, the score. Reasons state the actual relation ("Output contains
'foo'" / "Output does not contain 'foo'") so they read well either way.

``regex`` uses Python's ``re`` syntax (``re.search``: found anywhere, no flags; use inline flags such as
``(?i)``), searched with a time limit (``evalh/runtimes/patterns.py``: 1 s, or ``config.timeoutMs``).
Text is compared by Unicode code point (promptfoo compares UTF-16 code units).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from evalh.assertions.registry import NONEMPTY_TEXT, TIMEOUT_CONFIG, output_check
from evalh.assertions.strings import (
    deep_equal,
    json_default,
    levenshtein_distance,
    parse_item_list,
    parse_json_output,
    preview,
    stringify_value,
)
from evalh.common.deadlines import REGEX_TIMEOUT_S, configured_timeout_s, timeout_problem
from evalh.model import AssertionResult, AssertionSpec, Measurement, PassFail, pass_fail
from evalh.runtimes.patterns import PatternTimedOut, compile_pattern, search

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

# Value shapes, declared once per type: the config schema's per-type rules are generated from these,
# validate checks every rendered value against them, and the handlers below rely on them.
_SCALAR_VALUE: dict[str, Any] = {
    "anyOf": [{"type": "string", "minLength": 1}, {"type": "number"}],
    "description": "A non-empty text, or a number.",
}
_ITEMS_VALUE: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "minItems": 1, "items": {"type": ["string", "number"]}},
    ],
    "description": "A list of texts, or a comma-separated text.",
}
_ANY_VALUE: dict[str, Any] = {
    "description": "The expected output: a text or number, or an object or list compared with the "
    "output parsed as JSON."
}
_REFERENCE_VALUE: dict[str, Any] = {"type": "string", "description": "The reference text."}
_WORDS = {"type": "integer", "minimum": 0}
_WORD_COUNT_VALUE: dict[str, Any] = {
    "description": "A number of words, or {min, max}.",
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
    ],
}


_passed = pass_fail  # a pass/fail check's verdict: runner/scoring.py decides what it scores


def _check_items(value: Any, _config: Mapping[str, Any]) -> str | None:
    """A comma-separated text can still hold no item (", ,"): its shape cannot tell."""
    return None if parse_item_list(value) else "needs at least one item (the value lists none)"


# ----------------------------------------------------------------------------------------- equals


@output_check(
    "equals",
    family="text",
    description="Output equals the value exactly (deep JSON equality when the value is an object or list)",
    requires_value=True,
    value_schema=_ANY_VALUE,
)
def equals(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    value = spec.value
    # a text value asked first: an isinstance of the Mapping ABC is the slow part of most equals checks
    if not isinstance(value, str) and isinstance(value, Mapping | list | tuple):
        expected = json.dumps(value, ensure_ascii=False, default=json_default)
        parsed, actual, _ = parse_json_output(output)
        if not parsed:
            return _passed(False, f"Output is not JSON, so it does not equal {preview(expected)}")
        hit = deep_equal(actual, value)
    else:
        expected = stringify_value(value)
        hit = text == expected
    if hit:
        return _passed(True, f"Output equals {preview(expected)}")
    return _passed(False, f"Output {preview(text)} does not equal {preview(expected)}")


# --------------------------------------------------------------------------------- contains family


def _contains(value: Any, text: str, fold: bool) -> PassFail:
    needle = stringify_value(value)
    hit = needle.lower() in text.lower() if fold else needle in text
    case = " (ignoring case)" if fold else ""
    verb = "contains" if hit else "does not contain"
    return _passed(hit, f"Output {verb} {preview(needle)}{case}")


@output_check(
    "contains",
    family="text",
    description="Output contains the value (case-sensitive substring)",
    requires_value=True,
    value_schema=_SCALAR_VALUE,
)
def contains(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    return _contains(spec.value, text, fold=False)


@output_check(
    "icontains",
    family="text",
    description="Output contains the value, ignoring case",
    requires_value=True,
    value_schema=_SCALAR_VALUE,
)
def icontains(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    return _contains(spec.value, text, fold=True)


def _items(value: Any) -> tuple[str, ...]:
    return parse_item_list(value) or ()  # validate refused a value that lists no item


def _found(items: Iterable[str], text: str, fold: bool) -> list[bool]:
    if fold:
        text = text.lower()
        return [item.lower() in text for item in items]
    return [item in text for item in items]


def _contains_any(value: Any, text: str, fold: bool) -> PassFail:
    items = _items(value)
    found = [item for item, hit in zip(items, _found(items, text, fold), strict=True) if hit]
    case = " (ignoring case)" if fold else ""
    if found:
        return _passed(
            True, f"Output contains {preview(found[0])}{case}, one of {len(items)} items", found=found
        )
    return _passed(False, f"Output contains none of {list(items)}{case}", found=found)


def _contains_all(value: Any, text: str, fold: bool) -> PassFail:
    items = _items(value)
    missing = [item for item, hit in zip(items, _found(items, text, fold), strict=True) if not hit]
    case = " (ignoring case)" if fold else ""
    if not missing:
        return _passed(True, f"Output contains all {len(items)} items{case}", missing=missing)
    return _passed(
        False,
        f"Output lacks {len(missing)} of {len(items)} items{case}. Missing: {missing}",
        missing=missing,
    )


@output_check(
    "contains-any",
    family="text",
    description="Output contains at least one of the items (list or comma-separated string)",
    requires_value=True,
    value_schema=_ITEMS_VALUE,
    check=_check_items,
)
def contains_any(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    return _contains_any(spec.value, text, fold=False)


@output_check(
    "icontains-any",
    family="text",
    description="Output contains at least one of the items, ignoring case",
    requires_value=True,
    value_schema=_ITEMS_VALUE,
    check=_check_items,
)
def icontains_any(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    return _contains_any(spec.value, text, fold=True)


@output_check(
    "contains-all",
    family="text",
    description="Output contains every item (list or comma-separated string)",
    requires_value=True,
    value_schema=_ITEMS_VALUE,
    check=_check_items,
)
def contains_all(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    return _contains_all(spec.value, text, fold=False)


@output_check(
    "icontains-all",
    family="text",
    description="Output contains every item, ignoring case",
    requires_value=True,
    value_schema=_ITEMS_VALUE,
    check=_check_items,
)
def icontains_all(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    return _contains_all(spec.value, text, fold=True)


@output_check(
    "starts-with",
    family="text",
    description="Output starts with the value",
    requires_value=True,
    value_schema=_SCALAR_VALUE,
)
def starts_with(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    prefix = stringify_value(spec.value)
    hit = text.startswith(prefix)
    return _passed(hit, f"Output {'starts' if hit else 'does not start'} with {preview(prefix)}")


# ------------------------------------------------------------------------------------------ regex


def _check_regex(value: Any, config: Mapping[str, Any]) -> str | None:
    compiled = compile_pattern(value)
    return compiled if isinstance(compiled, str) else timeout_problem(config)


@output_check(
    "regex",
    family="text",
    description="Output matches the Python regular expression somewhere (re.search)",
    requires_value=True,
    value_schema=NONEMPTY_TEXT,
    config_schema=TIMEOUT_CONFIG,
    check=_check_regex,
)
def regex(spec: AssertionSpec, output: Any, text: str) -> AssertionResult | PassFail:
    compiled = compile_pattern(spec.value)
    assert not isinstance(compiled, str), "validate compiled this pattern"
    try:
        match = search(compiled, text, configured_timeout_s(spec.config, REGEX_TIMEOUT_S))
    except PatternTimedOut as error:
        return AssertionResult.failure(str(error))
    if match is None:
        return _passed(False, f"Output does not match /{spec.value}/")
    return _passed(
        True, f"Output matches /{spec.value}/ at {preview(match.group(0), 40)}", span=list(match.span())
    )


# ------------------------------------------------------------------------------------ levenshtein


@output_check(
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
)
def levenshtein(spec: AssertionSpec, output: Any, text: str) -> Measurement:
    distance = levenshtein_distance(text, stringify_value(spec.value))
    return Measurement(
        value=float(distance), subject=f"Levenshtein distance {distance}", details={"distance": distance}
    )


# ------------------------------------------------------------------------------------- word-count


def _word_bounds(value: Any) -> tuple[int | None, int | None]:
    """(min, max) from N or {min, max}, a shape validate has checked (whole numbers >= 0)."""
    if isinstance(value, Mapping):
        low, high = value.get("min"), value.get("max")
        return (None if low is None else int(low), None if high is None else int(high))
    return int(value), int(value)


def _check_word_count(value: Any, _config: Mapping[str, Any]) -> str | None:
    low, high = _word_bounds(value)
    if low is not None and high is not None and low > high:
        return f"word-count min {low} is greater than max {high}"
    return None


@output_check(
    "word-count",
    family="text",
    description="Output has exactly N words, or between min and max words (whitespace-separated)",
    requires_value=True,
    value_schema=_WORD_COUNT_VALUE,
    check=_check_word_count,
)
def word_count(spec: AssertionSpec, output: Any, text: str) -> PassFail:
    low, high = _word_bounds(spec.value)
    count = len(text.split())
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
