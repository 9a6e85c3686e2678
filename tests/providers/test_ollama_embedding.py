"""ollama:embeddings:<model> against a real server speaking Ollama's /api/embed on 127.0.0.1."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from evalh.errors import ProviderError
from evalh.model import ProviderSpec
from evalh.providers.base import supports
from evalh.providers.ollama import make_embedding
from evalh.providers.registry import build_provider, capabilities_of
from tests.loopback import LoopbackServer, Reply
from tests.providers.embedding_server import expected, ollama_embed


def test_posts_a_list_of_inputs_to_api_embed(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.route("POST", "/api/embed", ollama_embed)
    monkeypatch.setenv("OLLAMA_BASE_URL", loopback.url)
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    embedder = build_provider(
        ProviderSpec(id="ollama:embeddings:nomic-embed-text", config={"keep_alive": "5m"})
    )
    texts = ["red apple", "green pear", "red apple pie"]
    result = asyncio.run(embedder.embed(texts))
    np.testing.assert_allclose(result.vectors, expected(texts), atol=1e-6)
    (request,) = loopback.requests
    assert request.json == {"model": "nomic-embed-text", "input": texts, "keep_alive": "5m"}
    assert request.header("Authorization") is None
    assert result.usage.prompt_tokens == 10 and result.usage.cost == 0.0


def test_an_error_payload_is_a_provider_error(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", "/api/embed", lambda r: Reply.json({"error": 'model "nope" not found'}, status=404)
    )
    embedder = make_embedding(ProviderSpec(id="ollama:embedding:nope", config={"apiBaseUrl": loopback.url}))
    with pytest.raises(ProviderError, match="not found"):
        asyncio.run(embedder.embed(["x"]))


def test_registry_capabilities_are_true(loopback: LoopbackServer) -> None:
    embedder = make_embedding(ProviderSpec(id="ollama:embeddings:m", config={"apiBaseUrl": loopback.url}))
    for capability in ("embedding", "text", "similarity", "tokens"):
        assert supports(embedder, capability) == (capability in capabilities_of("ollama:embeddings:m"))
