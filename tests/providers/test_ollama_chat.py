"""ollama:chat against a loopback server speaking Ollama's native /api/chat."""

from __future__ import annotations

import pytest

from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import complete_once

PATH = "/api/chat"


def ollama_reply(content: str) -> Reply:
    return Reply.json(
        {
            "model": "llama3.2",
            "message": {"role": "assistant", "content": content},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 20,
            "eval_count": 4,
        }
    )


def test_body_options_and_output(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: ollama_reply('{"pass": true}'))
    config = {
        "apiBaseUrl": loopback.url,
        "temperature": 0,
        "seed": 42,
        "max_tokens": 100,
        "response_format": {"type": "json_object"},
    }
    provider, response = complete_once("ollama:chat:llama3.2:3b", config, [{"role": "user", "content": "Q"}])
    assert response.error is None
    assert response.output == '{"pass": true}'
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.total_tokens) == (
        20,
        4,
        24,
    )
    assert response.cost == 0.0
    assert response.metadata["finish_reason"] == "stop"
    assert loopback.requests[0].json == {
        "model": "llama3.2:3b",
        "messages": [{"role": "user", "content": "Q"}],
        "stream": False,
        "options": {"temperature": 0, "seed": 42, "num_predict": 100},
        "format": "json",
    }
    assert provider.cache_identity()["url"] == loopback.url + "/api/chat"


def test_json_schema_format(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: ollama_reply("{}"))
    schema = {"type": "object", "properties": {"pass": {"type": "boolean"}}}
    config = {
        "apiBaseUrl": loopback.url,
        "response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
    }
    complete_once("ollama:chat:m", config)
    assert loopback.requests[0].json["format"] == schema


def test_base_url_from_environment(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", loopback.url)
    loopback.route("POST", PATH, lambda r: ollama_reply("env"))
    _, response = complete_once("ollama:chat:m", {})
    assert response.output == "env"


def test_model_not_found_is_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: Reply.json({"error": "model 'm' not found"}, status=404))
    _, response = complete_once("ollama:chat:m", {"apiBaseUrl": loopback.url})
    assert response.error is not None
    assert "HTTP 404" in response.error and "model 'm' not found" in response.error


def test_500_then_success(loopback: LoopbackServer) -> None:
    loopback.script("POST", PATH, [Reply.json({"error": "loading"}, status=500), ollama_reply("ok")])
    _, response = complete_once("ollama:chat:m", {"apiBaseUrl": loopback.url})
    assert response.output == "ok"
    assert response.metadata["attempts"] == 2
