"""The suite-wide embedding store: dedup, batching, the SQLite cache, remembered failures, usage."""

from __future__ import annotations

import asyncio
import math
import random
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalh.assertions.base import EmbedRequest
from evalh.errors import ProviderError, ProviderHTTPError
from evalh.model import CacheMode, ProviderSpec, Usage
from evalh.providers.identity import provider_key
from evalh.runner.cache import Cache
from evalh.runner.embed import EmbeddingStore
from evalh.runner.services import ProviderPool
from tests.loopback import LoopbackServer, Reply, Request
from tests.providers.embedding_server import expected, hf_sentence_similarity, openai_embeddings

KEY = "sk-store-secret-777"


def openai_spec(loopback: LoopbackServer, **config: object) -> ProviderSpec:
    base = {"apiBaseUrl": loopback.url + "/v1", "apiKey": KEY, "batchSize": 16, "retryBaseDelayS": 0.001}
    return ProviderSpec(id="openai:embedding:text-embedding-3-small", config={**base, **config})


def suite_texts(count: int = 150, repeated: float = 0.3) -> list[str]:
    generator = random.Random(11)
    unique = [f"answer number {i} mentions topic {i % 9}" for i in range(int(count * (1 - repeated)))]
    return unique + [generator.choice(unique) for _ in range(count - len(unique))]


def new_store(enabled: bool = True) -> EmbeddingStore:
    return EmbeddingStore(ProviderPool(), Cache.open(enabled))


def sent_texts(loopback: LoopbackServer) -> list[str]:
    return [text for request in loopback.requests_to("/v1/embeddings") for text in request.json["input"]]


def test_prefetch_sends_each_unique_text_once_in_batches(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    spec = openai_spec(loopback)
    texts = suite_texts()
    unique = list(dict.fromkeys(texts))

    async def scenario() -> np.ndarray:
        store = new_store()
        # one request per assertion, as the runner declares them: (output, value) pairs with repeats
        await store.prefetch(
            [EmbedRequest(spec, (texts[i], texts[i + 1])) for i in range(0, len(texts) - 1, 2)]
        )
        requests_after_prefetch = len(loopback.requests)
        vectors = (await store.embed(spec, texts)).vectors
        assert len(loopback.requests) == requests_after_prefetch  # scoring reads memory
        usage = store.usage_by_provider()[spec.id]
        assert usage.requests == math.ceil(len(unique) / 16) and usage.texts == len(unique)
        assert usage.prompt_tokens > 0 and usage.cached == 0
        return vectors

    vectors = asyncio.run(scenario())
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), vectors.shape[1])
    assert vectors.flags.c_contiguous and vectors.flags.writeable  # a matrix of its own, as np.stack made
    assert len(loopback.requests) == math.ceil(len(unique) / 16)
    assert all(len(request.json["input"]) <= 16 for request in loopback.requests)
    assert sorted(sent_texts(loopback)) == sorted(unique)  # nothing sent twice
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-6)


def test_a_second_run_reads_the_cache(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    spec = openai_spec(loopback)
    texts = list(dict.fromkeys(suite_texts(60)))

    async def run_once() -> tuple[np.ndarray, int, int]:
        store = new_store()
        await store.prefetch([EmbedRequest(spec, tuple(texts))])
        usage = store.usage_by_provider()[spec.id]
        return (await store.embed(spec, texts)).vectors, usage.requests, usage.cached

    cold, cold_requests, cold_hits = asyncio.run(run_once())
    warm, warm_requests, warm_hits = asyncio.run(run_once())
    assert (cold_requests, cold_hits) == (math.ceil(len(texts) / 16), 0)
    assert (warm_requests, warm_hits) == (0, len(texts))
    np.testing.assert_array_equal(cold, warm)
    cache_files = list((tmp_path / "evalh-cache").glob("*"))
    assert cache_files and all(KEY.encode() not in f.read_bytes() for f in cache_files)
    assert all(b"answer number" not in f.read_bytes() for f in cache_files)  # keys hash the text


def test_each_vector_is_checked_once_as_it_arrives(loopback: LoopbackServer) -> None:
    # "?!" has no words: its vector is all zeros, which a pair of it must still be checked for
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    spec = openai_spec(loopback)

    async def checked(store: EmbeddingStore) -> tuple[bool, bool, bool]:
        await store.prefetch([EmbedRequest(spec, ("alpha beta", "gamma", "?!"))])
        fit = await store.embed(spec, ["alpha beta", "gamma"])
        with_zero = await store.embed(spec, ["gamma", "?!"])
        fetched_later = await store.embed(spec, ["delta epsilon"])  # not declared: fetched on demand
        return fit.checked, with_zero.checked, fetched_later.checked

    assert asyncio.run(checked(new_store())) == (True, False, True)  # from the provider
    requests = len(loopback.requests)
    assert asyncio.run(checked(new_store())) == (True, False, True)  # from the cache
    assert len(loopback.requests) == requests


def test_no_cache_embeds_again(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    spec = openai_spec(loopback)
    for _ in range(2):
        asyncio.run(new_store(enabled=False).embed(spec, ["alpha", "beta"]))
    assert len(loopback.requests) == 2


def test_a_different_model_setting_is_a_different_cache_entry(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    asyncio.run(new_store().embed(openai_spec(loopback), ["alpha"]))
    asyncio.run(new_store().embed(openai_spec(loopback, dimensions=16), ["alpha"]))
    asyncio.run(new_store().embed(openai_spec(loopback, apiKey="another-key"), ["alpha"]))  # hashed key
    asyncio.run(new_store().embed(openai_spec(loopback, apiKey="another-key"), ["alpha"]))  # same entry
    assert len(loopback.requests) == 3


def test_concurrent_requests_for_one_text_share_one_call(loopback: LoopbackServer) -> None:
    def slow(request: Request) -> Reply:
        reply = openai_embeddings(request)
        return Reply(status=reply.status, body=reply.body, headers=reply.headers, delay_s=0.1)

    loopback.route("POST", "/v1/embeddings", slow)
    spec = openai_spec(loopback)

    async def scenario() -> None:
        store = new_store(enabled=False)
        results = await asyncio.gather(*(store.embed(spec, ["shared text", f"own {i}"]) for i in range(3)))
        for index, result in enumerate(results):
            np.testing.assert_allclose(result.vectors, expected(["shared text", f"own {index}"]), atol=1e-6)

    asyncio.run(scenario())
    assert sent_texts(loopback).count("shared text") == 1


def test_a_failed_batch_is_remembered_not_retried(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", "/v1/embeddings", lambda r: Reply.json({"error": {"message": "quota exceeded"}}, status=403)
    )
    spec = openai_spec(loopback)

    async def scenario() -> None:
        store = new_store()
        await store.prefetch([EmbedRequest(spec, ("a", "b"))])  # does not raise
        for _ in range(3):
            with pytest.raises(ProviderHTTPError, match="quota exceeded"):
                await store.embed(spec, ["a"])
        assert store.usage_by_provider()[spec.id].requests == 1

    asyncio.run(scenario())
    assert len(loopback.requests) == 1


def test_a_provider_without_the_capability_is_an_error() -> None:
    store = new_store()
    with pytest.raises(ProviderError, match="cannot embed texts"):
        asyncio.run(store.embed(ProviderSpec(id="echo"), ["x"]))
    with pytest.raises(ProviderError, match="cannot give token vectors"):
        asyncio.run(store.embed_tokens(ProviderSpec(id="fake"), ["x"]))
    asyncio.run(store.prefetch([EmbedRequest(ProviderSpec(id="echo"), ("x",))]))  # prefetch stays quiet


def test_token_vectors_round_trip_through_the_cache() -> None:
    spec = ProviderSpec(id="local")
    texts = ["The river bank flooded.", "", "Paris is the capital of France."]
    cold = asyncio.run(new_store().embed_tokens(spec, texts))
    store = new_store()
    warm = asyncio.run(store.embed_tokens(spec, texts))
    assert store.usage_by_provider()["local"].cached == 3
    for a, b in zip(cold, warm, strict=True):
        assert a.tokens == b.tokens
        np.testing.assert_array_equal(a.vectors, b.vectors)
    assert warm[1].vectors.shape == (0, 384)


def test_similarity_pairs_are_cached(loopback: LoopbackServer) -> None:
    model = "sentence-transformers/all-MiniLM-L6-v2"
    loopback.route("POST", f"/models/{model}/pipeline/sentence-similarity", hf_sentence_similarity)
    spec = ProviderSpec(id=f"huggingface:sentence-similarity:{model}", config={"apiBaseUrl": loopback.url})
    pairs = [("red apple", "green apple"), ("red apple", "blue sky")]
    first = asyncio.run(new_store().similarity(spec, pairs))
    second = asyncio.run(new_store().similarity(spec, pairs))
    assert first.scores == second.scores and first.scores[0] > first.scores[1]
    assert len(loopback.requests) == 1


def test_usage_is_kept_per_provider_label(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    labelled = ProviderSpec(
        id="openai:embedding:m",
        label="cheap",
        config={**openai_spec(loopback).config, "costPer1kTokens": 1.0},
    )

    async def scenario() -> dict[str, Usage]:
        store = new_store()
        await store.prefetch(
            [EmbedRequest(labelled, ("one two", "three")), EmbedRequest(ProviderSpec(id="fake"), ("x",))]
        )
        return dict(store.usage_by_provider())

    usage = asyncio.run(scenario())
    assert set(usage) == {"cheap", "fake"}
    cheap = usage["cheap"]
    assert cheap.requests == 1 and cheap.texts == 2 and cheap.cost == pytest.approx(5 / 1000)
    assert cheap.latency_ms > 0


def test_no_cache_keys_are_made_without_a_cache(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each key is a canonical JSON and two sha256: --no-cache made 5,389 of them for nothing in sim-5000
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    spec = openai_spec(loopback)
    texts = list(dict.fromkeys(suite_texts(40)))
    made: list[str] = []
    keyer = Cache.keyer

    def counted(identity: Mapping[str, Any]) -> Callable[[str], str]:
        key_of = keyer(identity)

        def counted_key(text: str) -> str:
            made.append(text)
            return key_of(text)

        return counted_key

    monkeypatch.setattr(Cache, "keyer", staticmethod(counted))

    async def scenario(enabled: bool) -> np.ndarray:
        store = new_store(enabled)
        await store.prefetch([EmbedRequest(spec, tuple(texts))])
        return (await store.embed(spec, texts)).vectors

    np.testing.assert_allclose(asyncio.run(scenario(False)), expected(texts), atol=1e-6)
    assert made == []
    asyncio.run(scenario(True))  # the cache on: one key per text
    assert sorted(made) == sorted(texts)


def test_no_cache_embeds_again_and_refreshes_the_cache(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    spec = openai_spec(loopback)
    asyncio.run(EmbeddingStore(ProviderPool(), Cache.open(CacheMode.REFRESH)).embed(spec, ["alpha"]))
    assert len(loopback.requests) == 1
    asyncio.run(new_store().embed(spec, ["alpha"]))  # the refreshed entry is read
    assert len(loopback.requests) == 1


def test_a_provider_whose_config_says_cache_false_is_never_cached(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embeddings", openai_embeddings)
    spec = openai_spec(loopback, cache=False)
    for _ in range(2):
        asyncio.run(new_store().embed(spec, ["alpha", "beta"]))
    assert len(loopback.requests) == 2
    assert Cache.open().info()["entries"].get("embedding", 0) == 0


class _CountedCache(Cache):
    """The real cache, counting its write transactions."""

    writes: list[int]

    def put_many(self, namespace: str, items: Mapping[str, bytes]) -> None:
        self.writes.append(len(items))
        super().put_many(namespace, items)


def test_a_fetch_writes_its_vectors_in_one_transaction_failed_batches_left_out(
    loopback: LoopbackServer,
) -> None:
    texts = list(dict.fromkeys(suite_texts(90)))  # 62 texts: 4 batches of at most 16
    failing = texts[0]  # the batches are sorted by length: this text's batch is refused

    def answer(request: Request) -> Reply:
        if failing in request.json["input"]:
            return Reply.json({"error": {"message": "bad input"}}, status=400)
        return openai_embeddings(request)

    loopback.route("POST", "/v1/embeddings", answer)
    spec = openai_spec(loopback)
    cache = _CountedCache.open(True)
    cache.writes = []

    key_of = Cache.keyer({})

    async def scenario() -> tuple[set[str], dict[str, bytes]]:
        nonlocal key_of
        store = EmbeddingStore(ProviderPool(), cache)
        await store.prefetch([EmbedRequest(spec, tuple(texts))])
        refused = {text for text in texts if (await _embed_error(store, spec, text)) is not None}
        key_of = Cache.keyer(store._slots[provider_key(spec)].identity)
        return refused, cache.get_many("embedding", [key_of(text) for text in texts])

    refused, stored = asyncio.run(scenario())
    assert len(loopback.requests) == 4 and 0 < len(refused) <= 16 and failing in refused
    assert cache.writes == [len(texts) - len(refused)]  # one transaction, after every batch ended
    assert len(stored) == len(texts) - len(refused)  # each fetched vector, none of the refused batch
    fetched = [text for text in texts if text not in refused]
    vectors = np.array([np.frombuffer(stored[key_of(text)], dtype="<f4") for text in fetched])
    np.testing.assert_allclose(vectors, expected(fetched), atol=1e-6)


async def _embed_error(store: EmbeddingStore, spec: ProviderSpec, text: str) -> ProviderError | None:
    try:
        await store.embed(spec, [text])
    except ProviderError as error:
        return error
    return None


def test_a_stopped_fetch_keeps_the_vectors_it_fetched(loopback: LoopbackServer) -> None:
    texts = list(dict.fromkeys(suite_texts(90)))  # 62 texts: 4 batches, all in flight at once
    stuck = texts[0]  # one of the shortest: in the first batch (sorted by length) of 16
    arriving = len(texts) - 16
    release = threading.Event()

    def answer(request: Request) -> Reply:
        if stuck in request.json["input"]:
            release.wait(timeout=20)  # answers only after the run was stopped
        return openai_embeddings(request)

    loopback.route("POST", "/v1/embeddings", answer)
    spec = openai_spec(loopback, maxRetries=0)
    cache = Cache.open(True)

    async def scenario() -> tuple[set[str], dict[str, bytes]]:
        store = EmbeddingStore(ProviderPool(), cache)
        fetching = asyncio.ensure_future(store.prefetch([EmbedRequest(spec, tuple(texts))]))
        slot_key = provider_key(spec)
        while slot_key not in store._slots or len(store._slots[slot_key].memory["embedding"]) < arriving:
            await asyncio.sleep(0.01)  # the three other batches arrive
        fetched = set(store._slots[slot_key].memory["embedding"])
        fetching.cancel()
        with pytest.raises(asyncio.CancelledError):
            await fetching
        key_of = Cache.keyer(store._slots[slot_key].identity)
        return fetched, cache.get_many("embedding", [key_of(text) for text in texts])

    try:
        fetched, stored = asyncio.run(scenario())
    finally:
        release.set()
    assert stuck not in fetched and len(fetched) == arriving
    assert len(stored) == len(fetched)  # what arrived before the stop is in the cache
