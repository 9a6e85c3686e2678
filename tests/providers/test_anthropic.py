"""anthropic:messages against a loopback server speaking the Messages API."""

from __future__ import annotations

import pytest

from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET, complete_once

PATH = "/v1/messages"


def anthropic_reply(text: str) -> Reply:
    return Reply.json(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 30, "output_tokens": 9},
        }
    )


def test_system_moves_to_top_level_and_seed_is_not_sent(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: anthropic_reply("Bonjour"))
    messages = [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Hello"}]
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET, "temperature": 0, "seed": 42}
    _, response = complete_once("anthropic:messages:claude-sonnet-4-5", config, messages)
    assert response.error is None
    assert response.output == "Bonjour"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.total_tokens) == (
        30,
        9,
        39,
    )
    assert response.metadata["finish_reason"] == "end_turn"
    request = loopback.requests[0]
    assert request.json == {
        "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "Hello"}],
        "system": "Answer in French.",
        "temperature": 0,
        "max_tokens": 1024,
    }
    assert request.header("x-api-key") == SECRET
    assert request.header("anthropic-version") == "2023-06-01"


def test_key_from_environment_and_price_table(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    loopback.route("POST", PATH, lambda r: anthropic_reply("x"))
    _, response = complete_once("anthropic:messages:claude-sonnet-4-5", {"apiBaseUrl": loopback.url})
    assert loopback.requests[0].header("x-api-key") == SECRET
    # The built-in price table applies to api.anthropic.com only; a proxy is priced by the config.
    assert response.cost == 0.0
    _, priced = complete_once(
        "anthropic:messages:m", {"apiBaseUrl": loopback.url, "inputCost": 3e-6, "outputCost": 15e-6}
    )
    assert priced.cost == pytest.approx(30 * 3e-6 + 9 * 15e-6)


def test_overloaded_529_is_retried(loopback: LoopbackServer) -> None:
    overloaded = Reply.json(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, 529
    )
    loopback.script("POST", PATH, [overloaded, anthropic_reply("ok")])
    _, response = complete_once("anthropic:messages:m", {"apiBaseUrl": loopback.url, "apiKey": SECRET})
    assert response.output == "ok"
    assert response.metadata["attempts"] == 2


def test_400_fails_at_once_with_redacted_message(loopback: LoopbackServer) -> None:
    bad = {"type": "error", "error": {"type": "invalid_request_error", "message": f"bad request {SECRET}"}}
    loopback.route("POST", PATH, lambda r: Reply.json(bad, status=400))
    _, response = complete_once("anthropic:messages:m", {"apiBaseUrl": loopback.url, "apiKey": SECRET})
    assert response.error is not None and "HTTP 400" in response.error
    assert "bad request [REDACTED]" in response.error
    assert SECRET not in response.error
    assert len(loopback.requests) == 1


def test_missing_key_sends_nothing(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _, response = complete_once("anthropic:messages:m", {"apiBaseUrl": loopback.url})
    assert response.error is not None and "ANTHROPIC_API_KEY" in response.error
    assert loopback.requests == []
