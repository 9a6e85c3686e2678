"""Build an AssertionContext the way the runner does, for unit tests of assertion types.

``make_context("contains", value="foo", output="a foo")`` gives a context whose threshold already holds
the registry default (``spec.threshold if set, else AssertionDef.default_threshold``), like
``runner/grading.py``. ``StandInServices`` fails loudly if a supposedly local assertion calls a model;
pass your own ``services`` for model-backed types. ``grade(ctx)`` runs the registered handler (sync or
async) and returns its positive-form ``AssertionResult``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalh.assertions.base import AssertionContext, GradingServices
from evalh.assertions.registry import AssertionDef, base_type, get_assertion
from evalh.config.checks import value_problem
from evalh.config.schema import schema_problems
from evalh.model import (
    AssertionResult,
    AssertionSpec,
    GradedAssertion,
    ProviderChoice,
    ProviderResponse,
    ProviderSpec,
    TestCase,
)
from evalh.runner.grading import positive_verdict

__all__ = ["StandInServices", "declared_problems", "definition_of", "grade", "make_context"]


class StandInServices:
    """GradingServices for assertions that need no model: every model call fails the test."""

    default_choice: ProviderChoice | None = None

    def _unused(self, method: str) -> AssertionError:
        return AssertionError(f"services.{method}() was called, but these services are a stand-in")

    async def embed(self, provider: ProviderSpec, texts: Sequence[str]) -> Any:
        raise self._unused("embed")

    async def similarity(self, provider: ProviderSpec, pairs: Sequence[tuple[str, str]]) -> Any:
        raise self._unused("similarity")

    async def embed_tokens(self, provider: ProviderSpec, texts: Sequence[str]) -> Any:
        raise self._unused("embed_tokens")

    async def complete(
        self, provider: ProviderSpec, prompt: str | Sequence[Mapping[str, Any]]
    ) -> ProviderResponse:
        raise self._unused("complete")

    def capabilities(self, provider: ProviderSpec) -> tuple[str, ...]:
        raise self._unused("capabilities")

    async def grade(self, spec: AssertionSpec, ctx: AssertionContext) -> GradedAssertion:
        raise self._unused("grade")


def definition_of(assertion_type: str) -> AssertionDef:
    """The registry entry of ``assertion_type`` (``not-`` prefix allowed); KeyError if unknown."""
    definition = get_assertion(base_type(assertion_type)[0])
    if definition is None:
        raise KeyError(f"assertion type {assertion_type!r} is not registered")
    return definition


def make_context(
    assertion_type: str,
    value: Any = None,
    output: Any = None,
    threshold: float | None = None,
    config: Mapping[str, Any] | None = None,
    vars: Mapping[str, Any] | None = None,
    latency_ms: float | None = None,
    *,
    cached: bool = False,
    prompt: Any = None,
    config_dir: Path | None = None,
    services: GradingServices | None = None,
    provider: ProviderChoice | None = None,
    test_options: Mapping[str, Any] | None = None,
    suite_tests: tuple[TestCase, ...] = (),
) -> AssertionContext:
    """A context for one assertion of one test, with the registry's default threshold applied."""
    name, negate = base_type(assertion_type)
    definition = definition_of(name)
    spec = AssertionSpec(
        type=name,
        negate=negate,
        value=value,
        threshold=threshold,
        config=dict(config or {}),
        provider=provider,
        raw={"type": assertion_type, "value": value},
        path="tests[0].assert[0]",
    )
    test = TestCase(
        index=0,
        vars=dict(vars or {}),
        asserts=(spec,),
        options=dict(test_options or {}),
        output=output,
        has_output=output is not None,
        path="tests[0]",
    )
    return AssertionContext(
        spec=spec,
        output=output,
        test=test,
        services=services or StandInServices(),
        threshold=spec.threshold if spec.threshold is not None else definition.default_threshold,
        prompt=prompt,
        latency_ms=latency_ms,
        cached=cached,
        config_dir=config_dir,
        suite_tests=suite_tests,
    )


def grade(ctx: AssertionContext) -> AssertionResult:
    """Run the registered handler of ``ctx.spec.base_type`` (awaiting it if async) and decide its
    measurement as the runner does; positive form."""
    return asyncio.run(positive_verdict(definition_of(ctx.spec.base_type), ctx))


def declared_problems(assertion: Mapping[str, Any]) -> list[str]:
    """What validate says about one assertion as written (``{"type": ..., "value": ..., "config": ...}``):
    the schema's per-type rules, then the type's own check of the value. Each problem is
    ``path: message`` with the path inside the assertion (``value``, ``config.k``) and the hint added."""
    found = [
        f"{'.'.join(str(part) for part in problem.path[4:])}: {problem.message}"
        + (f" ({problem.hint})" if problem.hint else "")
        for problem in schema_problems({"tests": [{"assert": [dict(assertion)]}]})
    ]
    if found:
        return found
    definition = definition_of(str(assertion["type"]))
    problem = value_problem(definition, assertion.get("value"), assertion.get("config") or {})
    return [problem] if problem else []
