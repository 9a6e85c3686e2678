from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from typing import Any, Literal

import pytest

from evalh.model import AssertionResult, AssertionSpec, GradedAssertion, Measurement, Status
from evalh.model.thresholds import meets
from evalh.runner.scoring import (
    TestVerdict,
    decide,
    finalize,
    named_scores,
    reasons_shared,
    score_test,
    settle,
)


def graded(
    passed: bool,
    score: float,
    *,
    weight: float = 1.0,
    metric: str | None = None,
    error: bool = False,
    children: tuple[GradedAssertion, ...] = (),
) -> GradedAssertion:
    spec = AssertionSpec(type="contains", weight=weight, metric=metric)
    return GradedAssertion(spec=spec, passed=passed, score=score, reason="r", error=error, children=children)


def test_negation_flips_pass_and_score_once() -> None:
    spec = AssertionSpec(type="similar", negate=True)
    result = finalize(spec, AssertionResult(passed=True, score=0.8, reason="Similarity 0.80 >= 0.75"))
    assert result.passed is False
    assert result.score == pytest.approx(0.2)
    assert "not-similar expects the opposite" in result.reason
    flipped = finalize(spec, AssertionResult(passed=False, score=0.1, reason="Similarity 0.10 < 0.75"))
    assert flipped.passed is True and flipped.score == pytest.approx(0.9)
    assert flipped.reason == "Similarity 0.10 < 0.75"


def test_negated_scores_stay_within_zero_and_one() -> None:
    spec = AssertionSpec(type="similar", negate=True)
    assert finalize(spec, AssertionResult(passed=False, score=-0.05, reason="r")).score == 1.0
    assert finalize(spec, AssertionResult(passed=True, score=1.7, reason="r")).score == 0.0


def test_error_is_never_inverted() -> None:
    spec = AssertionSpec(type="llm-rubric", negate=True)
    result = finalize(spec, AssertionResult.failure("grader returned no JSON"))
    assert result.error and not result.passed and result.score == 0.0


def test_weight_zero_is_metric_only() -> None:
    spec = AssertionSpec(type="contains", weight=0, metric="m")
    result = finalize(spec, AssertionResult(passed=False, score=0.0, reason="missing"))
    assert result.passed is True
    verdict = score_test([result, graded(True, 1.0)], None)
    assert verdict.status is Status.PASS and verdict.score == pytest.approx(1.0)


def test_weighted_mean_and_all_must_pass_without_threshold() -> None:
    verdict = score_test([graded(True, 1.0, weight=3), graded(False, 0.0, weight=1)], None)
    assert verdict.status is Status.FAIL
    assert verdict.score == pytest.approx(0.75)
    assert verdict.reason.startswith("contains: ")


def test_test_threshold_overrides_individual_failures() -> None:
    items = [graded(True, 1.0), graded(False, 0.4)]
    passing = score_test(items, 0.7)
    assert passing.status is Status.PASS and passing.reason == "Aggregate score 0.70 >= 0.7 threshold"
    failing = score_test(items, 0.71)
    assert failing.status is Status.FAIL and failing.reason == "Aggregate score 0.70 < 0.71 threshold"
    assert score_test([graded(False, 0.0)], 0).status is Status.PASS  # threshold 0 is honoured


def test_any_error_makes_the_row_an_error() -> None:
    verdict = score_test([graded(True, 1.0), graded(False, 0.0, error=True)], 0.0)
    assert verdict.status is Status.ERROR and verdict.score == 0.0


def test_no_assertions_pass_with_score_one() -> None:
    verdict = score_test([], None)
    assert (verdict.status, verdict.score, verdict.reason) == (Status.PASS, 1.0, "No assertions")


def test_named_scores_are_weighted_means_and_children_bubble_up() -> None:
    child = graded(True, 0.5, metric="tone", weight=2)
    items = [
        graded(True, 1.0, metric="tone"),
        graded(False, 0.0, metric="facts"),
        graded(True, 0.5, children=(child,)),
    ]
    means, weights = named_scores(items)
    assert means == {"tone": pytest.approx((1.0 + 1.0) / 3), "facts": 0.0}
    assert weights == {"tone": 3.0, "facts": 1.0}
    assert score_test([], None).named_scores == {}


_MEASUREMENTS = [
    Measurement.pass_fail(True, "Output contains 'a'", found=["a"]),
    Measurement.pass_fail(False, "Output does not contain 'a'"),
    Measurement(value=0.8, subject="Similarity 0.80", details={"reference": "r"}),
    Measurement(value=0.2, subject="Similarity 0.20", suffix=" (2 of 3)", score=0.4),
    Measurement(value=3.0, subject="Distance 3", score=0.25, verdict=False),
    Measurement(value=0.9, subject="Refused", plain="Refused as expected", compared=False),
    Measurement(value=-0.1, subject="Cosine -0.10"),
    Measurement.not_applicable("Output is empty"),
]


@pytest.mark.parametrize("measurement", _MEASUREMENTS, ids=lambda m: m.subject)
@pytest.mark.parametrize("negate", [False, True])
@pytest.mark.parametrize("weight", [1.0, 0.0])
@pytest.mark.parametrize(
    ("threshold", "direction", "binary"),
    [
        (None, None, False),
        (0.5, "higher", False),
        (0.5, "higher", True),
        (2.0, "lower", False),
        (None, "higher", False),
    ],
)
def test_settle_is_decide_then_finalize(
    measurement: Measurement,
    negate: bool,
    weight: float,
    threshold: float | None,
    direction: Literal["higher", "lower"] | None,
    binary: bool,
) -> None:
    spec = AssertionSpec(type="similar", negate=negate, weight=weight)
    expected = finalize(spec, decide(measurement, threshold, direction, binary))
    assert settle(spec, measurement, threshold, direction, binary) == expected


def test_equal_reasons_of_different_rows_are_one_string_during_a_run() -> None:
    # a run keeps every row to its end: a reason that recurs in each row is held once
    spec = AssertionSpec(type="contains", value="x")

    def two() -> tuple[GradedAssertion, GradedAssertion, str, str]:
        measured = [Measurement.pass_fail(False, "".join(["Output lacks ", "x"])) for _ in "ab"]
        one, other = (settle(spec, m, None, None, False) for m in measured)
        rows = [score_test([graded(False, 0.0)], None) for _ in "ab"]
        return one, other, rows[0].reason, rows[1].reason

    with reasons_shared():
        one, other, row, other_row = two()
    assert one.reason == other.reason == "Output lacks x" and one.reason is other.reason
    assert row == "contains: r" and row is other_row
    # outside a run nothing is kept (a process-wide table would keep every distinct reason forever)
    one, other, row, other_row = two()
    assert one.reason == other.reason and one.reason is not other.reason and row is not other_row


# -- score_test in one pass against the rules as the module docstring states them ---------------------


def _rules_named_scores(items: list[GradedAssertion]) -> tuple[dict[str, float], dict[str, float]]:
    sums: dict[str, float] = defaultdict(float)
    weights: dict[str, float] = defaultdict(float)

    def add(level: tuple[GradedAssertion, ...] | list[GradedAssertion]) -> None:
        for item in level:
            if item.skipped:
                continue
            for name, value in (item.details.get("namedScores") or {}).items():
                sums[name] += float(value) * item.spec.weight
                weights[name] += item.spec.weight
            if item.spec.metric:
                sums[item.spec.metric] += float(item.score) * item.spec.weight
                weights[item.spec.metric] += item.spec.weight
            add(item.children)

    add(items)
    return {n: (sums[n] / weights[n] if weights[n] > 0 else 0.0) for n in sums}, dict(weights)


def _rules_verdict(items: list[GradedAssertion], threshold: float | None) -> tuple[Status, float, str]:
    if not items:
        return Status.PASS, 1.0, "No assertions"
    errors = [g for g in items if g.error]
    if errors:
        return Status.ERROR, 0.0, f"{errors[0].spec.type}: {errors[0].reason}"
    applied = [g for g in items if not g.skipped]
    if not applied:
        return Status.PASS, 1.0, f"{items[0].spec.full_type}: {items[0].reason}"
    weight = sum(g.spec.weight for g in applied)
    score = sum(g.score * g.spec.weight for g in applied) / weight if weight > 0 else 0.0
    if threshold is not None:
        ok = meets(score, threshold, "higher")  # the one threshold comparison of evalh
        return (
            (Status.PASS if ok else Status.FAIL),
            score,
            (f"Aggregate score {score:.2f} {'>=' if ok else '<'} {threshold:g} threshold"),
        )
    failed = [g for g in items if not g.passed]
    if failed:
        return Status.FAIL, score, f"{failed[0].spec.type}: {failed[0].reason}"
    return Status.PASS, score, "All assertions passed"


def _random_graded(rng: random.Random, depth: int = 0) -> GradedAssertion:
    negate = rng.random() < 0.2
    spec = AssertionSpec(
        type=rng.choice(("contains", "equals", "similar")),
        negate=negate,
        weight=rng.choice((1.0, 1.0, 0.0, 0.5, 2.0, 3)),
        metric=rng.choice((None, None, "tone", "facts")),
    )
    skipped = rng.random() < 0.1
    error = not skipped and rng.random() < 0.08
    details: dict[str, Any] = {}
    if rng.random() < 0.15:
        details["namedScores"] = {rng.choice(("tone", "x")): rng.random()}
    children = (
        tuple(_random_graded(rng, depth + 1) for _ in range(rng.randint(1, 3)))
        if (depth == 0 and rng.random() < 0.1)
        else ()
    )
    return GradedAssertion(
        spec=spec,
        passed=skipped or (not error and rng.random() < 0.6),
        score=0.0 if error or skipped else rng.choice((0.0, 1.0, rng.random())),
        reason=f"reason {rng.randint(0, 9)}",
        error=error,
        details=details,
        children=children,
        skipped=skipped,
    )


def test_score_test_keeps_every_rule_on_random_rows() -> None:
    rng = random.Random(29)
    for _ in range(3000):
        items = [_random_graded(rng) for _ in range(rng.choice((0, 1, 2, 3, 6)))]
        threshold = rng.choice((None, None, 0.5, 0.0, 1.0, 0.7))
        verdict = score_test(items, threshold)
        assert (verdict.status, verdict.score, verdict.reason) == _rules_verdict(items, threshold)
        assert (verdict.named_scores, verdict.named_score_weights) == _rules_named_scores(items)
        assert list(verdict.named_scores) == list(_rules_named_scores(items)[0])  # the same key order


def test_a_test_verdict_is_a_frozen_value_of_its_fields() -> None:
    made = TestVerdict(Status.FAIL, 0.5, "why", {"m": 0.5}, {"m": 1.0})
    assert [f.name for f in dataclasses.fields(TestVerdict)] == [
        "status",
        "score",
        "reason",
        "named_scores",
        "named_score_weights",
    ]
    assert made == TestVerdict(Status.FAIL, 0.5, "why", {"m": 0.5}, {"m": 1.0})
    assert (made.status, made.score, made.reason) == (Status.FAIL, 0.5, "why")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.score = 1.0  # type: ignore[misc]
