"""trace-span-count, trace-span-duration and trace-error-spans: promptfoo's verdicts and reasons."""

from __future__ import annotations

from typing import Any

import pytest

from evalh.assertions.trace_checks import TRACING_OFF, is_error_span
from tests.assertions.helpers import declared_problems
from tests.assertions.trace_support import TRACE_ID, MemoryTrace, run_trace_assertion, span

SPANS = [
    span("llm.chat", 0, duration_ms=120),
    span("LLM.embed", 10, duration_ms=30),
    span("db.query", 20, duration_ms=5),
    span("db.query", 30, duration_ms=7.5),
    span("http.fetch", 40, duration_ms=None),  # not ended: no duration
]

# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides).
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "trace-span-count": {
        "value": {"pattern": "db.*", "min": 1},
        "output": "done",
        "trace": MemoryTrace(SPANS),
    },
    "trace-span-duration": {"value": {"max": 500}, "output": "done", "trace": MemoryTrace(SPANS)},
    "trace-error-spans": {"value": 0, "output": "done", "trace": MemoryTrace(SPANS)},
}


def verdict(kind: str, value: Any, spans: Any = SPANS) -> tuple[bool, str]:
    graded = run_trace_assertion(kind, value, spans)
    assert not graded.error, graded.reason
    return graded.passed, graded.reason


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("trace-span-count", {"pattern": "*"}),
        ("trace-span-duration", {"max": 1}),
        ("trace-error-spans", 0),
    ],
)
def test_no_trace_or_no_spans_is_an_error(kind: str, value: Any) -> None:
    off = run_trace_assertion(f"not-{kind}", value, None)
    assert off.error and not off.passed and off.reason == TRACING_OFF
    empty = run_trace_assertion(kind, value, [])
    assert empty.error and f"no spans for trace {TRACE_ID}" in empty.reason


def test_a_trace_of_evalhs_own_span_only_is_graded_and_its_reason_says_so() -> None:
    import dataclasses

    from evalh.assertions.trace_checks import ONLY_EVALH_SPANS

    own = dataclasses.replace(span("file://agent.py", 0, duration_ms=50), service="evalh")
    for kind, value in [("trajectory:tool-used", "search"), ("trace-span-count", {"pattern": "*", "min": 1})]:
        graded = run_trace_assertion(kind, value, [own])
        assert not graded.error and graded.reason.endswith(ONLY_EVALH_SPANS)
        # what to do, for the two usual causes: no parent from the traceparent, a batch exporter's delay
        assert "context['traceparent']" in graded.reason and "force_flush()" in graded.reason
    passed, reason = verdict("trace-span-count", {"pattern": "*", "min": 1}, [own, span("tool.search", 1)])
    assert passed and ONLY_EVALH_SPANS not in reason


def test_span_count() -> None:
    assert verdict("trace-span-count", {"pattern": "*llm*", "min": 2}) == (
        True,
        'Found 2 spans matching pattern "*llm*" (expected at least 2). Matched spans: llm.chat, LLM.embed',
    )
    assert verdict("trace-span-count", {"pattern": "db.*", "max": 1}) == (
        False,
        'Found 2 spans matching pattern "db.*", expected at most 1. Matched spans: db.query',
    )
    assert verdict("trace-span-count", {"pattern": "cache*", "min": 1}) == (
        False,
        'Found 0 spans matching pattern "cache*", expected at least 1',
    )
    assert verdict("trace-span-count", {"pattern": "db.query", "min": 2, "max": 4})[1].startswith(
        'Found 2 spans matching pattern "db.query" (expected 2-4)'
    )
    assert verdict("not-trace-span-count", {"pattern": "db.*", "max": 1})[0]


def test_span_duration_each_span() -> None:
    assert verdict("trace-span-duration", {"max": 200}) == (
        True,
        'All 4 spans matching pattern "*" completed within 200ms (max: 120ms)',
    )
    assert verdict("trace-span-duration", {"max": 6}) == (
        False,
        "3 span(s) exceed duration threshold 6ms. "
        "Slowest: llm.chat (120ms), LLM.embed (30ms), db.query (7.5ms)",
    )
    assert verdict("trace-span-duration", {"pattern": "cache*", "max": 1}) == (
        True,
        'No spans found matching pattern "cache*" with complete timing data',
    )


@pytest.mark.parametrize(
    ("percentile", "figure"),
    [(0, "5"), (25, "5"), (50, "7.5"), (51, "30"), (75, "30"), (100, "120")],
)
def test_span_duration_nearest_rank_percentile(percentile: float, figure: str) -> None:
    passed, reason = verdict("trace-span-duration", {"max": 30, "percentile": percentile})
    assert reason.startswith(f"{percentile}th percentile duration ({figure}ms)")
    assert passed is (float(figure) <= 30)


def test_span_duration_percentile_failure_names_the_slowest() -> None:
    assert verdict("trace-span-duration", {"pattern": "*", "max": 10, "percentile": 95}) == (
        False,
        "95th percentile duration (120ms) exceeds threshold 10ms. Slowest spans: llm.chat (120ms)",
    )


@pytest.mark.parametrize(
    ("attributes", "status", "message", "error"),
    [
        ({}, "ERROR", "", True),
        ({}, "OK", "", False),
        ({"error": True}, "UNSET", "", True),
        ({"exception": "true"}, "UNSET", "", True),
        ({"failed": {"why": "x"}}, "UNSET", "", True),
        ({"failure": ["x"]}, "UNSET", "", True),
        ({"error": False}, "UNSET", "", False),
        ({"error": "no"}, "UNSET", "", False),
        ({"http.status_code": 404}, "UNSET", "", True),
        ({"http.status_code": "503"}, "UNSET", "", True),
        ({"http.status_code": 399}, "UNSET", "", False),
        ({"http.status_code": "n/a"}, "UNSET", "", False),
        ({"otel.status_code": "ERROR"}, "UNSET", "", True),
        ({"status.code": "ERROR"}, "UNSET", "", True),
        ({}, "UNSET", "Request Timeout", True),
        ({}, "OK", "aborted by user", True),
        ({}, "OK", "all good", False),
    ],
)
def test_error_span_rules(attributes: dict[str, Any], status: str, message: str, error: bool) -> None:
    assert is_error_span(span("s", attributes=attributes, status=status, message=message)) is error


ERRORS = [
    span("api.call", 0, status="ERROR", message="upstream failed"),
    span("api.call", 1, attributes={"http.status_code": 500}),
    span("api.retry", 2, status="ERROR"),
    span("api.call", 3, attributes={"error": True}),
    span("api.ok", 4),
    span("db.ok", 5),
]


def test_error_spans_max_count() -> None:
    assert verdict("trace-error-spans", 0, SPANS) == (True, 'No errors found in 5 spans matching pattern "*"')
    assert verdict("trace-error-spans", None, ERRORS)[0] is False  # no value: none allowed
    assert verdict("trace-error-spans", {"max_count": 1}, ERRORS) == (
        False,
        "Found 4 error spans, expected at most 1. Errors: api.call (upstream failed), api.call, "
        "api.retry (status: 2) and 1 more",
    )
    assert verdict("trace-error-spans", 4, ERRORS) == (
        True,
        "Found 4 error(s) in 6 spans (66.7%), within threshold of 4",
    )


def test_error_spans_percentage_and_pattern() -> None:
    assert verdict("trace-error-spans", {"max_percentage": 50}, ERRORS) == (
        False,
        "Error rate 66.7% exceeds threshold 50% (4 errors out of 6 spans)",
    )
    assert verdict("trace-error-spans", {"max_percentage": 80, "pattern": "api.*"}, ERRORS) == (
        True,
        "Found 4 error(s) in 5 spans (80.0%), within threshold of 80%",
    )
    assert verdict("trace-error-spans", {"pattern": "db.*"}, ERRORS)[0]
    assert verdict("trace-error-spans", {"pattern": "queue.*"}, ERRORS) == (
        True,
        'No spans found matching pattern "queue.*"',
    )
    assert verdict("not-trace-error-spans", {"pattern": "api.*"}, ERRORS)[0]


@pytest.mark.parametrize(
    ("assertion", "problem"),
    [
        ({"type": "trace-span-count", "value": {"min": 1}}, "missing required key 'pattern'"),
        (
            {"type": "trace-span-count", "value": {"pattern": "x", "min": 3, "max": 2}},
            "must not be above max",
        ),
        ({"type": "trace-span-duration", "value": {"pattern": "x"}}, "missing required key 'max'"),
        ({"type": "trace-span-duration", "value": {"max": 5, "percentile": 150}}, "must be <= 100"),
        ({"type": "trace-span-duration", "value": {"max": "5s"}}, "must be a number"),
        ({"type": "trace-error-spans", "value": {"max_cont": 1}}, "Did you mean 'max_count'"),
        ({"type": "trace-error-spans", "value": -1}, "value"),
    ],
)
def test_bad_values_are_config_problems(assertion: dict[str, Any], problem: str) -> None:
    found = declared_problems(assertion)
    assert found and problem in found[0], found
