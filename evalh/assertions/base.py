"""The contract between an assertion handler and the runner: handlers measure, the runner decides.

A handler is a small stateless function ``(ctx: AssertionContext) -> Measurement`` (sync or async),
registered with ``@assertion`` (``registry.py``), that measures the *positive* form of its type: the
figure (a cosine, a distance, 1 or 0 for a pass/fail check: ``Measurement.pass_fail``), the words of the
reason and the details. It never compares with a threshold and never looks at ``spec.negate``.
``evalh.runner.scoring`` decides, once for every type: the threshold in the direction the registration
declares, ``binary``, ``not-``, weight 0, the reason's wording and the test's aggregation. A handler
returns an ``AssertionResult`` only when there is nothing to decide: ``AssertionResult.failure`` (it could
not run: the row is an ERROR, never inverted into a pass) or ``AssertionResult.skip`` (the check does not
apply to this row).

Assertions that need a model reach it through ``ctx.services`` (embeddings, completions), which the
runner implements with suite-wide batching and caching. Heavy imports (numpy) stay inside functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from evalh.model import (
    AssertionSpec,
    GradedAssertion,
    ProviderChoice,
    ProviderResponse,
    ProviderSpec,
    TestCase,
    TraceSource,
)

if TYPE_CHECKING:
    from evalh.providers.base import Embeddings, Similarities, TokenEmbedding

__all__ = [
    "DEFAULT_EMBEDDING_PROVIDER",
    "AssertionContext",
    "EmbedRequest",
    "GradingServices",
    "needed_providers",
    "output_as_text",
    "resolve_provider",
]

DEFAULT_EMBEDDING_PROVIDER = ProviderSpec(id="local", path="(default embedding provider)")

# The default of __init__'s ``provider_metadata``: each context gets a dict of its own, as from a
# default_factory.
_NEW_DICT: Mapping[str, Any] = MappingProxyType({})


class GradingServices(Protocol):
    """Model access for assertions, implemented by the runner (batched, deduplicated, cached)."""

    default_choice: ProviderChoice | None  # --grader / the suite default

    async def embed(self, provider: ProviderSpec, texts: Sequence[str]) -> Embeddings: ...

    async def similarity(self, provider: ProviderSpec, pairs: Sequence[tuple[str, str]]) -> Similarities: ...

    async def embed_tokens(self, provider: ProviderSpec, texts: Sequence[str]) -> list[TokenEmbedding]: ...

    async def complete(
        self, provider: ProviderSpec, prompt: str | Sequence[Mapping[str, Any]]
    ) -> ProviderResponse: ...

    def capabilities(self, provider: ProviderSpec) -> tuple[str, ...]: ...

    async def grade(self, spec: AssertionSpec, ctx: AssertionContext) -> GradedAssertion:
        """Run and score a child assertion (for assert-set), with the same rules as top-level ones."""
        ...


@dataclass(frozen=True)
class EmbedRequest:
    """Texts an assertion will embed, declared before scoring so the runner can embed them in bulk.

    ``granularity``: "sentence" (``embed``), "tokens" (``embed_tokens``).
    """

    provider: ProviderSpec
    texts: tuple[str, ...]
    granularity: str = "sentence"


@dataclass(frozen=True, init=False)
class AssertionContext:
    """Everything an assertion may read. ``threshold`` already holds the registry default if unset."""

    spec: AssertionSpec
    output: Any
    test: TestCase
    services: GradingServices
    threshold: float | None = None
    prompt: Any = None  # the rendered prompt (string or chat messages)
    latency_ms: float | None = None
    cached: bool = False
    cost: float | None = None
    config_dir: Path | None = None
    provider_metadata: Mapping[str, Any] = field(default_factory=dict)
    provider_spec: ProviderSpec | None = None  # the provider that produced the output (scripts see it)
    suite_tests: tuple[TestCase, ...] = ()  # for suite-wide statistics (idf)
    timeout_s: float | None = None  # the run's evaluateOptions.timeoutMs (None: not set)
    provider_output: Any = None  # the output before the test's transform (after the provider's)
    retrieved_context: str | None = None  # an assertion's contextTransform result: replaces vars.context
    trace: TraceSource | None = None  # the row's spans when the run traces (None: tracing is off)

    def __init__(
        self,
        spec: AssertionSpec,
        output: Any,
        test: TestCase,
        services: GradingServices,
        threshold: float | None = None,
        prompt: Any = None,
        latency_ms: float | None = None,
        cached: bool = False,
        cost: float | None = None,
        config_dir: Path | None = None,
        provider_metadata: Mapping[str, Any] = _NEW_DICT,
        provider_spec: ProviderSpec | None = None,
        suite_tests: tuple[TestCase, ...] = (),
        timeout_s: float | None = None,
        provider_output: Any = None,
        retrieved_context: str | None = None,
        trace: TraceSource | None = None,
    ) -> None:
        # one per row: the frozen __init__'s object.__setattr__ per field costs 12 us, the update 2 us
        vars(self).update(
            spec=spec,
            output=output,
            test=test,
            services=services,
            threshold=threshold,
            prompt=prompt,
            latency_ms=latency_ms,
            cached=cached,
            cost=cost,
            config_dir=config_dir,
            provider_metadata={} if provider_metadata is _NEW_DICT else provider_metadata,
            provider_spec=provider_spec,
            suite_tests=suite_tests,
            timeout_s=timeout_s,
            provider_output=provider_output,
            retrieved_context=retrieved_context,
            trace=trace,
        )

    def for_assertion(self, spec: AssertionSpec, threshold: float | None) -> AssertionContext:
        """This row's context aimed at ``spec`` with its effective ``threshold``, every other field shared.

        Grading does this once per assertion of every row; ``dataclasses.replace`` re-runs the frozen
        ``__init__`` over all 18 fields (10 us a call, 0.3 s of a 5,000-row run), a copy of the field
        values costs a tenth of that. No field is computed in ``__init__``, so the copy is the same."""
        clone = object.__new__(AssertionContext)
        clone.__dict__.update(self.__dict__, spec=spec, threshold=threshold)
        return clone

    @property
    def output_text(self) -> str:
        return output_as_text(self.output)

    @property
    def value(self) -> Any:
        return self.spec.value

    @property
    def config(self) -> Mapping[str, Any]:
        return self.spec.config

    @property
    def vars(self) -> Mapping[str, Any]:
        return self.test.vars

    def provider(self, kind: str, fallback: ProviderSpec | None = None) -> ProviderSpec | None:
        """The provider for ``kind`` ("embedding" or "text"); see :func:`resolve_provider`."""
        return resolve_provider(self.spec, self.test, kind, self.services.default_choice, fallback)


def resolve_provider(
    spec: AssertionSpec,
    test: TestCase,
    kind: str,
    suite_default: ProviderChoice | None,
    fallback: ProviderSpec | None = None,
) -> ProviderSpec | None:
    """The assertion's ``provider`` > the test's ``options.provider`` (defaultTest's merged in) >
    the suite default (``--grader``) > ``fallback`` (``local`` for embeddings, nothing for judges)."""
    for choice in (spec.provider, test.provider, suite_default):
        picked = choice.for_kind(kind) if choice else None
        if picked is not None:
            return picked
    return fallback


def needed_providers(
    spec: AssertionSpec, test: TestCase, need: str, suite_default: ProviderChoice | None
) -> tuple[ProviderSpec, ...]:
    """The providers ``spec`` calls for ``need`` ("text", "embedding", "tokens"): each of its ``models``
    when it lists several (embedders, or judges), else the one :func:`resolve_provider` picks (``local``
    for vectors); empty when a judge has no grader."""
    if spec.provider is not None and spec.provider.models:
        return spec.provider.models
    fallback = None if need == "text" else DEFAULT_EMBEDDING_PROVIDER
    provider = resolve_provider(spec, test, need, suite_default, fallback)
    return () if provider is None else (provider,)


def output_as_text(output: Any) -> str:
    """promptfoo's outputString: the output if it is a string, else its JSON."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    # JSON.stringify's compact separators, so configs written for promptfoo compare the same text.
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"))
