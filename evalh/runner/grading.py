"""Running one assertion: look up its handler, give it a context, and finalize its result.

Shared by top-level assertions and the children of an ``assert-set`` (through ``services.grade``), so
both follow exactly the same rules.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence

from evalh.assertions.base import AssertionContext, EmbedRequest
from evalh.assertions.registry import AssertionDef, get_assertion
from evalh.errors import EvalhError
from evalh.model import AssertionResult, AssertionSpec, GradedAssertion, Measurement
from evalh.runner.scoring import decide, finalize, settle
from evalh.runner.transforming import transform_for_assertion, transforms_assertion

__all__ = ["collect_prefetch", "effective_threshold", "grade_assertion", "positive_verdict"]


def effective_threshold(spec: AssertionSpec, definition: AssertionDef) -> float | None:
    return spec.threshold if spec.threshold is not None else definition.default_threshold


def _context_for(spec: AssertionSpec, definition: AssertionDef, ctx: AssertionContext) -> AssertionContext:
    return ctx.for_assertion(spec, effective_threshold(spec, definition))


async def grade_assertion(spec: AssertionSpec, ctx: AssertionContext) -> GradedAssertion:
    """Run ``spec`` against ``ctx``'s output; a crash in the handler becomes an ERROR result."""
    definition = get_assertion(spec.base_type)
    if definition is None:
        return finalize(spec, AssertionResult.failure(f"unknown assertion type {spec.type!r}"))
    try:
        aimed = _context_for(spec, definition, ctx)
        transformed = await transform_for_assertion(aimed) if transforms_assertion(spec) else aimed
        if isinstance(transformed, AssertionResult):
            return finalize(spec, transformed)
        measured = await _measure(definition, transformed)
        if not isinstance(measured, AssertionResult):
            return settle(
                spec, measured, transformed.threshold, definition.direction, _binary(definition, spec)
            )
        result = measured
    except EvalhError as error:
        result = AssertionResult.failure(error.render())
    except Exception as error:  # a bug in a handler must not stop the run; --verbose shows the trace
        result = AssertionResult.failure(
            f"{spec.type} crashed: {type(error).__name__}: {error}",
            traceback=traceback.format_exc(),
        )
    return finalize(spec, result)


async def positive_verdict(definition: AssertionDef, ctx: AssertionContext) -> AssertionResult:
    """Run the handler on ``ctx`` (threshold already effective) and decide its measurement."""
    measured = await _measure(definition, ctx)
    if isinstance(measured, AssertionResult):
        return measured
    return decide(measured, ctx.threshold, definition.direction, _binary(definition, ctx.spec))


def _binary(definition: AssertionDef, spec: AssertionSpec) -> bool:
    return definition.binary_score or spec.config.get("binary") is True


async def _measure(definition: AssertionDef, ctx: AssertionContext) -> AssertionResult | Measurement:
    """The handler's measurement on ``ctx``, or the ERROR of a threshold it cannot take."""
    if definition.requires_threshold and ctx.threshold is None:  # validate reports it first
        return AssertionResult.failure(
            f"{definition.name} needs a threshold: the {definition.threshold_meaning} that passes"
        )
    problem = (
        None
        if definition.direction is None or ctx.threshold is None
        else definition.threshold_problem(ctx.threshold)
    )
    if problem:  # validate reports it first; a suite built in code reaches here
        return AssertionResult.failure(f"{definition.name}: {problem}")
    outcome = definition.fn(ctx)
    # an isinstance of the two outcome classes is cheaper than inspect.isawaitable, on every assertion
    return outcome if isinstance(outcome, AssertionResult | Measurement) else await outcome


def collect_prefetch(specs: Sequence[AssertionSpec], ctx: AssertionContext) -> list[EmbedRequest]:
    """Every text these assertions (and assert-set children) will embed, declared up front."""
    requests: list[EmbedRequest] = []
    for spec in specs:
        if spec.children:
            requests.extend(collect_prefetch(spec.children, ctx))
        definition = get_assertion(spec.base_type)
        if definition is None or definition.prefetch is None:
            continue
        try:
            requests.extend(definition.prefetch(_context_for(spec, definition, ctx)))
        except Exception:  # prefetch is an optimisation: the assertion itself reports the problem
            continue
    return requests
