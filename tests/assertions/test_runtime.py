"""The runtime family: latency."""

from __future__ import annotations

from typing import Any

import pytest

from evalh.assertions.registry import all_assertions
from evalh.assertions.runtime import LATENCY_UNKNOWN
from evalh.model import AssertionResult
from tests.assertions.helpers import definition_of, grade, make_context


def run(threshold: float | None, latency_ms: float | None, cached: bool = False) -> AssertionResult:
    return grade(
        make_context("latency", output="ok", threshold=threshold, latency_ms=latency_ms, cached=cached)
    )


def test_latency_is_registered_without_a_default_threshold() -> None:
    definition = all_assertions()["latency"]
    assert definition.family == "runtime"
    assert definition.default_threshold is None  # required: the user must set it
    assert definition.threshold_meaning == "max ms"
    assert not definition.requires_value


@pytest.mark.parametrize(
    ("threshold", "latency_ms", "passed", "reason"),
    [
        (500, 120.4, True, "Latency 120.4 ms is less than or equal to threshold 500 ms"),
        (500, 500.0, True, "Latency 500 ms is less than or equal to threshold 500 ms"),
        (500, 500.4, False, "Latency 500.4 ms is greater than threshold 500 ms"),
        (100, 2500.0, False, "Latency 2500 ms is greater than threshold 100 ms"),
        (1, 0.25, True, "Latency 0.25 ms is less than or equal to threshold 1 ms"),
        (0, 0.0, True, "Latency 0 ms is less than or equal to threshold 0 ms"),
        (0, 0.04, False, "Latency 0.04 ms is greater than threshold 0 ms"),
    ],
)
def test_latency_against_the_threshold(
    threshold: float, latency_ms: float, passed: bool, reason: str
) -> None:
    result = run(threshold, latency_ms)
    assert result.passed is passed
    assert result.score == float(passed)
    assert not result.error
    assert result.reason == reason
    assert result.details["latency_ms"] == latency_ms


def test_latency_without_a_threshold_is_an_error() -> None:
    result = run(None, 100.0)
    assert result.error and not result.passed
    assert "needs a threshold" in result.reason


@pytest.mark.parametrize(("latency_ms", "cached"), [(None, False), (None, True), (35.0, True)])
def test_latency_of_cached_or_recorded_outputs_is_unknown(latency_ms: float | None, cached: bool) -> None:
    result = run(1000, latency_ms, cached=cached)
    assert result.error and not result.passed
    assert result.reason == LATENCY_UNKNOWN
    assert "--no-cache" in result.reason


def test_negative_threshold_is_an_error() -> None:
    assert run(-5, 10.0).error


@pytest.mark.parametrize(("value", "ok"), [(None, True), ("", True), (500, False), ("fast", False)])
def test_latency_check_rejects_a_value(value: Any, ok: bool) -> None:
    definition = definition_of("latency")
    assert definition.check is not None
    problem = definition.check(value, {})
    assert (problem is None) is ok
    if not ok:
        assert problem is not None and "threshold" in problem
