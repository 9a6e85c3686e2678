"""Anthropic's Messages API: ``anthropic:messages:<model>``.

POSTs ``{apiBaseUrl}/v1/messages`` (default ``https://api.anthropic.com``, or ``ANTHROPIC_BASE_URL``) with
``x-api-key`` from ``config.apiKey`` / ``ANTHROPIC_API_KEY`` and ``anthropic-version``. System messages
move to the top-level ``system`` field; ``max_tokens`` is required by the API (default 1024). ``seed``
and ``response_format`` have no Anthropic equivalent and are not sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalh.model import ProviderSpec, Usage
from evalh.providers.chat import ChatProvider, ChatReply, Pricing
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.keys import anthropic_api_key, config_or_env, missing_anthropic_key
from evalh.providers.tools import anthropic_tool_choice, anthropic_tools

__all__ = ["DEFAULT_ANTHROPIC_BASE_URL", "AnthropicMessages", "make_messages", "split_system"]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024

# Dollars per million (input, output) tokens, matched by model-name prefix.
ANTHROPIC_PRICES: Mapping[str, tuple[float, float]] = {
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
}

_SENT_KEYS = ("temperature", "top_p", "top_k", "stop_sequences", "thinking")


def split_system(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """System messages joined into one ``system`` text; the rest kept in order."""
    system = [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    return ("\n\n".join(system) if system else None), rest


class AnthropicMessages(ChatProvider):
    path = "v1/messages"

    def sampling(self) -> dict[str, Any]:
        settings = {key: self.config[key] for key in _SENT_KEYS if self.config.get(key) is not None}
        if self.config.get("stop") is not None and "stop_sequences" not in settings:
            stop = self.config["stop"]
            settings["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        settings["max_tokens"] = int(self.config.get("max_tokens") or DEFAULT_MAX_TOKENS)
        return settings

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        system, rest = split_system(messages)
        body: dict[str, Any] = {"model": self.model, "messages": rest, **self.sampling()}
        # OpenAI-format tools (and the legacy functions) become Anthropic's, as promptfoo converts them
        offered = tools.get("tools") or _functions_as_tools(tools.get("functions"))
        if offered:
            body["tools"] = anthropic_tools(offered)
        choice = tools.get("tool_choice", tools.get("function_call"))
        if choice is not None:
            body["tool_choice"] = anthropic_tool_choice(choice)
        if system is not None:
            body["system"] = system
        return body

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        payload = reply.json
        usage = payload.get("usage") or {}
        return ChatReply(
            output=message_output(payload["content"]),
            usage=Usage(
                prompt_tokens=int(usage.get("input_tokens") or 0),
                completion_tokens=int(usage.get("output_tokens") or 0),
            ),
            metadata={"finish_reason": payload.get("stop_reason")},
        )


def message_output(blocks: list[Any]) -> Any:
    """promptfoo's output of a Messages reply: with a ``tool_use`` block, each block as text (a text
    block's text, any other block as compact JSON) joined by blank lines; else the text."""
    if any(block.get("type") == "tool_use" for block in blocks):
        return "\n\n".join(
            str(block.get("text", ""))
            if block.get("type") == "text"
            else json.dumps(block, ensure_ascii=False, separators=(",", ":"))
            for block in blocks
            if block.get("type") not in ("thinking", "redacted_thinking")
        )
    return "".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")


def _functions_as_tools(functions: Any) -> Any:
    if not isinstance(functions, list):
        return functions
    return [{"type": "function", "function": function} for function in functions]


def make_messages(spec: ProviderSpec) -> AnthropicMessages:
    config = spec.config
    # anthropic:messages:<model>, or promptfoo's shorthand anthropic:<model>
    model = str(config.get("model") or spec.id.removeprefix("anthropic:").removeprefix("messages:"))
    api_key = anthropic_api_key(config)
    base_url = config_or_env(config, "apiBaseUrl", "ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_BASE_URL
    headers = {"anthropic-version": str(config.get("anthropicVersion") or ANTHROPIC_VERSION)}
    if api_key:
        headers["x-api-key"] = api_key
    http = HttpClient.for_spec(
        spec,
        base_url=base_url,
        headers=headers,
        secrets=(api_key,) if api_key else (),
    )
    pricing = Pricing.resolve(
        config, ANTHROPIC_PRICES if base_url == DEFAULT_ANTHROPIC_BASE_URL else {}, model
    )
    return AnthropicMessages(
        spec, model=model, http=http, pricing=pricing, missing_key=missing_anthropic_key(spec)
    )
