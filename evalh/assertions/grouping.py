"""``assert-set``: a group of assertions scored as one item of its parent test."""

from __future__ import annotations

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import assertion
from evalh.model import AssertionResult, weighted_mean

__all__ = ["assert_set"]


@assertion(
    "assert-set",
    family="grouping",
    description="groups child assertions (assert: [...]); passes when all pass, or when their weighted "
    "mean score reaches the set's threshold",
    threshold_meaning="min weighted mean of the children",
)
async def assert_set(ctx: AssertionContext) -> AssertionResult:
    children = tuple([await ctx.services.grade(child, ctx) for child in ctx.spec.children])
    if not children:
        return AssertionResult.failure("assert-set has no assertions under `assert`")
    errors = [child for child in children if child.error]
    if errors:
        reason = f"{errors[0].spec.full_type}: {errors[0].reason}"
        return AssertionResult(passed=False, score=0.0, reason=reason, error=True, children=children)
    score = weighted_mean(children)
    if ctx.threshold is not None:
        passed = score >= ctx.threshold
        relation = ">=" if passed else "<"
        reason = f"assert-set score {score:.2f} {relation} {ctx.threshold:g} threshold"
    else:
        failed = [child for child in children if not child.passed]
        passed = not failed
        reason = (
            "All assertions in the set passed"
            if passed
            else "; ".join(f"{child.spec.full_type}: {child.reason}" for child in failed)
        )
    return AssertionResult(passed=passed, score=score, reason=reason, children=children)
