"""The runtime family: latency and cost."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from evalh.assertions.registry import all_assertions
from evalh.assertions.runtime import COST_UNKNOWN, LATENCY_OF_CACHED, LATENCY_UNKNOWN
from evalh.config.checks import value_problem
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import AssertionResult, GradedAssertion, RunOptions, Status
from evalh.runner.execute import run_suite
from evalh.runner.scoring import finalize, score_test
from tests.assertions.helpers import declared_problems, definition_of, grade, make_context


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


def test_latency_of_a_recorded_output_is_unknown() -> None:
    result = run(1000, None)
    assert result.error and not result.passed
    assert result.reason == LATENCY_UNKNOWN


@pytest.mark.parametrize("latency_ms", [None, 35.0])
def test_latency_of_a_cached_output_is_skipped_with_the_reason(latency_ms: float | None) -> None:
    result = run(1000, latency_ms, cached=True)
    assert result.skipped and not result.error
    assert result.reason == LATENCY_OF_CACHED
    assert "--no-cache" in result.reason


@pytest.mark.parametrize("negate", [False, True])
def test_a_skipped_latency_neither_fails_nor_scores_its_row(negate: bool) -> None:
    ctx = make_context(("not-" if negate else "") + "latency", output="ok", threshold=10, cached=True)
    skipped = finalize(ctx.spec, grade(ctx))
    assert skipped.skipped and skipped.passed and not skipped.error
    contains = make_context("contains", output="ok", value="nope")
    failed = finalize(contains.spec, grade(contains))
    verdict = score_test([skipped, failed], threshold=None)
    assert verdict.status is Status.FAIL and verdict.reason.startswith("contains:")
    found = make_context("contains", output="ok", value="ok")
    passed = score_test([skipped, finalize(found.spec, grade(found))], threshold=0.75)
    assert (passed.status, passed.score) == (Status.PASS, 1.0)  # the skipped one is left out of the mean
    alone = score_test([skipped], threshold=None)
    assert alone.status is Status.PASS
    assert alone.reason == f"{skipped.spec.full_type}: {LATENCY_OF_CACHED}"


def test_negative_threshold_is_an_error() -> None:
    assert run(-5, 10.0).error


@pytest.mark.parametrize(("value", "ok"), [(None, True), ("", True), (500, False), ("fast", False)])
def test_latency_check_rejects_a_value(value: Any, ok: bool) -> None:
    problem = value_problem(definition_of("latency"), value, {})
    assert (problem is None) is ok
    if not ok:
        assert problem == "value: latency takes no value; put the maximum milliseconds in threshold"


# -- cost ------------------------------------------------------------------------------------------


def cost_of(threshold: float | None, cost: float | None, negate: bool = False) -> GradedAssertion:
    ctx = make_context(("not-" if negate else "") + "cost", output="ok", threshold=threshold)
    return finalize(ctx.spec, grade(dataclasses.replace(ctx, cost=cost)))


def test_cost_is_a_maximum_that_needs_a_threshold() -> None:
    definition = definition_of("cost")
    assert (definition.family, definition.direction, definition.default_threshold) == (
        "runtime",
        "lower",
        None,
    )
    assert definition.requires_threshold and not definition.requires_value


@pytest.mark.parametrize(
    ("threshold", "cost", "passed", "reason"),
    [
        (0.01, 0.004, True, "Cost 0.004 is less than or equal to threshold 0.01"),
        (0.01, 0.01, True, "Cost 0.01 is less than or equal to threshold 0.01"),
        (0.01, 0.0125, False, "Cost 0.0125 is greater than threshold 0.01"),
        (0, 0.0, True, "Cost 0 is less than or equal to threshold 0"),
    ],
)
def test_cost_against_the_threshold(threshold: float, cost: float, passed: bool, reason: str) -> None:
    graded = cost_of(threshold, cost)
    assert (graded.passed, graded.score, graded.reason) == (passed, float(passed), reason)
    assert cost_of(threshold, cost, negate=True).passed is not passed


def test_unknown_cost_or_missing_threshold_is_an_error_never_inverted() -> None:
    for graded in (cost_of(0.01, None), cost_of(0.01, None, negate=True), cost_of(None, 0.001, negate=True)):
        assert graded.error and not graded.passed
    assert cost_of(0.01, None).reason == COST_UNKNOWN
    assert "needs a threshold" in cost_of(None, 0.001).reason


def test_cost_check_rejects_a_value_and_a_negative_threshold() -> None:
    definition = definition_of("cost")
    assert (
        value_problem(definition, 0.5, {}) == "value: cost takes no value; put the maximum cost in threshold"
    )
    assert definition.threshold_problem(-0.01) is not None and cost_of(-0.01, 0.0).error
    assert declared_problems({"type": "cost", "threshold": -0.01}) == [
        "threshold: must be >= 0.0 (got -0.01) for a 'cost' assertion"
    ]


def test_cost_through_a_run_with_a_priced_provider(tmp_path: Path) -> None:
    (tmp_path / "priced.py").write_text(
        "def call_api(prompt, options, context):\n"
        "    return {'output': prompt, 'cost': len(prompt) / 1000}\n",
        encoding="utf-8",
    )
    config = tmp_path / "evalh.yaml"
    config.write_text(
        "prompts: ['{{ word }}']\nproviders: ['python:priced.py']\n"
        "defaultTest:\n  assert: [{type: cost, threshold: 0.005}]\n"
        "tests:\n  - vars: {word: abc}\n  - vars: {word: abcdefgh}\n",
        encoding="utf-8",
    )
    run = run_suite(load_suite(config), RunOptions(cache=False))
    assert [row.status for row in run.results] == [Status.PASS, Status.FAIL]
    assert run.results[1].assertions[0].reason == "Cost 0.008 is greater than threshold 0.005"


def test_validate_reports_a_cost_without_a_threshold(tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text("tests:\n  - output: hi\n    assert: [{type: cost}]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    shown = caught.value.render()
    assert "tests[0].assert[0]: missing required key 'threshold'" in shown
    assert "cost needs a threshold: the max cost that passes" in shown


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "latency": {"output": "Paris", "latency_ms": 12.0},
    "cost": {"output": "Paris", "cost": 0.002},
}
