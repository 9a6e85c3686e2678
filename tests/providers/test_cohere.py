"""cohere:<model> and cohere:embedding:<model> against a loopback server speaking Cohere's v1 API."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evalh.errors import ProviderError
from evalh.model import ProviderSpec
from evalh.providers.registry import build_provider, missing_key
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import FAST, SECRET, complete_once


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COHERE_API_KEY", "COHERE_CLIENT_NAME"):
        monkeypatch.delenv(name, raising=False)


def chat_reply(text: str, **extra: Any) -> Reply:
    return Reply.json(
        {
            "text": text,
            "generation_id": "g1",
            "finish_reason": "COMPLETE",
            "token_count": {"prompt_tokens": 7, "response_tokens": 3, "total_tokens": 10},
            **extra,
        }
    )


def test_chat_sends_promptfoos_body_and_reads_text_and_usage(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COHERE_API_KEY", SECRET)
    loopback.route("POST", "/v1/chat", lambda r: chat_reply("Bonjour"))
    config = {"apiBaseUrl": loopback.url + "/v1", "max_tokens": 50, "temperature": 0, "timeout": 30}
    _, response = complete_once("cohere:command-r-plus", config, "Say hello in French")
    assert response.error is None and response.output == "Bonjour"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (7, 3)
    assert response.metadata["finishReason"] == "complete"
    request = loopback.requests[0]
    assert request.header("Authorization") == f"Bearer {SECRET}"
    assert request.json == {
        "message": "Say hello in French",
        "model": "command-r-plus",
        "connectors": [],
        "prompt_truncation": "OFF",
        "search_queries_only": False,
        "documents": [],
        "temperature": 0,  # the config's, over promptfoo's default 0.3
        "k": 0,
        "p": 0.75,
        "frequency_penalty": 0,
        "presence_penalty": 0,
        "max_tokens": 50,
    }  # evalh's own settings (timeout, apiBaseUrl) and the key never go in the body


def test_a_chat_prompt_becomes_preamble_history_and_message(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat", lambda r: chat_reply("4"))
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+1?"},
        {"role": "assistant", "content": "3"},
        {"role": "user", "content": "2+2?"},
    ]
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET}
    _, response = complete_once("cohere:chat:command-r", config, messages)
    assert response.output == "4"
    body = loopback.requests[0].json
    assert body["model"] == "command-r"
    assert body["message"] == "2+2?" and body["preamble"] == "Be brief."
    assert body["chat_history"] == [{"role": "USER", "message": "2+1?"}, {"role": "CHATBOT", "message": "3"}]


def test_search_queries_and_documents_are_appended_when_asked(loopback: LoopbackServer) -> None:
    extra = {"search_queries": [{"text": "capital of France"}], "documents": [{"id": "d1"}]}
    loopback.route("POST", "/v1/chat", lambda r: chat_reply("Paris", **extra))
    config = {
        "apiBaseUrl": loopback.url + "/v1",
        "apiKey": SECRET,
        "showSearchQueries": True,
        "showDocuments": True,
    }
    _, response = complete_once("cohere:command-r", config)
    assert response.output == 'Paris\n\nSearch Queries:\ncapital of France\n\nDocuments:\n{"id": "d1"}'


def test_errors_rate_limits_and_redaction(loopback: LoopbackServer) -> None:
    loopback.script(
        "POST",
        "/v1/chat",
        [Reply.json({"message": "too many"}, status=429, headers={"Retry-After": "0"}), chat_reply("ok")],
    )
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET}
    _, response = complete_once("cohere:command-r", config)
    assert response.output == "ok" and response.metadata["attempts"] == 2
    loopback.reset()
    loopback.route("POST", "/v1/chat", lambda r: Reply.json({"message": f"invalid api token {SECRET}"}, 401))
    _, refused = complete_once("cohere:command-r", config)
    assert refused.error is not None and "HTTP 401" in refused.error and "invalid api token" in refused.error
    assert SECRET not in refused.error


def test_without_a_key_nothing_is_called(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat", lambda r: chat_reply("x"))
    assert missing_key(ProviderSpec(id="cohere:command-r")) is not None
    _, response = complete_once("cohere:command-r", {"apiBaseUrl": loopback.url + "/v1"})
    assert response.error is not None and "COHERE_API_KEY" in response.error
    assert loopback.requests == []


def test_promptfoos_default_temperature_samples_so_chat_is_not_cached_by_default() -> None:
    sampling = build_provider(ProviderSpec(id="cohere:command-r", config={"apiKey": "k"}))
    greedy = build_provider(ProviderSpec(id="cohere:command-r", config={"apiKey": "k", "temperature": 0}))
    assert sampling.cacheable is False and greedy.cacheable is True  # type: ignore[union-attr]


def _embed(provider_id: str, config: dict[str, Any], texts: list[str]) -> Any:
    provider = build_provider(ProviderSpec(id=provider_id, config={**FAST, **config}))

    async def go() -> Any:
        try:
            return await provider.embed(texts)  # type: ignore[union-attr]
        finally:
            await provider.aclose()  # type: ignore[union-attr]

    return asyncio.run(go())


def test_embeddings_post_a_batch_to_embed(loopback: LoopbackServer) -> None:
    payload = {"embeddings": [[1.0, 0.0], [0.0, 1.0]], "meta": {"billed_units": {"input_tokens": 4}}}
    loopback.route("POST", "/v1/embed", lambda r: Reply.json(payload))
    found = _embed(
        "cohere:embedding:embed-english-v3.0",
        {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET},
        ["a", "b"],
    )
    assert found.vectors.tolist() == [[1.0, 0.0], [0.0, 1.0]] and found.usage.prompt_tokens == 4
    assert loopback.requests[0].json == {
        "model": "embed-english-v3.0",
        "texts": ["a", "b"],
        "input_type": "classification",
        "truncate": "NONE",
    }


def test_typed_embeddings_and_a_short_reply(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/embed", lambda r: Reply.json({"embeddings": {"float": [[0.5, 0.5]]}}))
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET}
    assert _embed("cohere:embeddings:embed-v4.0", config, ["a"]).vectors.tolist() == [[0.5, 0.5]]
    with pytest.raises(ProviderError, match="returned 1 vectors for 2 texts"):
        _embed("cohere:embeddings:embed-v4.0", config, ["a", "b"])
