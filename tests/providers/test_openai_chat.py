"""openai:chat against a loopback OpenAI-compatible server."""

from __future__ import annotations

import pytest

from evalh.model import ProviderSpec
from evalh.providers.base import CallContext, CompletionProvider
from evalh.providers.identity import Secret
from evalh.providers.registry import build_provider
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET, complete_once

PATH = "/v1/chat/completions"


def openai_reply(content: str | None, **message: object) -> Reply:
    return Reply.json(
        {
            "choices": [
                {"message": {"role": "assistant", "content": content, **message}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        }
    )


def test_request_body_and_output(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: openai_reply("Paris"))
    config = {
        "apiBaseUrl": loopback.url + "/v1",
        "apiKey": SECRET,
        "temperature": 0,
        "max_tokens": 64,
        "seed": 7,
        "response_format": {"type": "json_object"},
        "headers": {"X-Team": "evals"},
    }
    provider, response = complete_once("openai:chat:gpt-4o-mini", config, "Capital of France?")
    assert isinstance(provider, CompletionProvider)
    assert response.error is None
    assert response.output == "Paris"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.total_tokens) == (
        12,
        5,
        17,
    )
    assert response.metadata["attempts"] == 1
    body = loopback.requests[0].json
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Capital of France?"}],
        "temperature": 0,
        "max_tokens": 64,
        "seed": 7,
        "response_format": {"type": "json_object"},
    }
    request = loopback.requests[0]
    assert request.header("Authorization") == f"Bearer {SECRET}"
    assert request.header("X-Team") == "evals"
    # A self-hosted server has no price unless the config sets one.
    assert response.cost == 0.0


def test_chat_messages_pass_through_and_short_id(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: openai_reply("ok"))
    messages = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}]
    _, response = complete_once("openai:my-local-model", {"apiBaseUrl": loopback.url + "/v1"}, messages)
    assert response.output == "ok"
    body = loopback.requests[0].json
    assert body["model"] == "my-local-model"
    assert body["messages"] == messages
    assert loopback.requests[0].header("Authorization") is None


def test_base_url_from_environment(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    loopback.route("POST", PATH, lambda r: openai_reply("from env"))
    _, response = complete_once("openai:chat:gpt-4o-mini", {})
    assert response.output == "from env"
    assert loopback.requests[0].header("Authorization") == f"Bearer {SECRET}"


def test_cost_from_config(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: openai_reply("x"))
    config = {"apiBaseUrl": loopback.url + "/v1", "inputCost": 0.001, "outputCost": 0.002}
    _, response = complete_once("openai:chat:m", config)
    assert response.cost == pytest.approx(12 * 0.001 + 5 * 0.002)
    assert response.usage.cost == pytest.approx(response.cost or 0)


def test_refusal_and_tool_calls(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: openai_reply(None, refusal="I can't help with that."))
    _, response = complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1"})
    assert response.output == "I can't help with that."
    assert response.metadata["is_refusal"] is True
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    loopback.route("POST", PATH, lambda r: openai_reply(None, tool_calls=calls))
    _, response = complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1"})
    assert response.output == calls


def test_401_is_an_error_response_with_key_redacted(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", PATH, lambda r: Reply.json({"error": {"message": f"Incorrect API key {SECRET}"}}, status=401)
    )
    _, response = complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET})
    assert response.output is None
    assert response.error is not None
    assert "HTTP 401" in response.error and "Incorrect API key [REDACTED]" in response.error
    assert SECRET not in response.error
    assert response.metadata["attempts"] == 1
    assert len(loopback.requests) == 1


def test_429_then_success_counts_attempts(loopback: LoopbackServer) -> None:
    loopback.script(
        "POST",
        PATH,
        [Reply.json({"error": "rate"}, status=429, headers={"Retry-After": "0"}), openai_reply("ok")],
    )
    _, response = complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1"})
    assert response.output == "ok"
    assert response.metadata["attempts"] == 2


def test_malformed_reply_is_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: Reply.json({"unexpected": True}))
    _, response = complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET})
    assert response.error is not None and "unexpected reply" in response.error


def test_missing_key_for_openai_itself_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_API_HOST"):
        monkeypatch.delenv(name, raising=False)
    _, response = complete_once("openai:chat:gpt-4o-mini", {})
    assert response.error is not None and "OPENAI_API_KEY" in response.error


def test_context_timeout_applies_when_config_sets_none(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: Reply.json({}, delay_s=1.0))
    config = {"apiBaseUrl": loopback.url + "/v1", "maxRetries": 0}
    provider = build_provider(ProviderSpec(id="openai:chat:m", config={**config, "retryBaseDelayS": 0.01}))
    _, response = complete_once("openai:chat:m", config, context=CallContext(timeout_s=0.2))
    assert response.error is not None and "timed out after 0.2 s" in response.error
    assert provider.http.timeout_s == 60.0


def test_cacheable_and_identity(loopback: LoopbackServer) -> None:
    def build(**config: object) -> object:
        return build_provider(
            ProviderSpec(id="openai:chat:m", config={"apiBaseUrl": "http://u:p@h:1/v1?k=1", **config})
        )

    assert build().cacheable is True  # type: ignore[attr-defined]
    assert build(temperature=0).cacheable is True  # type: ignore[attr-defined]
    assert build(temperature=0.7).cacheable is False  # type: ignore[attr-defined]
    assert build(temperature=0.7, cache=True).cacheable is True  # type: ignore[attr-defined]
    assert build(cache=False).cacheable is False  # type: ignore[attr-defined]
    identity = build(temperature=0, seed=42, apiKey=SECRET).cache_identity()  # type: ignore[attr-defined]
    assert identity == {
        "id": "openai:chat:m",
        "model": "m",
        "url": "http://h:1/v1?k=1%2Fchat%2Fcompletions",
        "headers": {"authorization": Secret(f"Bearer {SECRET}")},
        "url_credentials": Secret("u:p"),
        "temperature": 0,
        "seed": 42,
    }
    assert SECRET not in repr(identity)
