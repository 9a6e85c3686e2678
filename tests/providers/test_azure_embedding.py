"""azureopenai:embedding:<deployment> against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from evalh.errors import ConfigError, ProviderError
from evalh.model import ProviderSpec
from evalh.providers.azure import make_embedding
from evalh.providers.base import supports
from evalh.providers.registry import build_provider, capabilities_of
from tests.loopback import LoopbackServer
from tests.providers.embedding_server import expected, openai_embeddings

KEY = "azure-embedding-secret-key-9"
PATH = "/openai/deployments/my-ada/embeddings"


def test_posts_to_the_deployment_with_the_api_key_header(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, openai_embeddings)
    spec = ProviderSpec(
        id="azureopenai:embedding:my-ada",
        config={"apiBaseUrl": loopback.url, "apiKey": KEY, "apiVersion": "2024-06-01", "dimensions": 16},
    )
    embedder = make_embedding(spec)
    texts = ["one two", "three"]
    result = asyncio.run(embedder.embed(texts))
    np.testing.assert_allclose(result.vectors, expected(texts), atol=1e-6)
    (request,) = loopback.requests
    assert request.path == f"{PATH}?api-version=2024-06-01"
    assert request.json == {"input": texts, "dimensions": 16}
    assert request.header("api-key") == KEY and request.header("Authorization") is None
    assert KEY not in request.body.decode()
    assert embedder.cache_identity()["api_version"] == "2024-06-01"
    assert "api-version=2024-06-01" in embedder.cache_identity()["url"]


def test_key_from_the_environment_and_alias(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.route("POST", PATH, openai_embeddings)
    monkeypatch.delenv("AZURE_API_KEY", raising=False)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    embedder = build_provider(
        ProviderSpec(id="azureopenai:embeddings:my-ada", config={"apiBaseUrl": loopback.url})
    )
    asyncio.run(embedder.embed(["x"]))
    assert loopback.requests[-1].header("api-key") == KEY
    assert loopback.requests[-1].path.endswith("api-version=2024-10-21")


def test_missing_host_or_key_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "AZURE_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AZURE_API_HOST", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_HOST", raising=False)
    with pytest.raises(ConfigError, match="Azure resource host"):
        make_embedding(ProviderSpec(id="azureopenai:embedding:my-ada"))
    embedder = make_embedding(
        ProviderSpec(id="azureopenai:embedding:my-ada", config={"apiHost": "x.openai.azure.com"})
    )
    with pytest.raises(ProviderError, match="no API key"):
        asyncio.run(embedder.embed(["x"]))


def test_registry_capabilities_are_true(loopback: LoopbackServer) -> None:
    embedder = make_embedding(
        ProviderSpec(id="azureopenai:embedding:d", config={"apiBaseUrl": loopback.url, "apiKey": KEY})
    )
    for capability in ("embedding", "text", "similarity", "tokens"):
        assert supports(embedder, capability) == (capability in capabilities_of("azureopenai:embedding:d"))
