"""promptfoo's scoring rules, applied once for every assertion type (pure functions).

Per assertion (:func:`finalize`): ``not-`` flips pass and turns the score into ``1 - score``; an error
result is never inverted; ``weight: 0`` makes the assertion metric-only (it always passes).

Per test (:func:`score_test`): the score is the weighted mean of the top-level assertions; without a
test ``threshold`` the test passes when every assertion passes, with one when the score reaches it; any
assertion that could not run makes the row an ERROR; no assertions means pass with score 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from evalh.model import AssertionResult, AssertionSpec, GradedAssertion, Status, weighted_mean

__all__ = ["TestVerdict", "finalize", "named_scores", "score_test"]


def finalize(spec: AssertionSpec, result: AssertionResult) -> GradedAssertion:
    """Apply negation and weight 0 to an assertion function's positive-form result."""
    if result.error:
        return GradedAssertion(
            spec=spec,
            passed=False,
            score=0.0,
            reason=result.reason,
            error=True,
            details=result.details,
            usage=result.usage,
            children=result.children,
        )
    passed, score, reason = result.passed, float(result.score), result.reason
    if spec.negate:
        # clamped: a negative cosine or a dot product above 1 must not give a score outside [0, 1]
        passed, score = not passed, min(1.0, max(0.0, 1.0 - score))
        if not passed:
            reason = f"{reason} (not-{spec.type} expects the opposite)"
    if spec.weight == 0:
        passed = True
    return GradedAssertion(
        spec=spec,
        passed=passed,
        score=score,
        reason=reason,
        details=result.details,
        usage=result.usage,
        children=result.children,
    )


def named_scores(graded: Sequence[GradedAssertion]) -> tuple[dict[str, float], dict[str, float]]:
    """Weighted mean score and summed weight per ``metric`` name (children of sets bubble up)."""
    sums: dict[str, float] = defaultdict(float)
    weights: dict[str, float] = defaultdict(float)

    def visit(items: Sequence[GradedAssertion]) -> None:
        for item in items:
            if item.spec.metric:
                sums[item.spec.metric] += item.score * item.spec.weight
                weights[item.spec.metric] += item.spec.weight
            visit(item.children)

    visit(graded)
    means = {name: (sums[name] / weights[name] if weights[name] > 0 else 0.0) for name in sums}
    return means, dict(weights)


@dataclass(frozen=True)
class TestVerdict:
    __test__ = False

    status: Status
    score: float
    reason: str
    named_scores: dict[str, float]
    named_score_weights: dict[str, float]


def score_test(graded: Sequence[GradedAssertion], threshold: float | None) -> TestVerdict:
    """The row's status, score and reason from its top-level graded assertions."""
    means, weights = named_scores(graded)
    if not graded:
        return TestVerdict(Status.PASS, 1.0, "No assertions", means, weights)
    errors = [g for g in graded if g.error]
    if errors:
        first = errors[0]
        return TestVerdict(Status.ERROR, 0.0, f"{first.spec.full_type}: {first.reason}", means, weights)
    score = weighted_mean(graded)
    if threshold is not None:
        passed = score >= threshold
        relation = ">=" if passed else "<"
        reason = f"Aggregate score {score:.2f} {relation} {threshold:g} threshold"
        return TestVerdict(Status.PASS if passed else Status.FAIL, score, reason, means, weights)
    failed = [g for g in graded if not g.passed]
    if failed:
        first = failed[0]
        return TestVerdict(Status.FAIL, score, f"{first.spec.full_type}: {first.reason}", means, weights)
    return TestVerdict(Status.PASS, score, "All assertions passed", means, weights)
