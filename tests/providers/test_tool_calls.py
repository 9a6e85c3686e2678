"""Tool calls through each chat protocol against a loopback server: the tools sent (rendered with the
test's vars, in the protocol's shape), the output promptfoo gives for a tool-calling answer, the
normalised finish reason, and the cache key of a call with tools."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalh.model import ProviderSpec
from evalh.providers.base import CallContext
from evalh.providers.identity import cache_identity
from evalh.providers.registry import build_provider
from evalh.providers.tools import normalize_finish_reason, tool_call_lines
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET, complete_once

WEATHER = {
    "name": "get_weather",
    "description": "Weather in {{ city }}",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TOOLS = [{"type": "function", "function": WEATHER}]
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}
PARIS = CallContext(vars={"city": "Paris"})


def openai_reply(message: dict[str, Any], finish: str = "tool_calls") -> Reply:
    return Reply.json(
        {
            "choices": [{"message": {"role": "assistant", **message}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )


def openai_config(loopback: LoopbackServer, **extra: Any) -> dict[str, Any]:
    return {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET, "tools": TOOLS, **extra}


def test_openai_sends_the_rendered_tools_and_returns_the_calls(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", "/v1/chat/completions", lambda r: openai_reply({"content": None, "tool_calls": [CALL]})
    )
    config = openai_config(loopback, tool_choice="required")
    _, response = complete_once("openai:chat:gpt-4o-mini", config, "Weather?", PARIS)
    assert response.error is None
    assert response.output == [CALL]
    assert response.metadata["finishReason"] == "tool_calls"
    body = loopback.requests[0].json
    assert body["tools"][0]["function"]["description"] == "Weather in Paris"
    assert body["tool_choice"] == "required"


def test_openai_text_and_calls_give_the_whole_message(loopback: LoopbackServer) -> None:
    message = {"content": "Let me check.", "tool_calls": [CALL]}
    loopback.route("POST", "/v1/chat/completions", lambda r: openai_reply(message))
    _, response = complete_once("openai:chat:gpt-4o-mini", openai_config(loopback), "Weather?", PARIS)
    assert response.output == {"role": "assistant", **message}


def test_openai_legacy_functions_and_function_call(loopback: LoopbackServer) -> None:
    function_call = {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    reply = openai_reply({"content": None, "function_call": function_call}, finish="function_call")
    loopback.route("POST", "/v1/chat/completions", lambda r: reply)
    config = {"apiBaseUrl": loopback.url + "/v1", "functions": [WEATHER], "function_call": "auto"}
    _, response = complete_once("openai:chat:gpt-4o-mini", config, "Weather?", PARIS)
    assert response.output == function_call
    assert response.metadata["finishReason"] == "tool_calls"  # promptfoo: function_call -> tool_calls
    body = loopback.requests[0].json
    assert body["functions"][0]["description"] == "Weather in Paris" and body["function_call"] == "auto"


def test_a_tool_template_that_does_not_render_is_that_rows_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", lambda r: openai_reply({"content": "x"}))
    broken = [{"type": "function", "function": {**WEATHER, "description": "{{ city | nosuchfilter }}"}}]
    _, response = complete_once("openai:chat:gpt-4o-mini", openai_config(loopback, tools=broken), "Q", PARIS)
    assert response.error is not None and "could not render the tools" in response.error
    assert loopback.requests == []


def test_azure_sends_the_tools(loopback: LoopbackServer) -> None:
    path = "/openai/deployments/dep/chat/completions"
    loopback.route("POST", path, lambda r: openai_reply({"content": None, "tool_calls": [CALL]}))
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET, "tools": TOOLS}
    _, response = complete_once("azureopenai:chat:dep", config, "Weather?", PARIS)
    assert response.output == [CALL] and response.metadata["finishReason"] == "tool_calls"
    assert loopback.requests[0].json["tools"][0]["function"]["description"] == "Weather in Paris"


def test_anthropic_gets_its_own_tool_shape_and_returns_promptfoos_text(loopback: LoopbackServer) -> None:
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    reply = {
        "content": [{"type": "text", "text": "Let me check."}, tool_use],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 4, "output_tokens": 3},
    }
    loopback.route("POST", "/v1/messages", lambda r: Reply.json(reply))
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET, "tools": TOOLS, "tool_choice": "required"}
    _, response = complete_once("anthropic:messages:claude-sonnet-4-5", config, "Weather?", PARIS)
    body = loopback.requests[0].json
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather in Paris", "input_schema": WEATHER["parameters"]}
    ]
    assert body["tool_choice"] == {"type": "any"}
    compact = json.dumps(tool_use, separators=(",", ":"))
    assert response.output == f"Let me check.\n\n{compact}"
    assert response.metadata["finishReason"] == "tool_calls"
    assert response.metadata["finish_reason"] == "tool_use"  # the raw one stays


def test_anthropic_tool_choice_for_one_function(loopback: LoopbackServer) -> None:
    reply = {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": {}}
    loopback.route("POST", "/v1/messages", lambda r: Reply.json(reply))
    choice = {"type": "function", "function": {"name": "get_weather"}}
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET, "tools": TOOLS, "tool_choice": choice}
    _, response = complete_once("anthropic:messages:claude-sonnet-4-5", config, "Weather?", PARIS)
    assert loopback.requests[0].json["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert response.output == "ok" and response.metadata["finishReason"] == "stop"


def test_ollama_sends_tools_and_returns_openai_shaped_calls(loopback: LoopbackServer) -> None:
    calls = [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    reply = {
        "model": "llama3.2",
        "message": {"role": "assistant", "content": "", "tool_calls": calls},
        "done": True,
        "done_reason": "stop",
    }
    loopback.route("POST", "/api/chat", lambda r: Reply.json(reply))
    _, response = complete_once(
        "ollama:chat:llama3.2", {"apiBaseUrl": loopback.url, "tools": TOOLS}, "W?", PARIS
    )
    assert loopback.requests[0].json["tools"][0]["function"]["description"] == "Weather in Paris"
    assert response.output == [{"function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]
    assert response.metadata["finishReason"] == "stop"


def test_ollama_text_and_calls(loopback: LoopbackServer) -> None:
    calls = [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    reply = {"message": {"role": "assistant", "content": "Checking", "tool_calls": calls}, "done": True}
    loopback.route("POST", "/api/chat", lambda r: Reply.json(reply))
    _, response = complete_once(
        "ollama:chat:llama3.2", {"apiBaseUrl": loopback.url, "tools": TOOLS}, "W?", PARIS
    )
    assert response.output == {
        "content": "Checking",
        "tool_calls": [{"function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}],
    }
    assert "finishReason" not in response.metadata  # no done_reason: none to normalise


def test_the_cache_key_holds_the_tools_as_rendered() -> None:
    spec = ProviderSpec(
        id="openai:chat:gpt-4o-mini", config={"apiBaseUrl": "http://127.0.0.1:9/v1", "tools": TOOLS}
    )
    provider = build_provider(spec)
    key = b"k" * 32

    def identity(variables: dict[str, Any]) -> str:
        shape = provider.request_shape("Weather?", variables)  # type: ignore[union-attr]
        return cache_identity(provider, spec, key, shape)

    assert identity({"city": "Paris"}) != identity({"city": "Lyon"})
    assert identity({"city": "Paris"}) == identity({"city": "Paris"})
    assert "Weather in Paris" in identity({"city": "Paris"})
    plain = ProviderSpec(id="openai:chat:gpt-4o-mini", config={"apiBaseUrl": "http://127.0.0.1:9/v1"})
    without = build_provider(plain)
    assert without.request_shape("Weather?", {"city": "Paris"}) == {}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("function_call", "tool_calls"),
        ("STOP", "stop"),
        ("weird", "weird"),
        ("", None),
        (None, None),
    ],
)
def test_finish_reasons_normalise_as_promptfoo(raw: Any, normalised: str | None) -> None:
    assert normalize_finish_reason(raw) == normalised


@pytest.mark.parametrize(
    ("output", "lines"),
    [
        ([CALL], ['get_weather({"city": "Paris"})']),
        (
            {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL]},
            ["Let me check.", 'get_weather({"city": "Paris"})'],
        ),
        ({"name": "lookup", "arguments": "not json"}, ["lookup(not json)"]),
        (
            'Sure.\n\n{"type":"tool_use","id":"t","name":"search","input":{"q":"x"}}',
            ["Sure.", 'search({"q": "x"})'],
        ),
        (
            'Calling:\n{"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}\nDone.',
            ["Calling:", "f({})", "Done."],
        ),
        ('```\n[{"function": {"name": "f", "arguments": "{}"}}]\n```', None),  # a fenced example
        ("Paris", None),
        ([{"name": "Alice", "age": 3}], None),  # a list of records is not a list of calls
        ({"answer": 42}, None),
    ],
)
def test_tool_call_lines(output: Any, lines: list[str] | None) -> None:
    assert tool_call_lines(output) == lines
