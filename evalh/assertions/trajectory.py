"""Assertions on what an agent did: ``trajectory:tool-used``, ``trajectory:tool-args-match``,
``trajectory:tool-sequence`` and ``trajectory:step-count`` (``trajectory:goal-success``, a judge, is in
``trajectory_goal.py``).

promptfoo's semantics and value shapes (``src/assertions/trajectory.ts``): the row's spans become
normalised steps (``trace_steps.py``); tool names and step names are matched with its case-insensitive
glob. Each deterministic type is a pass/fail check and ``not-`` inverts it in the scorer, with one
exception kept from promptfoo: ``not-trajectory:tool-used`` with a list forbids every tool listed (it
passes only when none was used), which is not the inverse of "all were used". No trace, or no spans:
an ERROR (``trace_checks.on_spans``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import assertion
from evalh.assertions.strings import deep_equal
from evalh.assertions.trace_checks import GLOB_TEXT, bounds_problem, expected_bounds, on_spans, row_steps
from evalh.assertions.trace_steps import (
    Step,
    StepMatcher,
    format_args,
    matches_pattern,
)
from evalh.model import Measurement, Span

__all__ = ["args_match", "partial_match"]

FAMILY = "trajectory"

STEP_TYPES = ("tool", "command", "search", "reasoning", "message", "span")
_STEP_TYPE: Mapping[str, Any] = {"enum": list(STEP_TYPES), "description": "A step type."}
_COUNT: Mapping[str, Any] = {"type": "number", "minimum": 0}
_NAMED: list[Mapping[str, Any]] = [{"required": ["name"]}, {"required": ["pattern"]}]
_MATCHER_KEYS: Mapping[str, Any] = {
    "name": {**GLOB_TEXT, "description": "The tool or step name (a glob)."},
    "pattern": {**GLOB_TEXT, "description": "The tool or step name (a glob)."},
}
_STEP: Mapping[str, Any] = {
    "anyOf": [
        GLOB_TEXT,
        {
            "type": "object",
            "properties": {**_MATCHER_KEYS, "type": _STEP_TYPE},
            "anyOf": _NAMED,
            "additionalProperties": False,
        },
    ],
    "description": "A tool name or glob, or {name | pattern}.",
}
_MODE_IN_ORDER = {
    "enum": ["in_order", "exact"],
    "description": "in_order (default: other tools between) or exact.",
}


def _tool_steps(ctx: AssertionContext, spans: Sequence[Span]) -> list[Step]:
    return [step for step in row_steps(ctx, spans) if step.type == "tool"]


def _listed(labels: Sequence[str]) -> str:
    return ", ".join(labels) if labels else "(none)"


# ------------------------------------------------------------------------------ trajectory:tool-used


@assertion(
    "trajectory:tool-used",
    family=FAMILY,
    description="Traced tool calls include a tool (name or glob), each one of a list, or {pattern, min, max}",
    requires_value=True,
    value_schema={
        "anyOf": [
            GLOB_TEXT,
            {"type": "array", "minItems": 1, "items": GLOB_TEXT},
            {
                "type": "object",
                "properties": {**_MATCHER_KEYS, "min": _COUNT, "max": _COUNT},
                "anyOf": _NAMED,
                "additionalProperties": False,
            },
        ],
        "description": "A tool name (or glob), a list of them (all must be called), or {name | pattern, min "
        "(default 1), max}.",
    },
    check=bounds_problem,
)
@on_spans
async def tool_used(ctx: AssertionContext, spans: tuple[Span, ...]) -> Measurement:
    steps = _tool_steps(ctx, spans)
    actual = _listed([step.label for step in steps])
    value = ctx.value
    if isinstance(value, Mapping):
        return _tool_count(StepMatcher.of(value, "tool"), value.get("min", 1), value.get("max"), steps)
    matchers = [StepMatcher.of(item, "tool") for item in ([value] if isinstance(value, str) else value)]
    seen = [any(matcher.matches(step) for step in steps) for matcher in matchers]
    used = [m.label for m, hit in zip(matchers, seen, strict=True) if hit]
    missing = [m.label for m, hit in zip(matchers, seen, strict=True) if not hit]
    if ctx.spec.negate:
        # promptfoo: a negated list forbids each tool in it, so the measured (positive) figure is "any of
        # them was used", and the scorer's inversion passes only when none was
        if used:
            return Measurement.pass_fail(
                True, f"Forbidden tool(s) were used: {', '.join(used)}. Actual tools: {actual}"
            )
        labels = ", ".join(m.label for m in matchers)
        return Measurement.pass_fail(False, f"Forbidden tool(s) were not used: {labels}")
    if missing:
        return Measurement.pass_fail(
            False, f"Missing required tool(s): {', '.join(missing)}. Actual tools: {actual}"
        )
    labels = ", ".join(m.label for m in matchers)
    return Measurement.pass_fail(True, f"Observed required tool(s): {labels}. Actual tools: {actual}")


def _tool_count(matcher: StepMatcher, low: float, high: float | None, steps: list[Step]) -> Measurement:
    matching = [step for step in steps if matcher.matches(step)]
    count = len(matching)
    passed = count >= low and (high is None or count <= high)
    reason = f'Matched tool "{matcher.label}" {count} time(s) (expected {expected_bounds(low, high)})'
    if matching:
        reason += f". Matches: {', '.join(step.label for step in matching)}"
    return Measurement.pass_fail(passed, reason, count=count)


# ------------------------------------------------------------------------- trajectory:tool-args-match


def partial_match(actual: Any, expected: Any) -> bool:
    """promptfoo's partial mode: every key expected is present and matches, recursively (extra keys in
    the actual arguments are fine); lists match item by item and must be as long; the rest is equality."""
    if isinstance(expected, list):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(partial_match(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and partial_match(actual[key], item) for key, item in expected.items()
        )
    return deep_equal(actual, expected)


def _without(value: Any, drop: Any) -> tuple[Any, list[str]]:
    """``value`` without the top-level keys ``drop(key, item)`` names, and those keys."""
    if not isinstance(value, Mapping):
        return value, []
    kept = {key: item for key, item in value.items() if not drop(key, item)}
    return kept, [key for key in value if key not in kept]


def _ignored(patterns: Sequence[str]) -> Any:
    # a plain entry is an exact, case-sensitive key; one with * or ? a glob
    return lambda key, _item: any(
        entry == key or (("*" in entry or "?" in entry) and matches_pattern(key, entry)) for entry in patterns
    )


def _at_default(defaults: Mapping[str, Any]) -> Any:
    return lambda key, item: key in defaults and deep_equal(item, defaults[key])


def args_match(
    actual: Any, expected: Any, mode: str, defaults: Mapping[str, Any], ignore: Sequence[str]
) -> tuple[bool, list[str], list[str]]:
    """(match?, keys ignored, keys at their default): ``ignore`` drops keys from both sides,
    ``defaults`` drops an actual key whose value equals its default; then exact or partial matching."""
    kept, ignored = _without(actual, _ignored(ignore))
    kept, at_default = _without(kept, _at_default(defaults)) if defaults else (kept, [])
    wanted, _ = _without(expected, _ignored(ignore))
    matched = deep_equal(kept, wanted) if mode == "exact" else partial_match(kept, wanted)
    return matched, ignored, at_default


@assertion(
    "trajectory:tool-args-match",
    family=FAMILY,
    description="A traced call of a tool (name or glob) had the expected arguments (partial: a subset)",
    requires_value=True,
    value_schema={
        "type": "object",
        "properties": {
            **_MATCHER_KEYS,
            "args": {"description": "The expected arguments (strings may use the test's vars)."},
            "arguments": {"description": "The expected arguments (same as args)."},
            "mode": {
                "enum": ["partial", "exact"],
                "description": "partial (default: a recursive subset) or exact.",
            },
            "defaults": {"type": "object", "description": "Arguments ignored when equal to these defaults."},
            "ignore": {
                "anyOf": [GLOB_TEXT, {"type": "array", "items": GLOB_TEXT}],
                "description": "Argument names (or globs) left out of the comparison.",
            },
        },
        "allOf": [{"anyOf": _NAMED}, {"anyOf": [{"required": ["args"]}, {"required": ["arguments"]}]}],
        "additionalProperties": False,
        "description": "{name | pattern, args | arguments, mode, defaults, ignore}.",
    },
    templated_keys=("args", "arguments"),
)
@on_spans
async def tool_args_match(ctx: AssertionContext, spans: tuple[Span, ...]) -> Measurement:
    value = ctx.value
    matcher = StepMatcher.of(value, "tool")
    expected = value["args"] if "args" in value else value["arguments"]
    mode = value.get("mode", "partial")
    ignore = [value["ignore"]] if isinstance(value.get("ignore"), str) else list(value.get("ignore") or ())
    defaults = value.get("defaults") or {}
    steps = _tool_steps(ctx, spans)
    matching = [step for step in steps if matcher.matches(step)]
    with_args = [step for step in matching if step.has_args]
    for step in with_args:
        matched, ignored, at_default = args_match(step.args, expected, mode, defaults, ignore)
        if matched:
            reason = (
                f'Tool "{matcher.label}" matched expected arguments ({mode}) on {step.label}. '
                f"Args: {format_args(step.args)}"
            )
            if ignored:
                reason += f". Ignored argument(s): {', '.join(ignored)}"
            if at_default:
                reason += f". Ignored default argument(s): {', '.join(at_default)}"
            return Measurement.pass_fail(True, reason)
    if not matching:
        actual = _listed([step.label for step in steps])
        return Measurement.pass_fail(False, f'No tool call matched "{matcher.label}". Actual tools: {actual}')
    if not with_args:
        actual = _listed([step.label for step in steps])
        reason = f'Tool "{matcher.label}" was observed but no arguments were captured. Actual tools: {actual}'
        return Measurement.pass_fail(False, reason)
    observed = ", ".join(format_args(step.args) for step in with_args)
    reason = (
        f'No call to tool "{matcher.label}" matched expected arguments ({mode}): {format_args(expected)}. '
        f"Observed args: {observed}"
    )
    return Measurement.pass_fail(False, reason)


# -------------------------------------------------------------------------- trajectory:tool-sequence


@assertion(
    "trajectory:tool-sequence",
    family=FAMILY,
    description="The traced tool calls follow the listed order (in_order: others may come between; exact)",
    requires_value=True,
    value_schema={
        "anyOf": [
            {"type": "array", "minItems": 1, "items": _STEP},
            {
                "type": "object",
                "properties": {
                    "steps": {"type": "array", "minItems": 1, "items": _STEP},
                    "mode": _MODE_IN_ORDER,
                },
                "required": ["steps"],
                "additionalProperties": False,
            },
        ],
        "description": "A list of tool names (or globs), or {steps: [...], mode: in_order | exact}.",
    },
)
@on_spans
async def tool_sequence(ctx: AssertionContext, spans: tuple[Span, ...]) -> Measurement:
    value = ctx.value
    listed, mode = (
        (value, "in_order") if isinstance(value, list) else (value["steps"], value.get("mode", "in_order"))
    )
    matchers = [StepMatcher.of(item, "tool") for item in listed]
    steps = _tool_steps(ctx, spans)
    actual = _listed([step.label for step in steps])
    if mode == "exact":
        passed = len(steps) == len(matchers) and all(
            m.matches(s) for m, s in zip(matchers, steps, strict=True)
        )
        if passed:
            return Measurement.pass_fail(True, f"Observed exact tool sequence: {actual}")
        wanted = ", ".join(m.label for m in matchers)
        return Measurement.pass_fail(
            False, f"Expected exact tool sequence of {wanted}, but actual tools were {actual}"
        )
    found: list[str] = []
    for step in steps:
        if len(found) == len(matchers):
            break
        if matchers[len(found)].matches(step):
            found.append(step.label)
    if len(found) == len(matchers):
        return Measurement.pass_fail(
            True, f"Observed tool sequence in order: {', '.join(found)}. Actual tools: {actual}"
        )
    label = matchers[len(found)].label
    return Measurement.pass_fail(
        False, f'Expected tool "{label}" was not observed in order. Actual tools: {actual}'
    )


# ----------------------------------------------------------------------------- trajectory:step-count


def _count_bounds_problem(value: Any, config: Mapping[str, Any]) -> str | None:
    if isinstance(value, Mapping) and "min" not in value and "max" not in value:
        return "needs min and/or max: the bounds of the count"
    return bounds_problem(value, config)


@assertion(
    "trajectory:step-count",
    family=FAMILY,
    description="The number of trajectory steps of a type and/or name (glob) lies within {min, max}",
    requires_value=True,
    value_schema={
        "type": "object",
        "properties": {
            **_MATCHER_KEYS,
            "type": {
                "anyOf": [_STEP_TYPE, {"type": "array", "minItems": 1, "items": _STEP_TYPE}],
                "description": f"The step type(s) counted: {', '.join(STEP_TYPES)}.",
            },
            "min": _COUNT,
            "max": _COUNT,
        },
        "additionalProperties": False,
        "description": "{type, pattern, min, max}: which steps to count (default all), and min and/or max.",
    },
    check=_count_bounds_problem,
)
@on_spans
async def step_count(ctx: AssertionContext, spans: tuple[Span, ...]) -> Measurement:
    value = ctx.value
    matcher = StepMatcher.of(value)
    low, high = value.get("min"), value.get("max")
    matching = [step for step in row_steps(ctx, spans) if matcher.matches(step)]
    count = len(matching)
    passed = (low is None or count >= low) and (high is None or count <= high)
    filters = [f"type={'|'.join(matcher.types)}"] if matcher.types else []
    if matcher.pattern or matcher.name:
        filters.append(f"pattern={matcher.label}")
    reason = f"Matched {count} trajectory step(s)" + (f" for {', '.join(filters)}" if filters else "")
    reason += f" (expected {expected_bounds(low, high)})"
    if matching:
        reason += f". Matches: {', '.join(step.label for step in matching)}"
    return Measurement.pass_fail(passed, reason, count=count)
