"""The ``fake`` embedding provider: deterministic hashed bag-of-words vectors, for tests and demos.

Each lower-cased word is hashed (blake2b) to a dimension and a sign; the counts are summed and the
vector is L2-normalised. Texts sharing words are similar, a text without words is the zero vector, and
the same text always gives the same vector on every machine. ``fake:<n>`` or ``config.dimensions`` sets
the dimension (default 256). No model, no network: it tests the plumbing, not meaning.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evalh.errors import ConfigError
from evalh.model import ProviderSpec, Usage
from evalh.providers.base import Embeddings

__all__ = ["FakeEmbedder", "fake_vector", "make_fake", "words"]

DEFAULT_DIMENSIONS = 256
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``."""
    return _WORD.findall(text.lower())


def fake_vector(
    text: str, dimensions: int, *, normalize: bool = True
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The hashed bag-of-words vector of ``text``."""
    vector = np.zeros(dimensions, dtype=np.float64)
    for word in words(text):
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        number = int.from_bytes(digest, "little")
        vector[number % dimensions] += 1.0 if (number >> 63) & 1 == 0 else -1.0
    norm = float(np.linalg.norm(vector))
    if normalize and norm > 0:
        vector /= norm
    return vector.astype(np.float32)


class FakeEmbedder:
    """Deterministic embeddings with no model: ``embed`` only."""

    def __init__(self, spec: ProviderSpec, dimensions: int, batch_size: int, normalize: bool) -> None:
        self.id = spec.id
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.normalize = normalize

    def cache_identity(self) -> Mapping[str, Any]:
        return {"provider": "fake", "dimensions": self.dimensions, "normalize": self.normalize, "version": 1}

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        started = time.perf_counter()
        rows = [fake_vector(text, self.dimensions, normalize=self.normalize) for text in texts]
        vectors = np.stack(rows) if rows else np.zeros((0, self.dimensions), dtype=np.float32)
        tokens = sum(len(words(text)) for text in texts)
        usage = Usage(
            prompt_tokens=tokens,
            total_tokens=tokens,
            requests=1,
            texts=len(texts),
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )
        return Embeddings(vectors=vectors, usage=usage)


def _positive_int(value: Any, what: str, where: str) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | str)
        or not str(value).isdigit()
        or int(value) < 1
    ):
        raise ConfigError(f"{what} must be a positive integer (got {value!r})", where=where)
    return int(value)


def make_fake(spec: ProviderSpec) -> FakeEmbedder:
    """The registry's factory for ``fake`` and ``fake:<dimensions>``."""
    where = spec.path or spec.id
    suffix = spec.id.partition(":")[2]
    dimensions = spec.config.get("dimensions", suffix or DEFAULT_DIMENSIONS)
    return FakeEmbedder(
        spec,
        dimensions=_positive_int(dimensions, "the fake provider's dimensions", where),
        batch_size=_positive_int(spec.config.get("batchSize", 64), "batchSize", where),
        normalize=bool(spec.config.get("normalize", True)),
    )
