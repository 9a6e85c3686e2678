"""openai:embedding:<model> against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from evalh.errors import ProviderError, ProviderHTTPError
from evalh.model import ProviderSpec
from evalh.providers.base import supports
from evalh.providers.openai import OpenAIEmbedding, make_embedding
from evalh.providers.registry import build_provider, capabilities_of
from tests.loopback import LoopbackServer, Reply, Request
from tests.providers.embedding_server import expected, openai_embeddings

KEY = "sk-test-embedding-secret-42"


def provider(loopback: LoopbackServer, **config: object) -> OpenAIEmbedding:
    base = {"apiBaseUrl": loopback.url + "/v1", "apiKey": KEY, "retryBaseDelayS": 0.001}
    return make_embedding(
        ProviderSpec(id="openai:embedding:text-embedding-3-small", config={**base, **config})
    )


def test_embeds_a_batch_with_the_key_only_in_its_header(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    embedder = provider(loopback, headers={"X-Team": "evals"}, costPer1kTokens=0.5)
    texts = ["the cat sat", "dogs bark", "the cat sat again"]
    result = asyncio.run(embedder.embed(texts))
    np.testing.assert_allclose(result.vectors, expected(texts), atol=1e-6)
    (request,) = loopback.requests
    assert request.path == "/v1/embeddings"
    assert request.json == {"model": "text-embedding-3-small", "input": texts, "encoding_format": "base64"}
    assert request.header("Authorization") == f"Bearer {KEY}"
    assert request.header("X-Team") == "evals"
    assert KEY not in request.body.decode() and KEY not in request.path
    assert result.usage.requests == 1 and result.usage.texts == 3 and result.usage.prompt_tokens == 12
    assert result.usage.cost == pytest.approx(12 * 0.5 / 1000)
    assert KEY not in json.dumps(embedder.cache_identity(), default=str)


def test_out_of_order_items_are_put_back_in_input_order(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", lambda r: openai_embeddings(r, reverse=True))
    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    vectors = asyncio.run(provider(loopback).embed(texts)).vectors
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-6)


@pytest.mark.parametrize("honour_base64", [True, False])
def test_base64_and_float_replies_give_the_same_vectors(
    loopback: LoopbackServer, honour_base64: bool
) -> None:
    # the request asks for base64; a server that ignores it sends floats: both read to the same float32
    loopback.route("POST", "/v1/embeddings", lambda r: openai_embeddings(r, honour_base64=honour_base64))
    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    vectors = asyncio.run(provider(loopback).embed(texts)).vectors
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, expected(texts).astype(np.float32))
    assert loopback.requests[-1].json["encoding_format"] == "base64"


def test_passthrough_can_ask_for_floats(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    texts = ["alpha beta"]
    embedder = provider(loopback, passthrough={"encoding_format": "float"})
    vectors = asyncio.run(embedder.embed(texts)).vectors
    assert loopback.requests[-1].json["encoding_format"] == "float"
    np.testing.assert_array_equal(vectors, expected(texts).astype(np.float32))


def test_dimensions_are_sent_and_checked(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    asyncio.run(provider(loopback, dimensions=16).embed(["x y"]))
    assert loopback.requests[-1].json["dimensions"] == 16
    with pytest.raises(ProviderError, match="dimension mismatch: asked for 8 dimensions, got 16"):
        asyncio.run(provider(loopback, dimensions=8).embed(["x y"]))
    assert provider(loopback, dimensions=8).cache_identity()["dimensions"] == 8


def test_environment_base_url_key_envar_and_alias(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.url + "/v1")
    monkeypatch.setenv("MY_EMBED_KEY", "sk-from-named-envar")
    embedder = build_provider(
        ProviderSpec(id="openai:embeddings:nomic-embed-text", config={"apiKeyEnvar": "MY_EMBED_KEY"})
    )
    asyncio.run(embedder.embed(["hello"]))
    request = loopback.requests[-1]
    assert request.json["model"] == "nomic-embed-text"
    assert request.header("Authorization") == "Bearer sk-from-named-envar"


def test_server_errors_are_provider_errors_without_the_key(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", "/v1/embeddings", lambda r: Reply.json({"error": {"message": f"bad key {KEY}"}}, status=401)
    )
    with pytest.raises(ProviderHTTPError) as caught:
        asyncio.run(provider(loopback).embed(["x"]))
    assert caught.value.status == 401 and KEY not in str(caught.value) and "bad key" in str(caught.value)


def test_retries_a_rate_limit_then_succeeds(loopback: LoopbackServer) -> None:
    calls: list[Request] = []

    def handler(request: Request) -> Reply:
        calls.append(request)
        if len(calls) == 1:
            return Reply.json({"error": "slow down"}, status=429, headers={"Retry-After": "0"})
        return openai_embeddings(request)

    loopback.route("POST", "/v1/embeddings", handler)
    vectors = asyncio.run(provider(loopback).embed(["a b"])).vectors
    assert vectors.shape == (1, 16) and len(loopback.requests) == 2


def test_a_malformed_reply_is_a_clear_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", lambda r: Reply.json({"data": [{"embedding": [1.0]}]}))
    with pytest.raises(ProviderError, match="returned 1 vectors for 2 texts"):
        asyncio.run(provider(loopback).embed(["a", "b"]))
    loopback.route("POST", "/v1/embeddings", lambda r: Reply.json({"unexpected": True}))
    with pytest.raises(ProviderError, match="unexpected reply"):
        asyncio.run(provider(loopback).embed(["a"]))


def test_openai_itself_needs_a_key_and_has_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_API_HOST"):
        monkeypatch.delenv(name, raising=False)
    embedder = make_embedding(ProviderSpec(id="openai:embedding:text-embedding-3-small"))
    assert embedder.price_per_1k == pytest.approx(0.00002)
    assert embedder.batch_size == 64
    with pytest.raises(ProviderError, match="no API key"):
        asyncio.run(embedder.embed(["x"]))
    large = make_embedding(
        ProviderSpec(id="openai:embedding:text-embedding-3-large", config={"batchSize": 500})
    )
    assert large.price_per_1k == pytest.approx(0.00013) and large.batch_size == 500


def test_registry_capabilities_are_true(loopback: LoopbackServer) -> None:
    embedder = provider(loopback)
    for capability in ("embedding", "text", "similarity", "tokens"):
        assert supports(embedder, capability) == (capability in capabilities_of("openai:embedding:m"))
