"""Where promptfoo's transforms apply in a run (the transforms themselves: runtimes/transforms.py).

promptfoo's order (``src/evaluator.ts``): the provider's ``transform`` on each output it gives, then
the test's ``options.transform`` (defaultTest's merged in), once, before every assertion (reports show
the result); then an assertion's own ``transform`` for that assertion only. An assertion's
``contextTransform`` derives the retrieved context of the ``context-*`` assertions from the output as
the provider's transform left it (before the test's). A failing transform is an ERROR ("Transform
failed: ..."). ``options.transformVars`` runs earlier, when the config loads (config/build.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.common.deadlines import JAVASCRIPT_TIMEOUT_S
from evalh.model import AssertionResult, AssertionSpec, ProviderResponse, ProviderSpec, TestCase
from evalh.runtimes.transforms import TransformFailed, apply_transform, output_transform, value_kind

__all__ = ["Transformed", "transform_for_assertion", "transform_response", "transforms_assertion"]


@dataclasses.dataclass(frozen=True)
class Transformed:
    """A row's response after every output transform, and its output after the provider's alone."""

    response: ProviderResponse
    provider_output: Any


def _context(test: TestCase, prompt: Any, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    context = {"vars": dict(test.vars), "prompt": prompt}
    if metadata is not None:
        context["metadata"] = dict(metadata)
    return context


async def _apply(
    code: str, output: Any, context: dict[str, Any], config_dir: Path | None, timeout_s: float | None
) -> Any:
    return await apply_transform(
        code, output, context, config_dir=config_dir, timeout_s=timeout_s or JAVASCRIPT_TIMEOUT_S
    )


async def transform_response(
    test: TestCase,
    provider: ProviderSpec,
    prompt: Any,
    response: ProviderResponse,
    config_dir: Path | None,
    timeout_s: float | None,
) -> Transformed:
    """The response with the provider's transform, then the test's, applied (unchanged without them or
    on an error; a failing transform makes the response an error)."""
    if response.error is not None:
        return Transformed(response, response.output)
    if provider.transform is not None:
        context = _context(test, prompt, None)  # promptfoo gives a provider's transform no metadata
        try:
            output = await _apply(provider.transform, response.output, context, config_dir, timeout_s)
        except TransformFailed as error:
            where = provider.path or provider.display
            return Transformed(
                dataclasses.replace(response, error=f"Transform failed: {where}.transform {error}"), None
            )
        response = dataclasses.replace(response, output=output)
    provider_output = response.output
    code = output_transform(test.options)
    if code is None:
        return Transformed(response, provider_output)
    try:
        output = await _apply(
            code, response.output, _context(test, prompt, response.metadata or {}), config_dir, timeout_s
        )
    except TransformFailed as error:
        response = dataclasses.replace(response, error=f"Transform failed: options.transform {error}")
        return Transformed(response, provider_output)
    return Transformed(dataclasses.replace(response, output=output), provider_output)


def transforms_assertion(spec: AssertionSpec) -> bool:
    """Whether ``spec`` has its own ``transform`` or ``contextTransform`` (most have neither, and
    grading skips the step for them)."""
    raw = spec.raw or {}
    return "transform" in raw or "contextTransform" in raw


async def transform_for_assertion(ctx: AssertionContext) -> AssertionContext | AssertionResult:
    """``ctx`` with the assertion's own transform applied to its output and its contextTransform's
    context, or the ERROR either caused."""
    raw = ctx.spec.raw or {}
    code, context_code = raw.get("transform"), raw.get("contextTransform")
    if isinstance(code, str):
        try:
            context = _context(ctx.test, ctx.prompt, ctx.provider_metadata)
            output = await _apply(code, ctx.output, context, ctx.config_dir, ctx.timeout_s)
        except TransformFailed as error:
            return AssertionResult.failure(f"Transform failed: {error}")
        ctx = dataclasses.replace(ctx, output=output)
    if isinstance(context_code, str):
        return await _retrieved_context(context_code, ctx)
    return ctx


async def _retrieved_context(code: str, ctx: AssertionContext) -> AssertionContext | AssertionResult:
    """promptfoo's ``resolveContext``: the contextTransform of the provider-transformed output, with
    ``{vars, prompt: {label}, metadata}``; a string, or a list of strings joined by blank lines."""
    context = {
        "vars": dict(ctx.test.vars),
        "prompt": {"label": ctx.prompt},
        "metadata": dict(ctx.provider_metadata),
    }
    try:
        value = await _apply(code, ctx.provider_output, context, ctx.config_dir, ctx.timeout_s)
    except TransformFailed as error:
        return AssertionResult.failure(f"contextTransform failed: {error}")
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        value = "\n\n".join(value)
    if not isinstance(value, str):
        kind = "an array holding other things than strings" if isinstance(value, list) else value_kind(value)
        return AssertionResult.failure(
            f"contextTransform must return a string or an array of strings, got {kind}"
        )
    if not value.strip():
        return AssertionResult.failure("contextTransform returned an empty context")
    return dataclasses.replace(ctx, retrieved_context=value)
