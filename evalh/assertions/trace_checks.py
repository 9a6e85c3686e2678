"""Assertions on a row's spans: ``trace-span-count``, ``trace-span-duration``, ``trace-error-spans``.

promptfoo's semantics (``src/assertions/traceSpanCount.ts``, ``traceSpanDuration.ts``,
``traceErrorSpans.ts``): span names are matched with its case-insensitive glob (``*``, ``?``), durations
are milliseconds, and a span is an error by its status (ERROR), an error-like attribute (``error``,
``exception``, ``failed``, ``failure``; ``http.status_code`` >= 400; ``otel.status_code`` /
``status.code`` ERROR) or an error-like status message. Each is a pass/fail check; ``not-`` inverts it in
the scorer (promptfoo's handlers ignore ``not-`` for these three: evalh inverts them as every other type).

A row's spans come from ``ctx.trace`` (see :func:`row_spans`): tracing off, or no spans after the wait,
is an ERROR saying which and how to fix it, never a failure (promptfoo's "no trace data" error).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import NONBLANK_TEXT, assertion
from evalh.assertions.strings import stringify_value
from evalh.assertions.trace_steps import Step, matches_pattern, status_number, trajectory_steps
from evalh.model import AssertionResult, Measurement, Span

__all__ = [
    "GLOB_TEXT",
    "bounds_problem",
    "expected_bounds",
    "is_error_span",
    "on_spans",
    "row_spans",
    "row_steps",
]

FAMILY = "trace"

TRACING_OFF = "tracing is off: add `tracing: {enabled: true}` to the config"
GLOB_TEXT: Mapping[str, Any] = {
    **NONBLANK_TEXT,
    "description": "A span or step name, or a glob: * any characters, ? one (case-insensitive).",
}
_COUNT: Mapping[str, Any] = {"type": "number", "minimum": 0}

EVALH_SERVICE = "evalh"  # the service of evalh's own spans of a call (evalh/tracing/genai.py)
# What a user most often got wrong when this shows (seen trying it): no parent from the traceparent, or a
# BatchSpanProcessor that exports seconds after call_api returned, when the row is already graded.
ONLY_EVALH_SPANS = (
    " (the trace holds only evalh's span of the provider call: the provider exported no spans of its own"
    " in time. Start them from context['traceparent'] and export them before returning: a"
    " SimpleSpanProcessor, or provider.force_flush() after a BatchSpanProcessor; see docs/agents.md, Tracing)"
)
_ERROR_ATTRIBUTES = ("error", "exception", "failed", "failure")
_ERROR_MESSAGE = re.compile(r"error|failed|failure|exception|timeout|abort", re.IGNORECASE)


async def row_spans(ctx: AssertionContext) -> tuple[Span, ...] | AssertionResult:
    """The row's spans, after the bounded wait for late ones; an ERROR result when there are none."""
    if ctx.trace is None:
        return AssertionResult.failure(TRACING_OFF)
    spans = await ctx.trace.spans()
    if not spans:
        return AssertionResult.failure(
            f"the provider sent no spans for trace {ctx.trace.trace_id}: a Python or JavaScript provider "
            "starts its spans from context['traceparent'] (an exec: provider from $TRACEPARENT) and exports "
            "them over OTLP/HTTP to evalh's receiver ($OTEL_EXPORTER_OTLP_ENDPOINT)"
        )
    return spans


SpansHandler = Callable[[AssertionContext, tuple[Span, ...]], Awaitable[AssertionResult | Measurement]]


def row_steps(ctx: AssertionContext, spans: Sequence[Span]) -> tuple[Step, ...]:
    """The row's spans as trajectory steps, with the run's ``tracing.commandToolNames``."""
    return trajectory_steps(spans, ctx.trace.command_tool_names if ctx.trace is not None else ())


def on_spans(fn: SpansHandler) -> Callable[[AssertionContext], Awaitable[AssertionResult | Measurement]]:
    """A trace assertion's handler, given the row's spans; the ERROR of :func:`row_spans` when there
    are none (so no handler reads a trace that is not there)."""

    @functools.wraps(fn)
    async def run(ctx: AssertionContext) -> AssertionResult | Measurement:
        spans = await row_spans(ctx)
        if isinstance(spans, AssertionResult):
            return spans
        outcome = await fn(ctx, spans)
        if isinstance(outcome, Measurement) and all(span.service == EVALH_SERVICE for span in spans):
            return _with_hint(outcome)
        return outcome

    return run


def _with_hint(outcome: Measurement) -> Measurement:
    """A measurement over evalh's own spans only (the provider exported none), saying so: as in promptfoo
    the trace holds the call's span, so the check runs, but its reader learns why no tool was seen."""
    if outcome.plain is not None:
        return dataclasses.replace(outcome, plain=outcome.plain + ONLY_EVALH_SPANS)
    return dataclasses.replace(outcome, suffix=outcome.suffix + ONLY_EVALH_SPANS)


def bounds_problem(value: Any, _config: Mapping[str, Any] | None = None) -> str | None:
    """``min`` above ``max`` can never pass: say so at load rather than fail every row."""
    if isinstance(value, Mapping):
        low, high = value.get("min"), value.get("max")
        if isinstance(low, int | float) and isinstance(high, int | float) and low > high:
            return f"min ({stringify_value(low)}) must not be above max ({stringify_value(high)})"
    return None


def _number(value: float) -> str:
    """A figure as JavaScript prints it (3000, not 3000.0)."""
    return stringify_value(value)


def expected_bounds(low: float | None, high: float | None) -> str | None:
    """How promptfoo's reasons state a count's bounds: ``2-4``, ``at least 2``, ``at most 4``."""
    if low is not None and high is not None:
        return f"{_number(low)}-{_number(high)}"
    if low is not None:
        return f"at least {_number(low)}"
    return None if high is None else f"at most {_number(high)}"


# ------------------------------------------------------------------------------ trace-span-count


@assertion(
    "trace-span-count",
    family=FAMILY,
    description="The number of spans whose name matches a glob lies within {min, max}",
    requires_value=True,
    value_schema={
        "type": "object",
        "properties": {"pattern": GLOB_TEXT, "min": _COUNT, "max": _COUNT},
        "required": ["pattern"],
        "additionalProperties": False,
        "description": "{pattern, min, max}: a span-name glob, and the bounds of its count.",
    },
    check=bounds_problem,
)
@on_spans
async def trace_span_count(ctx: AssertionContext, spans: tuple[Span, ...]) -> Measurement:
    pattern, low, high = ctx.value["pattern"], ctx.value.get("min"), ctx.value.get("max")
    matching = [span for span in spans if matches_pattern(span.name, pattern)]
    count = len(matching)
    passed = True
    if low is not None and count < low:
        passed = False
        reason = f'Found {count} spans matching pattern "{pattern}", expected at least {_number(low)}'
    elif high is not None and count > high:
        passed = False
        reason = f'Found {count} spans matching pattern "{pattern}", expected at most {_number(high)}'
    else:
        bounds = expected_bounds(low, high)
        reason = f'Found {count} spans matching pattern "{pattern}"' + (
            f" (expected {bounds})" if bounds else ""
        )
    if matching:
        reason += f". Matched spans: {', '.join(dict.fromkeys(span.name for span in matching))}"
    return Measurement.pass_fail(passed, reason, count=count)


# --------------------------------------------------------------------------- trace-span-duration


def _percentile(durations: list[float], percentile: float) -> float:
    """promptfoo's nearest-rank percentile: the ceil(p/100 * n)-th smallest (the smallest for p=0)."""
    ordered = sorted(durations)
    index = math.ceil(percentile / 100 * len(ordered)) - 1
    return ordered[max(0, index)]


def _slowest(named: list[tuple[str, float]], at_least: float = -math.inf) -> str:
    slow = sorted((item for item in named if item[1] >= at_least), key=lambda item: -item[1])[:3]
    return ", ".join(f"{name} ({_number(duration)}ms)" for name, duration in slow)


@assertion(
    "trace-span-duration",
    family=FAMILY,
    description="Spans whose name matches a glob (default all) last at most max ms (or a percentile does)",
    requires_value=True,
    value_schema={
        "type": "object",
        "properties": {
            "pattern": {**GLOB_TEXT, "description": "The spans to time (a glob; default * for all)."},
            "max": {"type": "number", "description": "The longest duration allowed, in milliseconds."},
            "percentile": {
                "type": "number",
                "minimum": 0,
                "maximum": 100,
                "description": "Check this percentile (0-100, e.g. 95) of the durations instead of each.",
            },
        },
        "required": ["max"],
        "additionalProperties": False,
        "description": "{max, pattern, percentile}: the longest span duration allowed, in ms.",
    },
)
@on_spans
async def trace_span_duration(
    ctx: AssertionContext, spans: tuple[Span, ...]
) -> AssertionResult | Measurement:
    pattern, limit = ctx.value.get("pattern") or "*", ctx.value["max"]
    percentile = ctx.value.get("percentile")
    timed: list[tuple[str, float]] = []
    for span in spans:  # an unended span has no duration: promptfoo leaves it out
        duration = span.duration_ms
        if duration is not None and matches_pattern(span.name, pattern):
            timed.append((span.name, duration))
    if not timed:
        return Measurement.pass_fail(
            True, f'No spans found matching pattern "{pattern}" with complete timing data'
        )
    if percentile is None:
        slow = [item for item in timed if item[1] > limit]
        if slow:
            reason = (
                f"{len(slow)} span(s) exceed duration threshold {_number(limit)}ms. Slowest: {_slowest(slow)}"
            )
            return Measurement.pass_fail(False, reason)
        longest = max(duration for _, duration in timed)
        reason = (
            f'All {len(timed)} spans matching pattern "{pattern}" completed within {_number(limit)}ms '
            f"(max: {_number(longest)}ms)"
        )
        return Measurement.pass_fail(True, reason)
    figure = _percentile([duration for _, duration in timed], percentile)
    label = f"{_number(percentile)}th percentile duration ({_number(figure)}ms)"
    if figure > limit:
        reason = f"{label} exceeds threshold {_number(limit)}ms. Slowest spans: {_slowest(timed, figure)}"
        return Measurement.pass_fail(False, reason, percentile_ms=figure)
    return Measurement.pass_fail(
        True, f"{label} is within threshold {_number(limit)}ms", percentile_ms=figure
    )


# ----------------------------------------------------------------------------- trace-error-spans


def _http_status(value: Any) -> float:
    """JavaScript's Number() of an attribute, enough for promptfoo's ``>= 400``: NaN when not a number."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        try:
            return float(text)
        except ValueError:
            return math.nan
    return math.nan


def is_error_span(span: Span) -> bool:
    """promptfoo's error rules: status ERROR, an error-like attribute, or an error-like status message."""
    if span.status_code == "ERROR":
        return True
    attributes = span.attributes
    for key in _ERROR_ATTRIBUTES:
        flag = attributes.get(key)
        if flag is True or flag == "true" or isinstance(flag, Mapping | list | tuple):
            return True
    status = attributes.get("http.status_code")
    if status is not None and _http_status(status) >= 400:
        return True
    if attributes.get("otel.status_code") == "ERROR" or attributes.get("status.code") == "ERROR":
        return True
    return bool(span.status_message) and _ERROR_MESSAGE.search(span.status_message) is not None


def _error_detail(span: Span) -> str:
    if span.status_message:
        return f"{span.name} ({span.status_message})"
    code = status_number(span)
    return f"{span.name} (status: {code})" if code else span.name


@assertion(
    "trace-error-spans",
    family=FAMILY,
    description="At most max_count (default 0) spans, or max_percentage of them, are errors",
    value_schema={
        "anyOf": [
            {**_COUNT, "description": "The most error spans allowed."},
            {
                "type": "object",
                "properties": {
                    "max_count": {**_COUNT, "description": "The most error spans allowed."},
                    "max_percentage": {
                        **_COUNT,
                        "description": "The highest share of error spans allowed, in percent (0-100).",
                    },
                    "pattern": {
                        **GLOB_TEXT,
                        "description": "The spans to check (a glob; default * for all).",
                    },
                },
                "additionalProperties": False,
            },
        ],
        "description": "A number (the most error spans allowed; default 0), or "
        "{max_count, max_percentage, pattern}.",
    },
)
@on_spans
async def trace_error_spans(ctx: AssertionContext, spans: tuple[Span, ...]) -> Measurement:
    value = ctx.value
    most: float | None = None
    share: float | None = None
    pattern = "*"
    if isinstance(value, int | float):
        most = value
    elif isinstance(value, Mapping):
        most, share, pattern = (
            value.get("max_count"),
            value.get("max_percentage"),
            value.get("pattern") or "*",
        )
    if most is None and share is None:
        most = 0
    matching = [span for span in spans if matches_pattern(span.name, pattern)]
    if not matching:
        return Measurement.pass_fail(True, f'No spans found matching pattern "{pattern}"')
    errors = [span for span in matching if is_error_span(span)]
    rate = len(errors) / len(matching) * 100
    if most is not None and len(errors) > most:
        details = ", ".join(_error_detail(span) for span in errors[:3])
        more = f" and {len(errors) - 3} more" if len(errors) > 3 else ""
        reason = f"Found {len(errors)} error spans, expected at most {_number(most)}. Errors: {details}{more}"
        return Measurement.pass_fail(False, reason, errors=len(errors))
    if share is not None and rate > share:
        reason = (
            f"Error rate {rate:.1f}% exceeds threshold {_number(share)}% "
            f"({len(errors)} errors out of {len(matching)} spans)"
        )
        return Measurement.pass_fail(False, reason, errors=len(errors))
    if not errors:
        return Measurement.pass_fail(
            True, f'No errors found in {len(matching)} spans matching pattern "{pattern}"'
        )
    reason = f"Found {len(errors)} error(s) in {len(matching)} spans ({rate:.1f}%)"
    if most is not None:
        reason += f", within threshold of {_number(most)}"
    if share is not None:
        reason += f", within threshold of {_number(share)}%"
    return Measurement.pass_fail(True, reason, errors=len(errors))
