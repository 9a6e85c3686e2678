"""openai:responses:<model> against a loopback server speaking OpenAI's Responses API."""

from __future__ import annotations

from typing import Any

import pytest

from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET, complete_once

PATH = "/v1/responses"


def responses_reply(*items: dict[str, Any], status: str = "completed", **extra: Any) -> Reply:
    usage = {"input_tokens": 12, "output_tokens": 4, "total_tokens": 16}
    return Reply.json({"id": "resp_1", "status": status, "output": list(items), "usage": usage, **extra})


def message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}


@pytest.fixture(autouse=True)
def _no_openai_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_API_HOST"):
        monkeypatch.delenv(name, raising=False)


def test_text_reply_usage_and_the_request_promptfoo_sends(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: responses_reply(REASONING, message("Paris")))
    config = {
        "apiBaseUrl": loopback.url + "/v1",
        "apiKey": SECRET,
        "temperature": 0,
        "max_output_tokens": 64,
        "instructions": "Be brief.",
        "reasoning_effort": "low",
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "city", "schema": {"type": "object"}},
        },
    }
    _, response = complete_once("openai:responses:gpt-5-mini", config, "Capital of France?")
    assert response.error is None and response.output == "Paris"  # reasoning items are left out
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 4)
    assert response.metadata["finishReason"] == "stop"
    request = loopback.requests[0]
    assert request.header("Authorization") == f"Bearer {SECRET}"
    assert request.json == {
        "model": "gpt-5-mini",
        "input": "Capital of France?",
        "temperature": 0,
        "reasoning": {"effort": "low"},
        "text": {
            "format": {"type": "json_schema", "name": "city", "schema": {"type": "object"}, "strict": True}
        },
        "max_output_tokens": 64,
        "instructions": "Be brief.",
    }


def test_chat_messages_and_chat_shaped_tools(loopback: LoopbackServer) -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'}
    loopback.route("POST", PATH, lambda r: responses_reply(call))
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    config = {
        "apiBaseUrl": loopback.url + "/v1",
        "apiKey": SECRET,
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    }
    messages = [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Weather in Paris?"}]
    _, response = complete_once("openai:responses:gpt-4.1", config, messages)
    assert response.output == (
        '{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}'
    )
    assert response.metadata["finishReason"] == "tool_calls"
    body = loopback.requests[0].json
    assert body["input"] == messages
    assert body["tools"] == [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert body["text"] == {"format": {"type": "text"}}


def test_a_refusal_and_a_cut_off_answer(loopback: LoopbackServer) -> None:
    refused = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't."}],
    }
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET}
    loopback.route("POST", PATH, lambda r: responses_reply(refused))
    _, response = complete_once("openai:responses:gpt-4.1", config)
    assert response.output == "I can't." and response.metadata["is_refusal"] is True
    loopback.reset()
    cut = responses_reply(
        message("Par"), status="incomplete", incomplete_details={"reason": "max_output_tokens"}
    )
    loopback.route("POST", PATH, lambda r: cut)
    _, partial = complete_once("openai:responses:gpt-4.1", config)
    assert partial.output == "Par" and partial.metadata["finishReason"] == "length"


def test_errors_retries_and_the_key_rule(loopback: LoopbackServer) -> None:
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET}
    throttled = Reply.json({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "0"})
    loopback.script("POST", PATH, [throttled, responses_reply(message("ok"))])
    _, response = complete_once("openai:responses:gpt-4.1", config)
    assert response.output == "ok" and response.metadata["attempts"] == 2
    loopback.reset()
    loopback.route(
        "POST", PATH, lambda r: Reply.json({"error": {"message": f"bad key {SECRET}"}}, status=401)
    )
    _, refused = complete_once("openai:responses:gpt-4.1", config)
    assert refused.error is not None and "HTTP 401" in refused.error and SECRET not in refused.error
    loopback.reset()
    loopback.route("POST", PATH, lambda r: Reply.json({"id": "r", "output": []}))
    _, empty = complete_once("openai:responses:gpt-4.1", config)
    assert empty.error is not None and "no output items" in empty.error
    _, keyless = complete_once("openai:responses:gpt-4.1", {})  # api.openai.com needs OPENAI_API_KEY
    assert keyless.error is not None and "OPENAI_API_KEY" in keyless.error
