"""Hugging Face feature-extraction and sentence-similarity against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from evalh.errors import ProviderError
from evalh.model import ProviderSpec
from evalh.providers.base import supports
from evalh.providers.fake import fake_vector
from evalh.providers.huggingface import make_feature_extraction, make_sentence_similarity
from evalh.providers.registry import build_provider, capabilities_of
from tests.loopback import LoopbackServer, Reply
from tests.providers.embedding_server import DIM, expected, hf_feature_extraction, hf_sentence_similarity

TOKEN = "hf_secret_token_for_tests"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def test_feature_extraction_mean_pools_token_rows(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.route("POST", f"/models/{MODEL}/pipeline/feature-extraction", hf_feature_extraction)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    embedder = build_provider(
        ProviderSpec(id=f"huggingface:feature-extraction:{MODEL}", config={"apiBaseUrl": loopback.url})
    )
    texts = ["a b c", "d e"]
    vectors = asyncio.run(embedder.embed(texts)).vectors
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-6)
    (request,) = loopback.requests
    assert request.json == {"inputs": texts}
    assert request.header("Authorization") == f"Bearer {TOKEN}"
    assert TOKEN not in request.body.decode()


def test_api_endpoint_replaces_the_url(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", "/embed", lambda r: Reply.json([fake_vector(t, DIM).tolist() for t in r.json["inputs"]])
    )
    spec = ProviderSpec(
        id="hf:feature-extraction:BAAI/bge-small-en-v1.5", config={"apiEndpoint": loopback.url + "/embed"}
    )
    vectors = asyncio.run(make_feature_extraction(spec).embed(["x y"])).vectors
    np.testing.assert_allclose(vectors, expected(["x y"]), atol=1e-6)


def test_feature_extraction_error_message_is_surfaced(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST",
        f"/models/{MODEL}/pipeline/feature-extraction",
        lambda r: Reply.json({"error": "Model is loading"}, status=400),
    )
    embedder = make_feature_extraction(
        ProviderSpec(id=f"huggingface:feature-extraction:{MODEL}", config={"apiBaseUrl": loopback.url})
    )
    with pytest.raises(ProviderError, match="Model is loading"):
        asyncio.run(embedder.embed(["x"]))


def test_sentence_similarity_sends_one_request_per_source(loopback: LoopbackServer) -> None:
    loopback.route("POST", f"/models/{MODEL}/pipeline/sentence-similarity", hf_sentence_similarity)
    provider = make_sentence_similarity(
        ProviderSpec(
            id=f"huggingface:sentence-similarity:{MODEL}",
            config={"apiBaseUrl": loopback.url, "apiKey": TOKEN},
        )
    )
    pairs = [("hello world", "hello there"), ("cats purr", "dogs bark"), ("hello world", "world hello")]
    result = asyncio.run(provider.similarity(pairs))
    for (a, b), score in zip(pairs, result.scores, strict=True):
        assert score == pytest.approx(float(fake_vector(a, DIM) @ fake_vector(b, DIM)), abs=1e-6)
    assert result.usage.requests == 2
    bodies = sorted(
        (r.json["inputs"]["source_sentence"], r.json["inputs"]["sentences"]) for r in loopback.requests
    )
    assert bodies == [("cats purr", ["dogs bark"]), ("hello world", ["hello there", "world hello"])]
    assert all(r.header("Authorization") == f"Bearer {TOKEN}" for r in loopback.requests)


def test_sentence_similarity_rejects_a_wrong_reply(loopback: LoopbackServer) -> None:
    loopback.route("POST", f"/models/{MODEL}/pipeline/sentence-similarity", lambda r: Reply.json({"x": 1}))
    provider = make_sentence_similarity(
        ProviderSpec(id=f"huggingface:sentence-similarity:{MODEL}", config={"apiBaseUrl": loopback.url})
    )
    with pytest.raises(ProviderError, match="expected 1 scores"):
        asyncio.run(provider.similarity([("a", "b")]))


def test_registry_capabilities_are_true(loopback: LoopbackServer) -> None:
    config = {"apiBaseUrl": loopback.url}
    for provider_id in (
        f"huggingface:feature-extraction:{MODEL}",
        f"huggingface:sentence-similarity:{MODEL}",
    ):
        built = build_provider(ProviderSpec(id=provider_id, config=config))
        for capability in ("embedding", "text", "similarity", "tokens"):
            assert supports(built, capability) == (capability in capabilities_of(provider_id)), provider_id
