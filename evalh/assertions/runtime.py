"""Runtime assertions: ``latency`` (the provider call took at most ``threshold`` milliseconds) and
``cost`` (the provider reported a cost of at most ``threshold``).

A recorded ``output`` has no latency, so the assertion cannot run on it: that is an ERROR, never a
silent pass. A cached output has none either, but there the check simply does not apply to this run: it
is skipped with the reason (the row is scored on its other assertions), and the run's cache sentence
says how many outputs came from the cache. Likewise an output whose provider reported no cost is an
ERROR for ``cost``.
"""

from __future__ import annotations

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import assertion, no_value
from evalh.model import AssertionResult, Measurement

__all__ = ["COST_UNKNOWN", "LATENCY_OF_CACHED", "LATENCY_UNKNOWN"]

LATENCY_UNKNOWN = "latency is unknown for recorded outputs: they were not timed"
LATENCY_OF_CACHED = (
    "not applicable: the output came from the cache, so no call was timed; run with --no-cache to time it"
)
COST_UNKNOWN = (
    "the provider reported no cost for this output (recorded outputs and providers without pricing have none)"
)


def _ms(value: float) -> str:
    """Milliseconds for a reason: 120, 120.4, 0.25 (never rounded onto the threshold)."""
    if value.is_integer():
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 100 else f"{value:.3g}"


@assertion(
    "latency",
    family="runtime",
    description="The provider answered within threshold milliseconds (needs a threshold; cached: skipped)",
    threshold_meaning="max ms",
    requires_threshold=True,
    direction="lower",
    bounds=(0.0, None),
    binary_score=True,
    value_schema=no_value("latency", "put the maximum milliseconds in threshold"),
)
def latency(ctx: AssertionContext) -> AssertionResult | Measurement:
    if ctx.cached:
        return AssertionResult.skip(LATENCY_OF_CACHED)
    if ctx.latency_ms is None:
        return AssertionResult.failure(LATENCY_UNKNOWN)
    elapsed = ctx.latency_ms
    return Measurement(
        value=elapsed, subject=f"Latency {_ms(elapsed)} ms", suffix=" ms", details={"latency_ms": elapsed}
    )


@assertion(
    "cost",
    family="runtime",
    description="The provider reported a cost of at most threshold for the output (needs a threshold)",
    threshold_meaning="max cost",
    requires_threshold=True,
    direction="lower",
    bounds=(0.0, None),
    binary_score=True,
    value_schema=no_value("cost", "put the maximum cost in threshold"),
)
def cost(ctx: AssertionContext) -> AssertionResult | Measurement:
    if ctx.cost is None:
        return AssertionResult.failure(COST_UNKNOWN)
    return Measurement(value=ctx.cost, subject=f"Cost {ctx.cost:.6g}", details={"cost": ctx.cost})
