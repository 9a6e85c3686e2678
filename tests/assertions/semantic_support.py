"""Real grading services for the semantic assertions: the runner's provider pool and embedding store.

``grade_full`` goes through ``runner.grading.grade_assertion`` (negation and errors applied by the real
scorer); ``grade_positive`` calls the handler directly (the positive form).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import get_assertion
from evalh.model import AssertionResult, GradedAssertion, ProviderChoice
from evalh.runner.cache import Cache
from evalh.runner.grading import grade_assertion, positive_verdict
from evalh.runner.services import ProviderPool, RunServices

__all__ = ["SHARED_POOL", "grade_full", "grade_positive", "services"]

# Built providers without event-loop state (local, fake) can be shared between tests: the model loads once.
SHARED_POOL = ProviderPool()


def services(
    pool: ProviderPool | None = None, *, cache: bool = False, default: ProviderChoice | None = None
) -> RunServices:
    return RunServices(pool or SHARED_POOL, Cache.open(cache), default_choice=default)


async def _positive(ctx: AssertionContext) -> AssertionResult:
    definition = get_assertion(ctx.spec.base_type)
    assert definition is not None
    return await positive_verdict(definition, ctx)


def grade_positive(ctx: AssertionContext, prefetch: bool = True) -> AssertionResult:
    """The handler's result, after the runner-style prefetch of its texts."""

    async def scenario() -> AssertionResult:
        await _prefetch(ctx)
        return await _positive(ctx)

    return asyncio.run(scenario()) if prefetch else asyncio.run(_positive(ctx))


def grade_full(ctx: AssertionContext) -> GradedAssertion:
    """Prefetch, then grade as the runner does (``not-`` applied)."""

    async def scenario() -> GradedAssertion:
        await _prefetch(ctx)
        return await grade_assertion(ctx.spec, ctx)

    return asyncio.run(scenario())


async def _prefetch(ctx: AssertionContext) -> None:
    definition = get_assertion(ctx.spec.base_type)
    services = ctx.services
    if definition and definition.prefetch and isinstance(services, RunServices):
        await services.embeddings.prefetch(definition.prefetch(ctx))


def details(result: AssertionResult | GradedAssertion) -> Mapping[str, Any]:
    return result.details
