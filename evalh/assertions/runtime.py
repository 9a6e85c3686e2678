"""Runtime assertions: ``latency`` (the provider call took at most ``threshold`` milliseconds) and
``cost`` (the provider reported a cost of at most ``threshold``).

A cached response or a recorded ``output`` has no latency, so the assertion cannot run on it: that is an
ERROR row telling the user to run with ``--no-cache``, never a silent pass. Likewise an output whose
provider reported no cost is an ERROR for ``cost``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import assertion
from evalh.model import AssertionResult, Measurement

__all__ = ["COST_UNKNOWN", "LATENCY_UNKNOWN"]

LATENCY_UNKNOWN = "latency is unknown for cached or recorded outputs; run with --no-cache"
_NEEDS_THRESHOLD = "latency needs a threshold: the maximum milliseconds, e.g. threshold: 2000"
COST_UNKNOWN = (
    "the provider reported no cost for this output (recorded outputs and providers without pricing have none)"
)


def _ms(value: float) -> str:
    """Milliseconds for a reason: 120, 120.4, 0.25 (never rounded onto the threshold)."""
    if value.is_integer():
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 100 else f"{value:.3g}"


def _check_latency(value: Any, _config: Mapping[str, Any]) -> str | None:
    # check() cannot see the threshold; the assertion itself reports a missing one.
    if value is not None and value != "":
        return "latency takes no value; put the maximum milliseconds in threshold"
    return None


@assertion(
    "latency",
    family="runtime",
    description="The provider answered within threshold milliseconds (needs a threshold and --no-cache)",
    threshold_meaning="max ms",
    requires_threshold=True,
    direction="lower",
    bounds=(0.0, None),
    binary_score=True,
    check=_check_latency,
)
def latency(ctx: AssertionContext) -> AssertionResult | Measurement:
    if ctx.threshold is None:
        return AssertionResult.failure(_NEEDS_THRESHOLD)
    if ctx.cached or ctx.latency_ms is None:
        return AssertionResult.failure(LATENCY_UNKNOWN)
    elapsed = ctx.latency_ms
    return Measurement(
        value=elapsed, subject=f"Latency {_ms(elapsed)} ms", suffix=" ms", details={"latency_ms": elapsed}
    )


def _check_cost(value: Any, _config: Mapping[str, Any]) -> str | None:
    if value is not None and value != "":
        return "cost takes no value; put the maximum cost in threshold"
    return None


@assertion(
    "cost",
    family="runtime",
    description="The provider reported a cost of at most threshold for the output (needs a threshold)",
    threshold_meaning="max cost",
    requires_threshold=True,
    direction="lower",
    bounds=(0.0, None),
    binary_score=True,
    check=_check_cost,
)
def cost(ctx: AssertionContext) -> AssertionResult | Measurement:
    if ctx.threshold is None:
        return AssertionResult.failure("cost needs a threshold: the maximum cost, e.g. threshold: 0.002")
    if ctx.cost is None:
        return AssertionResult.failure(COST_UNKNOWN)
    return Measurement(value=ctx.cost, subject=f"Cost {ctx.cost:.6g}", details={"cost": ctx.cost})
