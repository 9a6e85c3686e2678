"""``openai:responses:<model>``: OpenAI's Responses API (``POST {apiBaseUrl}/responses``), as promptfoo 0.123.

The request: ``input`` (the prompt, or a chat prompt's messages), ``text.format`` from ``response_format``
(``json_object``, ``json_schema``, else text), ``reasoning.effort`` from ``reasoning_effort`` (or the
``reasoning`` object), the config's ``tools`` (OpenAI's chat shape is flattened to the Responses shape)
and ``tool_choice``, ``temperature``, ``top_p``, ``max_output_tokens``, ``instructions``, ``truncation``,
``metadata``, ``store``, ``user``, ``service_tier``, then ``passthrough``. The reply's output items are
read as promptfoo reads them: an assistant message's ``output_text`` parts, a function call as its JSON,
joined by newlines; a refusal is the output and marks it a refusal; reasoning items are left out. Base URL
and key are OpenAI's (``evalh.providers.keys``: ``apiBaseUrl`` / ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalh.model import ProviderSpec, Usage
from evalh.providers.chat import ChatProvider, ChatReply
from evalh.providers.http import HttpReply
from evalh.providers.keys import missing_openai_key, openai_api_key, openai_base_url
from evalh.providers.openai import build_openai_chat

__all__ = ["OpenAIResponses", "make_responses", "responses_output"]

# Settings sent as they are written (after the ones built from chat-style settings)
_AS_WRITTEN = (
    "max_output_tokens",
    "instructions",
    "max_tool_calls",
    "include",
    "previous_response_id",
    "truncation",
    "metadata",
    "user",
    "service_tier",
)


class OpenAIResponses(ChatProvider):
    """``/responses`` of OpenAI (or a server that speaks it)."""

    path = "responses"

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        config = self.config
        single = len(messages) == 1 and messages[0].get("role") == "user"
        body: dict[str, Any] = {"model": self.model, "input": messages[0]["content"] if single else messages}
        body.update({key: config[key] for key in ("temperature", "top_p") if config.get(key) is not None})
        effort = (config.get("reasoning") or {}).get("effort") or config.get("reasoning_effort")
        if effort:
            body["reasoning"] = {**(config.get("reasoning") or {}), "effort": effort}
        if tools.get("tools") is not None:
            body["tools"] = [_responses_tool(tool) for tool in tools["tools"]]
        if tools.get("tool_choice") is not None:
            body["tool_choice"] = _responses_tool_choice(tools["tool_choice"])
        body["text"] = {"format": _text_format(config.get("response_format"))}
        body.update({key: config[key] for key in _AS_WRITTEN if config.get(key) is not None})
        if "store" in config:
            body["store"] = bool(config["store"])
        body.update(dict(config.get("passthrough") or {}))
        return body

    def extra_identity(self) -> Mapping[str, Any]:
        """What the Responses API adds to the answer's identity beyond the chat sampling settings."""
        keys = (*_AS_WRITTEN, "reasoning", "response_format", "store")
        return {"responses": {key: self.config[key] for key in keys if self.config.get(key) is not None}}

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        data = reply.json
        if data.get("error"):
            raise ValueError(f"OpenAI answered with an error: {json.dumps(data['error'])}")
        output, refusal, called = responses_output(data["output"])
        usage = data.get("usage") or {}
        metadata: dict[str, Any] = {"finish_reason": _finish_reason(data, called)}
        if refusal is not None:
            metadata["is_refusal"] = True
        return ChatReply(
            output=refusal if refusal is not None else output,
            usage=Usage(
                prompt_tokens=int(usage.get("input_tokens") or 0),
                completion_tokens=int(usage.get("output_tokens") or 0),
                total_tokens=int(usage.get("total_tokens") or 0),
            ),
            metadata=metadata,
        )


def responses_output(items: list[Any]) -> tuple[str, str | None, bool]:
    """(the text promptfoo makes of the output items, the refusal if any, whether a function was
    called); an empty or missing list is a malformed reply (ValueError), as in promptfoo."""
    if not isinstance(items, list) or not items:
        raise ValueError("the reply has no output items")
    parts: list[str] = []
    refusal: str | None = None
    called = False
    for item in items:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "function_call":
            called = True
            parts.append(json.dumps(item, separators=(",", ":"), ensure_ascii=False))
        elif item.get("type") == "message" and item.get("role") == "assistant":
            text = ""
            for content in item.get("content") or []:
                if isinstance(content, Mapping) and content.get("type") == "output_text":
                    text += str(content.get("text") or "")
                elif isinstance(content, Mapping) and content.get("type") == "refusal":
                    refusal = str(content.get("refusal") or "")
            if text:
                parts.append(text)
    return "\n".join(parts), refusal, called


def _finish_reason(data: Mapping[str, Any], called: bool) -> str | None:
    if data.get("status") == "incomplete":
        reason = (data.get("incomplete_details") or {}).get("reason")
        return "length" if reason == "max_output_tokens" else str(reason or "incomplete")
    if called:
        return "tool_calls"
    return "stop" if data.get("status") == "completed" else None


def _text_format(response_format: Any) -> dict[str, Any]:
    if not isinstance(response_format, Mapping):
        return {"type": "text"}
    if response_format.get("type") == "json_object":
        return {"type": "json_object"}
    if response_format.get("type") == "json_schema":
        nested = response_format.get("json_schema") or {}
        return {
            "type": "json_schema",
            "name": nested.get("name") or response_format.get("name") or "response_schema",
            "schema": response_format.get("schema") or nested.get("schema"),
            "strict": True,
        }
    return {"type": "text"}


def _responses_tool(tool: Any) -> Any:
    """A chat-shaped ``{type: function, function: {...}}`` tool as the Responses API's flat one."""
    if not isinstance(tool, Mapping) or tool.get("type") != "function" or "function" not in tool:
        return tool
    rest = {key: value for key, value in tool.items() if key != "function"}
    return {**rest, **dict(tool["function"])}


def _responses_tool_choice(choice: Any) -> Any:
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        if name:
            return {"type": "function", "name": name}
    return choice


def make_responses(spec: ProviderSpec) -> OpenAIResponses:
    config = spec.config
    model = str(config.get("model") or spec.id.removeprefix("openai:responses:"))
    base_url, api_key = openai_base_url(config), openai_api_key(config)
    return build_openai_chat(OpenAIResponses, spec, model, base_url, api_key, missing_openai_key(spec))
