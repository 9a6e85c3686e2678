"""What a provider is: one required async method per capability, each a separate protocol.

A completion provider answers prompts (``complete``); an embedding provider turns texts into vectors
(``embed``); a similarity provider scores text pairs itself (``similarity``, cosine only); a token
embedding provider gives contextual token vectors (``embed_tokens``, for BERTScore). An object may
implement several. Optional traits are protocols of their own too: :class:`Batched` (texts per call),
:class:`CacheIdentified` (what fixes its answers), :class:`CacheableCompletions` (may the runner cache
them), :class:`ConcurrencyCap` (calls that contend for one resource) and :class:`Closable`. The runner
checks each with ``isinstance`` (or :func:`supports` by capability name), never by attribute probing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from evalh.model import ProviderChoice, ProviderResponse, ProviderSpec, TestCase, TraceContext, Usage

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "AnswersAtOnce",
    "Batched",
    "CacheIdentified",
    "CacheableCompletions",
    "CallContext",
    "Closable",
    "CompletionProvider",
    "Completions",
    "ConcurrencyCap",
    "EmbeddingProvider",
    "Embeddings",
    "PromptConfigured",
    "Provider",
    "RenderedRequest",
    "Similarities",
    "SimilarityProvider",
    "TokenEmbedding",
    "TokenEmbeddingProvider",
    "supports",
]


@dataclass(frozen=True)
class CallContext:
    """What a completion provider may want besides the prompt."""

    vars: Mapping[str, Any] = field(default_factory=dict)
    test: TestCase | None = None
    prompt_label: str = ""
    timeout_s: float | None = None
    # the call's W3C trace context when the run traces: a ``traceparent`` header for HTTP providers,
    # ``context['traceparent']`` for Python and JavaScript ones, ``TRACEPARENT`` for ``exec:``
    trace: TraceContext | None = None
    # the provider under test when this call's provider stands in for it (the simulated user drives it)
    original_provider: Any = None
    # the run's completions (Completions: cache, gates, timeouts, usage), for a provider that stands in
    # for the one under test and calls other models itself (the simulated user's user model)
    completions: Any = None


@dataclass(frozen=True)
class Embeddings:
    """One row per input text, in input order. ``vectors`` is a 2-D float32 array. ``checked``: every
    row is known to be non-empty, finite and not all zero (the embedding store checks each vector once,
    as it arrives), so any two rows compare without ``vector_problem``."""

    vectors: npt.NDArray[np.float32]
    usage: Usage = field(default_factory=Usage)
    checked: bool = False


@dataclass(frozen=True)
class Similarities:
    scores: tuple[float, ...]
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class TokenEmbedding:
    """Contextual vectors of one text: ``tokens[i]`` has row ``vectors[i]`` (special tokens removed)."""

    tokens: tuple[str, ...]
    vectors: npt.NDArray[np.float32]


@runtime_checkable
class CompletionProvider(Protocol):
    id: str

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext
    ) -> ProviderResponse:
        """Answer one rendered prompt (a string or a chat message list). Errors go in ``error``."""
        ...


@runtime_checkable
class Completions(Protocol):
    """The run's completion service as a provider that calls other models sees it (the runner's
    RunServices): each call passes the called provider's cache, gate, timeout and usage."""

    default_choice: ProviderChoice | None  # --grader, the suite-wide default

    async def complete(
        self, provider: ProviderSpec, prompt: str | Sequence[Mapping[str, Any]]
    ) -> ProviderResponse: ...


@runtime_checkable
class EmbeddingProvider(Protocol):
    id: str
    batch_size: int

    def cache_identity(self) -> Mapping[str, Any]:
        """Non-secret fields that fix the vectors (id, model, dimensions): the cache key's prefix."""
        ...

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Embed at most ``batch_size`` texts; raise ProviderError on failure."""
        ...


@runtime_checkable
class SimilarityProvider(Protocol):
    id: str

    async def similarity(self, pairs: Sequence[tuple[str, str]]) -> Similarities:
        """Cosine similarity of each (a, b) pair, computed by the provider."""
        ...


@runtime_checkable
class TokenEmbeddingProvider(Protocol):
    id: str

    async def embed_tokens(self, texts: Sequence[str]) -> list[TokenEmbedding]:
        """Contextual token vectors of each text."""
        ...


@runtime_checkable
class PromptConfigured(Protocol):
    """A provider whose requests take a prompt's ``config`` merged over its own, as promptfoo's API
    providers merge ``context.prompt.config``; script providers (echo, ``exec:``, ``python:``) keep
    their own config, as in promptfoo."""

    merges_prompt_config: bool


@runtime_checkable
class Closable(Protocol):
    async def aclose(self) -> None: ...


@runtime_checkable
class Batched(Protocol):
    """How many texts (or pairs) one call may carry; the store splits its work into such batches."""

    batch_size: int


@runtime_checkable
class CacheIdentified(Protocol):
    def cache_identity(self) -> Mapping[str, Any]:
        """Non-secret fields (secrets as ``identity.Secret``) that fix the provider's answers."""
        ...


@runtime_checkable
class CacheableCompletions(Protocol):
    """A completion provider that says whether the runner may cache its answers (not when sampling)."""

    @property
    def cacheable(self) -> bool: ...

    def cache_identity(self) -> Mapping[str, Any]: ...


@runtime_checkable
class RenderedRequest(Protocol):
    """A provider whose request is rendered for each call from the prompt, the test's vars and ``env``
    (the ``http`` provider's URL, headers, body): its cache key is the request as rendered."""

    def request_shape(
        self, prompt: str | Sequence[Mapping[str, Any]], variables: Mapping[str, Any]
    ) -> Mapping[str, Any] | None: ...


@runtime_checkable
class ConcurrencyCap(Protocol):
    """A provider whose calls contend for one resource (the local model already uses every core): its
    gate lets at most ``max_concurrency`` calls through unless ``config.maxConcurrency`` says otherwise."""

    max_concurrency: int


@runtime_checkable
class AnswersAtOnce(Protocol):
    """A completion provider whose call answers without waiting on anything (no I/O, no other task: the
    echo): nothing runs beside it while it answers, so the runner calls it without its concurrency
    gate, timeout or in-flight mark, which could never hold it back (still counted as a call done)."""

    answers_at_once: bool


# What the registry builds: an object with at least one capability.
Provider = CompletionProvider | EmbeddingProvider | SimilarityProvider | TokenEmbeddingProvider

_CAPABILITY_PROTOCOL: dict[str, type] = {
    "text": CompletionProvider,
    "embedding": EmbeddingProvider,
    "similarity": SimilarityProvider,
    "tokens": TokenEmbeddingProvider,
}


def supports(provider: object, capability: str) -> bool:
    """Whether a built provider has ``capability`` ("text", "embedding", "similarity", "tokens")."""
    return isinstance(provider, _CAPABILITY_PROTOCOL[capability])
