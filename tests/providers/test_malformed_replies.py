"""A reply of the wrong shape is a clear error naming the provider and what was wrong, never a traceback.

Every protocol runs against the loopback server; chat providers answer ``ProviderResponse(error=...)``,
embedding and similarity providers raise ProviderError.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalh.errors import ProviderError
from evalh.model import ProviderSpec
from evalh.providers.registry import build_provider
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET, complete_once


def raw(body: str) -> Reply:
    """A body as written: Python's JSON reader accepts NaN and Infinity, which JSON has not."""
    return Reply(body=body.encode(), headers={"Content-Type": "application/json"})


CHAT = {
    "openai": ("openai:chat:m", "/v1/chat/completions", "/v1"),
    "anthropic": ("anthropic:messages:m", "/v1/messages", ""),
    "ollama": ("ollama:chat:m", "/api/chat", ""),
    "cohere": ("cohere:m", "/v1/chat", "/v1"),
}


@pytest.mark.parametrize(
    ("protocol", "reply", "problem"),
    [
        ("openai", Reply.json({"choices": ["text"]}), "AttributeError"),
        ("openai", Reply.json({"choices": [{"message": "text"}]}), "AttributeError"),
        ("openai", Reply.json({"choices": [{"message": {"content": "x"}}], "usage": [1]}), "AttributeError"),
        ("openai", Reply.json({"choices": []}), "IndexError"),
        ("openai", raw(f"<html>bad gateway {SECRET}</html>"), "not JSON"),
        ("anthropic", Reply.json({"content": ["text"]}), "AttributeError"),
        ("anthropic", Reply.json({"content": "text"}), "AttributeError"),
        ("ollama", Reply.json({"message": "text"}), "AttributeError"),
        ("ollama", Reply.json([1]), "TypeError"),
        ("cohere", Reply.json({"text": None}), "ValueError: Cohere's text is null"),
    ],
)
def test_chat_reply_of_the_wrong_shape(
    loopback: LoopbackServer, protocol: str, reply: Reply, problem: str
) -> None:
    provider_id, path, base = CHAT[protocol]
    loopback.route("POST", path, lambda r: reply)
    config = {"apiBaseUrl": loopback.url + base, "apiKey": SECRET}
    _, response = complete_once(provider_id, config)
    assert response.error is not None
    assert response.error.startswith(f"{provider_id}: unexpected reply ({problem}")
    assert SECRET not in response.error
    assert response.output is None


NOT_FINITE = "NaN or infinite values"
EMBEDDING = {
    "openai": ("openai:embedding:m", "/v1/embeddings", "/v1"),
    "ollama": ("ollama:embeddings:m", "/api/embed", ""),
    "huggingface": ("huggingface:feature-extraction:m", "/models/m/pipeline/feature-extraction", ""),
}


@pytest.mark.parametrize(
    ("protocol", "reply", "message"),
    [
        ("openai", raw('{"data": [{"embedding": [1, NaN]}, {"embedding": [1, 2]}]}'), NOT_FINITE),
        ("openai", raw('{"data": [{"embedding": [Infinity, 1]}, {"embedding": [1, 2]}]}'), NOT_FINITE),
        ("openai", Reply.json({"data": [{"embedding": []}, {"embedding": []}]}), "returned empty vectors"),
        ("openai", Reply.json({"data": [{"embedding": [1.0]}]}), "returned 1 vectors for 2 texts"),
        ("openai", Reply.json({"data": "vectors"}), r"unexpected reply \(AttributeError"),
        ("openai", Reply.json({"data": [{"embedding": "not base64!"}] * 2}), "neither numbers nor base64"),
        ("openai", Reply.json({"data": [{"embedding": "AAAAAAA="}] * 2}), "5 bytes, not whole float32"),
        ("openai", Reply.json({"data": [{"embedding": "AADAfwAAAAA="}] * 2}), NOT_FINITE),
        (
            "openai",
            Reply.json({"data": [{"embedding": "AACAPw=="}, {"embedding": "AACAPwAAAEA="}]}),
            r"vectors of \[1, 2\] dimensions",
        ),
        ("openai", Reply.json({"data": [{"embedding": "AACAPw=="}, {"embedding": [1.0, 2.0]}]}), r"\[1, 2\]"),
        ("openai", Reply.json({"vectors": []}), r"unexpected reply \(KeyError: 'data'\)"),
        ("openai", raw("<html>bad gateway</html>"), r"unexpected reply \(not JSON\): <html>"),
        ("ollama", raw('{"embeddings": [[1, NaN], [1, 2]]}'), NOT_FINITE),
        ("ollama", Reply.json({"embeddings": [[1, None], [1, 2]]}), "missing, NaN or infinite"),
        ("ollama", Reply.json({"embeddings": [[1, "x"], [1, 2]]}), "not rows of numbers"),
        ("ollama", Reply.json({"embeddings": 5}), r"unexpected reply \(TypeError"),
        ("huggingface", raw("[[NaN, 1], [1, 2]]"), NOT_FINITE),
        ("huggingface", Reply.json([[1, 2], [1, 2, 3]]), r"vectors of \[2, 3\] dimensions"),
        ("huggingface", Reply.json([0.5, 0.25]), r"shape \(2,\), expected one vector per text"),
    ],
)
def test_embedding_reply_of_the_wrong_shape(
    loopback: LoopbackServer, protocol: str, reply: Reply, message: str
) -> None:
    provider_id, path, base = EMBEDDING[protocol]
    loopback.route("POST", path, lambda r: reply)
    config = {"apiBaseUrl": loopback.url + base, "apiKey": SECRET, "maxRetries": 0}
    embedder = build_provider(ProviderSpec(id=provider_id, config=config))
    with pytest.raises(ProviderError, match=message) as caught:
        asyncio.run(embedder.embed(["a", "b"]))
    assert str(caught.value).startswith(f"{provider_id}: ")
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("body", ["[NaN]", '["high"]', "[[0.5]]", "[Infinity]"])
def test_sentence_similarity_scores_must_be_finite_numbers(loopback: LoopbackServer, body: str) -> None:
    loopback.route("POST", "/models/m/pipeline/sentence-similarity", lambda r: raw(body))
    spec = ProviderSpec(id="huggingface:sentence-similarity:m", config={"apiBaseUrl": loopback.url})
    provider = build_provider(spec)
    with pytest.raises(ProviderError, match=r"^huggingface:sentence-similarity:m: scores are not finite"):
        asyncio.run(provider.similarity([("a", "b")]))


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ("[1.0, float('nan')]", "not a flat list of finite numbers"),
        ("['high', 'low']", "not a list of numbers"),
        ("[[1.0], [2.0]]", "not a flat list of finite numbers"),
        ("'1.0 2.0'", "must return a list of numbers"),
        ("[1.0, 2.0] if text == 'a' else [1.0]", "vectors of different lengths"),
    ],
)
def test_python_embedding_function_returning_bad_vectors(tmp_path: Path, returned: str, message: str) -> None:
    (tmp_path / "vectors.py").write_text(f"def embed(text):\n    return {returned}\n")
    spec = ProviderSpec(id="python:vectors.py:embed", base_dir=str(tmp_path))
    provider: Any = build_provider(spec)
    with pytest.raises(ProviderError, match=f"^vectors.py: embed .*{message}"):
        asyncio.run(provider.embed(["a", "b"]))
