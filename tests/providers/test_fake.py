"""The fake embedder: deterministic hashed bag-of-words vectors."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.base import EmbeddingProvider, supports
from evalh.providers.fake import fake_vector, make_fake
from evalh.providers.registry import build_provider, capabilities_of


def test_vectors_are_deterministic_normalised_and_word_based() -> None:
    provider = make_fake(ProviderSpec(id="fake"))
    result = asyncio.run(provider.embed(["the cat sat", "The CAT sat!", "dogs bark", ""]))
    vectors = result.vectors
    assert vectors.shape == (4, 256) and vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors[0], vectors[1])  # case and punctuation do not matter
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-6)
    assert float(vectors[0] @ vectors[2]) < 0.5
    assert not np.any(vectors[3])  # no words: the zero vector
    assert result.usage.requests == 1 and result.usage.texts == 4 and result.usage.prompt_tokens == 8
    np.testing.assert_array_equal(fake_vector("the cat sat", 256), vectors[0])


def test_shared_words_raise_similarity() -> None:
    a, b, c = (fake_vector(t, 512) for t in ("red apple pie", "red apple tart", "blue car engine"))
    assert float(a @ b) > float(a @ c)
    assert float(a @ b) == pytest.approx(2 / 3, abs=0.01)  # two of three words shared


def test_dimensions_from_id_or_config() -> None:
    assert make_fake(ProviderSpec(id="fake:32")).dimensions == 32
    assert make_fake(ProviderSpec(id="fake", config={"dimensions": 8, "batchSize": 5})).batch_size == 5
    with pytest.raises(ConfigError, match="positive integer"):
        make_fake(ProviderSpec(id="fake:zero"))
    with pytest.raises(ConfigError, match="batchSize"):
        make_fake(ProviderSpec(id="fake", config={"batchSize": 0}))


def test_registry_capabilities_are_true() -> None:
    provider = build_provider(ProviderSpec(id="fake"))
    assert isinstance(provider, EmbeddingProvider)
    for capability in ("embedding", "text", "similarity", "tokens"):
        assert supports(provider, capability) == (capability in capabilities_of("fake"))
    assert provider.cache_identity() != make_fake(ProviderSpec(id="fake:64")).cache_identity()
