"""``assert-set``: a group of assertions scored as one item of its parent test.

The set grades its children (``services.grade``, with the same rules as top-level assertions) and hands
them over as a measurement; ``runner/scoring.py`` scores them exactly as it scores a test's assertions.
"""

from __future__ import annotations

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import assertion, no_value
from evalh.model import Measurement

__all__ = ["assert_set"]


@assertion(
    "assert-set",
    family="grouping",
    description="groups child assertions (assert: [...]); passes when all pass, or when their weighted "
    "mean score reaches the set's threshold",
    threshold_meaning="min weighted mean of the children",
    direction="higher",
    children=True,
    value_schema=no_value("assert-set", "put the checks in its assert: list"),
)
async def assert_set(ctx: AssertionContext) -> Measurement:
    children = tuple([await ctx.services.grade(child, ctx) for child in ctx.spec.children])
    return Measurement(value=0.0, subject="assert-set", children=children)
