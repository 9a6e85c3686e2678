"""What a provider is: one required async method per capability, each a separate protocol.

A completion provider answers prompts (``complete``); an embedding provider turns texts into vectors
(``embed``); a similarity provider scores text pairs itself (``similarity``, cosine only); a token
embedding provider gives contextual token vectors (``embed_tokens``, for BERTScore). An object may
implement several. The runner checks capabilities with :func:`supports`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from evalh.model import ProviderResponse, TestCase, Usage

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CallContext",
    "Closable",
    "CompletionProvider",
    "EmbeddingProvider",
    "Embeddings",
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


@dataclass(frozen=True)
class Embeddings:
    """One row per input text, in input order. ``vectors`` is a 2-D float32 array."""

    vectors: npt.NDArray[np.float32]
    usage: Usage = field(default_factory=Usage)


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
class Closable(Protocol):
    async def aclose(self) -> None: ...


_CAPABILITY_METHOD = {
    "text": "complete",
    "embedding": "embed",
    "similarity": "similarity",
    "tokens": "embed_tokens",
}


def supports(provider: object, capability: str) -> bool:
    """Whether a built provider has ``capability`` ("text", "embedding", "similarity", "tokens")."""
    return callable(getattr(provider, _CAPABILITY_METHOD[capability], None))
