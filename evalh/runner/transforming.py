"""Where promptfoo's output transforms apply in a run (the transforms themselves: runtimes/transforms.py).

The test's ``options.transform`` (defaultTest's merged in) replaces the output once, before every
assertion, so reports show the transformed output; an assertion's ``transform`` replaces it for that
assertion only. A failing transform is an ERROR ("Transform failed: ...").
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.deadlines import JAVASCRIPT_TIMEOUT_S
from evalh.model import AssertionResult, ProviderResponse, TestCase
from evalh.runtimes.transforms import TransformFailed, apply_transform, output_transform

__all__ = ["transform_for_assertion", "transform_response"]


def _context(test: TestCase, prompt: Any, metadata: Any) -> dict[str, Any]:
    return {"vars": dict(test.vars), "prompt": prompt, "metadata": dict(metadata or {})}


async def transform_response(
    test: TestCase, prompt: Any, response: ProviderResponse, config_dir: Path | None, timeout_s: float | None
) -> ProviderResponse:
    """The response with the test's output transform applied (unchanged without one or on an error)."""
    code = output_transform(test.options)
    if code is None or response.error is not None:
        return response
    try:
        output = await apply_transform(
            code,
            response.output,
            _context(test, prompt, response.metadata),
            config_dir=config_dir,
            timeout_s=timeout_s or JAVASCRIPT_TIMEOUT_S,
        )
    except TransformFailed as error:
        return dataclasses.replace(response, error=f"Transform failed: options.transform {error}")
    return dataclasses.replace(response, output=output)


async def transform_for_assertion(ctx: AssertionContext) -> AssertionContext | AssertionResult:
    """``ctx`` with the assertion's own transform applied to its output, or the ERROR it caused."""
    code = ctx.spec.raw.get("transform") if ctx.spec.raw else None
    if not isinstance(code, str):
        return ctx
    try:
        output = await apply_transform(
            code,
            ctx.output,
            _context(ctx.test, ctx.prompt, ctx.provider_metadata),
            config_dir=ctx.config_dir,
            timeout_s=ctx.timeout_s or JAVASCRIPT_TIMEOUT_S,
        )
    except TransformFailed as error:
        return AssertionResult.failure(f"Transform failed: {error}")
    return dataclasses.replace(ctx, output=output)
