"""Model access for a run: a pool of built providers, per-provider concurrency, the completion cache,
and :class:`RunServices`, the runner's implementation of the assertions' ``GradingServices``.

One identity (:mod:`evalh.providers.identity`): the pool, the concurrency limits and usage are per
:func:`provider_key`; cache keys use :func:`cache_identity`. Every response's output is redacted as it
arrives (a server echoing a key or a Basic header): assertions and the cache never see it. Errors are
redacted where they are made (the HTTP layer) and where they are written (reports, console, errors).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.common.activity import called_at_once, calling
from evalh.errors import EvalhError
from evalh.model import (
    AssertionSpec,
    GradedAssertion,
    ProviderChoice,
    ProviderResponse,
    ProviderSpec,
    Usage,
)
from evalh.providers.base import (
    AnswersAtOnce,
    CacheableCompletions,
    CallContext,
    Closable,
    CompletionProvider,
    ConcurrencyCap,
    Embeddings,
    PromptConfigured,
    Provider,
    RenderedRequest,
    Similarities,
    TokenEmbedding,
)
from evalh.providers.identity import UsageBook, cache_identity, provider_key
from evalh.providers.registry import build_provider, capabilities_of
from evalh.runner.cache import Cache
from evalh.runner.embed import EmbeddingStore
from evalh.runner.grading import grade_assertion
from evalh.secrets import redact_value

__all__ = ["ProviderPool", "RunServices"]


@dataclass(frozen=True)
class _Traits:
    """The completion protocols a built provider implements. Asked once per provider, not per call: an
    isinstance against a runtime-checkable Protocol walks the protocol's members every time on Python
    3.11 (0.4 s of a 5,000-row run)."""

    completions: CompletionProvider | None
    cacheable: CacheableCompletions | None
    prompt_configured: bool
    at_once: bool  # AnswersAtOnce: called without the gate, the timeout and the in-flight mark

    @classmethod
    def of(cls, provider: Provider) -> _Traits:
        return cls(
            completions=provider if isinstance(provider, CompletionProvider) else None,
            cacheable=provider if isinstance(provider, CacheableCompletions) else None,
            prompt_configured=isinstance(provider, PromptConfigured),
            at_once=isinstance(provider, AnswersAtOnce) and provider.answers_at_once is True,
        )


class ProviderPool:
    """Builds each distinct provider once per run, gates its calls, and closes them all at the end.

    One gate per provider identity (:func:`provider_key`): its completions, embeddings, token vectors
    and similarity calls all pass the same semaphore, so ``config.maxConcurrency`` (else the run's
    ``-j`` / ``evaluateOptions.maxConcurrency``) bounds everything sent to that provider at once."""

    def __init__(self, base_dir: str = "", max_concurrency: int = 4) -> None:
        self.base_dir = base_dir
        self.max_concurrency = max(1, max_concurrency)
        self._built: dict[str, Provider] = {}
        self._traits: dict[str, _Traits] = {}
        self._gates: dict[str, asyncio.Semaphore] = {}
        self._gates_loop: asyncio.AbstractEventLoop | None = None

    def _with_base_dir(self, spec: ProviderSpec) -> ProviderSpec:
        return spec if spec.base_dir else dataclasses.replace(spec, base_dir=self.base_dir)

    def get(self, spec: ProviderSpec) -> Provider:
        key = provider_key(spec)
        if key not in self._built:
            self._built[key] = build_provider(self._with_base_dir(spec))
        return self._built[key]

    def traits(self, spec: ProviderSpec) -> _Traits:
        """What ``spec``'s provider can do for a completion, checked once per built provider."""
        key = provider_key(spec)
        if key not in self._traits:
            self._traits[key] = _Traits.of(self.get(spec))
        return self._traits[key]

    def gate_size(self, spec: ProviderSpec) -> int:
        """``config.maxConcurrency`` if set (validated at load), else ``-j``, lowered to what a provider
        whose calls contend for one resource (the local model) declares it can take."""
        configured = spec.config.get("maxConcurrency")
        if configured is not None:
            return int(configured)
        provider = self.get(spec)
        if isinstance(provider, ConcurrencyCap):
            return max(1, min(self.max_concurrency, provider.max_concurrency))
        return self.max_concurrency

    def gate(self, spec: ProviderSpec) -> asyncio.Semaphore:
        """The one concurrency gate of ``spec``'s provider identity."""
        loop = asyncio.get_running_loop()
        if loop is not self._gates_loop:  # a semaphore belongs to one event loop (a pool may outlive it)
            self._gates, self._gates_loop = {}, loop
        key = provider_key(spec)
        if key not in self._gates:
            self._gates[key] = asyncio.Semaphore(self.gate_size(spec))
        return self._gates[key]

    async def aclose(self) -> None:
        for provider in self._built.values():
            if isinstance(provider, Closable):
                await provider.aclose()
        self._built.clear()
        self._traits.clear()


_ONE_REQUEST = Usage(requests=1)


def _redacted(response: ProviderResponse) -> ProviderResponse:
    """``response`` with every secret value of the run replaced in its output, before assertions and the
    cache see it. Its error is left alone: an HTTP error was redacted where it was made (the HTTP layer
    knows the request's secrets), and every error is redacted again where it is written (reports,
    console, EvalhError.render): a third pass here would only hide a gap at either place."""
    output = redact_value(response.output)
    if output is response.output:
        return response
    return response.replaced(output=output)


def _failed(spec: ProviderSpec, error: Exception) -> ProviderResponse:
    """The row's error for what a provider raised: a provider bug fails its row, not the run (as for
    embeddings)."""
    if isinstance(error, EvalhError):
        return ProviderResponse(error=error.render())
    return ProviderResponse(error=f"{spec.display} failed: {type(error).__name__}: {error}")


@dataclass(frozen=True)
class _UnderTest:
    """The provider under test as a provider that stands in for it sees it (``original_provider``):
    each of its calls is one :meth:`RunServices.call_provider` call, with the prompt's config."""

    services: RunServices
    spec: ProviderSpec
    prompt_config: Mapping[str, Any] | None

    @property
    def id(self) -> str:
        return self.spec.display

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        return await self.services.call_provider(self.spec, prompt, context, self.prompt_config)


def _response_to_bytes(response: ProviderResponse) -> bytes:
    usage = dataclasses.asdict(response.usage)
    payload = {"output": response.output, "usage": usage, "cost": response.cost}
    finish_reason = (response.metadata or {}).get("finishReason")
    if finish_reason is not None:  # a cached answer still has it, for the finish-reason assertion
        payload["finishReason"] = finish_reason
    return json.dumps(payload, default=str).encode("utf-8")


def _response_from_bytes(blob: bytes) -> ProviderResponse:
    payload = json.loads(blob)
    usage = Usage(**{**payload["usage"], "cached": 1, "requests": 0, "latency_ms": 0.0})
    finish_reason = payload.get("finishReason")
    metadata = {"finishReason": finish_reason} if isinstance(finish_reason, str) else {}
    return ProviderResponse(
        output=payload["output"], usage=usage, cached=True, cost=payload.get("cost"), metadata=metadata
    )


def _filled(response: ProviderResponse, elapsed_ms: float) -> ProviderResponse:
    """A called provider's response with what the runner measures: its latency, unless the provider
    measured it, and the one request it made, unless it counted its own (a cached answer made none)."""
    filled: dict[str, Any] = {}  # one replace, not one per field: this runs for every row
    if response.latency_ms is None:
        filled["latency_ms"] = elapsed_ms
    if response.usage.requests == 0 and not response.cached:
        filled["usage"] = response.usage + _ONE_REQUEST
    return response.replaced(**filled) if filled else response


class RunServices:
    """Completions (outputs and graders) with caching and concurrency; embeddings via the store."""

    def __init__(
        self,
        pool: ProviderPool,
        cache: Cache,
        *,
        default_choice: ProviderChoice | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.pool = pool
        self.cache = cache
        self.default_choice = default_choice
        self.timeout_s = timeout_s
        self.usage = UsageBook()
        self.embeddings = EmbeddingStore(pool, cache, self.usage)

    # -- completions ------------------------------------------------------------------------------
    async def call_provider(
        self,
        spec: ProviderSpec,
        prompt: str | Sequence[Mapping[str, Any]],
        context: CallContext,
        prompt_config: Mapping[str, Any] | None = None,
    ) -> ProviderResponse:
        """Call a completion provider once (cache, semaphore, timeout); failures become ``error``.

        ``prompt_config`` (a prompt's ``config``) is merged over the provider's config for this call
        when the provider takes it (PromptConfigured, as promptfoo's API providers do); the call still
        counts against ``spec``'s gate and usage."""
        built = spec
        try:
            traits = self.pool.traits(spec)
            if prompt_config and traits.prompt_configured:
                built = dataclasses.replace(spec, config={**spec.config, **prompt_config})
                traits = self.pool.traits(built)
        except EvalhError as error:
            return ProviderResponse(error=error.render())
        provider = traits.completions
        if provider is None:
            return ProviderResponse(error=f"provider {spec.id!r} cannot produce text outputs")
        key = None
        try:
            if self.cache.enabled and traits.cacheable is not None and traits.cacheable.cacheable:
                shaping = (
                    provider.request_shape(prompt, context.vars)
                    if isinstance(provider, RenderedRequest)
                    else {}
                )
                if shaping is not None:  # a request that does not render is not cached
                    identity = cache_identity(provider, built, self.cache_hash_key, shaping)
                    key = Cache.key({"provider": identity}, json.dumps(prompt, sort_keys=True))
                # a traced call is made again: an answer from the cache has no spans (still written)
                reads = context.trace is None
                if key is not None and reads and (blob := self.cache.get("completion", key)) is not None:
                    response = _response_from_bytes(blob)
                    self.usage.add(spec, response.usage)
                    return response
            called = self._call_at_once if traits.at_once else self._call_uncached
            response = _redacted(await called(provider, spec, prompt, context))
            self.usage.add(spec, response.usage)
            if key is not None and response.error is None and response.output is not None:
                self.cache.put("completion", key, _response_to_bytes(response))
        except EvalhError as error:  # the cache could not be used
            return ProviderResponse(error=error.render())
        return response

    async def _call_uncached(
        self,
        provider: CompletionProvider,
        spec: ProviderSpec,
        prompt: str | Sequence[Mapping[str, Any]],
        context: CallContext,
    ) -> ProviderResponse:
        timeout = context.timeout_s or self.timeout_s
        async with self.pool.gate(spec):
            with calling(spec.display) as mark:  # in flight, for the progress display
                started = time.perf_counter()
                mark.failed = True
                try:
                    called = provider.complete(prompt, context)
                    # without a timeout, wait_for only awaits the call: skip its frame on every row
                    response = await (called if timeout is None else asyncio.wait_for(called, timeout))
                except TimeoutError:
                    return ProviderResponse(error=f"{spec.id} timed out after {timeout:g} s")
                except Exception as error:
                    return _failed(spec, error)
                mark.failed = response.error is not None
                elapsed = (time.perf_counter() - started) * 1000
        return _filled(response, elapsed)

    async def _call_at_once(
        self,
        provider: CompletionProvider,
        spec: ProviderSpec,
        prompt: str | Sequence[Mapping[str, Any]],
        context: CallContext,
    ) -> ProviderResponse:
        """:meth:`_call_uncached` of a provider that answers at once (AnswersAtOnce: the echo): no gate
        to pass or timeout to race, since no other task runs while it answers (it never waits); counted
        done for the progress display, as every call is."""
        started = time.perf_counter()
        failed = True
        try:
            response = await provider.complete(prompt, context)
            failed = response.error is not None
        except Exception as error:
            return _failed(spec, error)
        finally:
            called_at_once(spec.display, failed)
        return _filled(response, (time.perf_counter() - started) * 1000)

    async def complete(
        self, provider: ProviderSpec, prompt: str | Sequence[Mapping[str, Any]]
    ) -> ProviderResponse:
        return await self.call_provider(provider, prompt, CallContext(timeout_s=self.timeout_s))

    async def stand_in(
        self,
        stand_in: ProviderSpec,
        under_test: ProviderSpec,
        prompt: str | Sequence[Mapping[str, Any]],
        context: CallContext,
        prompt_config: Mapping[str, Any] | None = None,
    ) -> ProviderResponse:
        """Answer a row with the provider that stands in for the one under test (a test's ``provider:``,
        the simulated user), handing it the provider under test and these completions. It has no gate,
        timeout, cache or usage of its own: each call it makes has its callee's, and a conversation of
        many calls is not one call. Its usage is already counted under the providers it called."""
        try:
            driver = self.pool.traits(stand_in).completions
        except EvalhError as error:
            return ProviderResponse(error=error.render())
        if driver is None:
            return ProviderResponse(error=f"provider {stand_in.id!r} cannot produce text outputs")
        target = _UnderTest(self, under_test, prompt_config)
        handed = dataclasses.replace(context, original_provider=target, completions=self)
        started = time.perf_counter()
        try:
            response = await driver.complete(prompt, handed)
        except Exception as error:
            return _failed(stand_in, error)
        elapsed = (time.perf_counter() - started) * 1000
        return _redacted(
            response if response.latency_ms is not None else response.replaced(latency_ms=elapsed)
        )

    # -- embeddings -------------------------------------------------------------------------------
    async def embed(self, provider: ProviderSpec, texts: Sequence[str]) -> Embeddings:
        return await self.embeddings.embed(provider, texts)

    async def similarity(self, provider: ProviderSpec, pairs: Sequence[tuple[str, str]]) -> Similarities:
        return await self.embeddings.similarity(provider, pairs)

    async def embed_tokens(self, provider: ProviderSpec, texts: Sequence[str]) -> list[TokenEmbedding]:
        return await self.embeddings.embed_tokens(provider, texts)

    def capabilities(self, provider: ProviderSpec) -> tuple[str, ...]:
        return capabilities_of(provider.id)

    # -- assert-set children ----------------------------------------------------------------------
    async def grade(self, spec: AssertionSpec, ctx: AssertionContext) -> GradedAssertion:
        return await grade_assertion(spec, ctx)

    def usage_by_provider(self) -> dict[str, Usage]:
        return self.usage.by_name()

    @property
    def cache_hash_key(self) -> bytes:
        """The key of the secrets' hashes in cache identities (read or made on first use)."""
        return self.embeddings.cache_hash_key
