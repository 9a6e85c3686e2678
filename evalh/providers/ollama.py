"""Ollama's native API.

``ollama:chat:<model>`` POSTs ``{base}/api/chat`` with ``stream: false``; the base is
``config.apiBaseUrl`` or ``OLLAMA_BASE_URL`` (default ``http://localhost:11434``). Sampling settings go in
``options`` (``max_tokens`` becomes ``num_predict``); ``response_format`` of type ``json_object`` becomes
``format: json`` and a ``json_schema`` becomes ``format: <schema>``. ``OLLAMA_API_KEY`` (optional) is sent
as a bearer token, for Ollama behind an authenticating proxy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalh.model import ProviderSpec, Usage
from evalh.providers.chat import ChatProvider, ChatReply, Pricing
from evalh.providers.embedhttp import HttpEmbedder, cost_per_1k, vectors_from_rows
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.keys import config_or_env

__all__ = [
    "DEFAULT_OLLAMA_BASE_URL",
    "OllamaChat",
    "OllamaEmbedding",
    "make_chat",
    "make_embedding",
    "ollama_base_url",
    "ollama_headers",
]

DEFAULT_OLLAMA_BASE_URL = "http://localhost:11434"

# OpenAI names -> Ollama option names.
_OPTION_NAMES = {
    "temperature": "temperature",
    "max_tokens": "num_predict",
    "num_predict": "num_predict",
    "top_p": "top_p",
    "top_k": "top_k",
    "seed": "seed",
    "stop": "stop",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "num_ctx": "num_ctx",
    "repeat_penalty": "repeat_penalty",
}


def ollama_base_url(config: Mapping[str, Any]) -> str:
    return (config_or_env(config, "apiBaseUrl", "OLLAMA_BASE_URL") or DEFAULT_OLLAMA_BASE_URL).rstrip("/")


def ollama_api_key(config: Mapping[str, Any]) -> str | None:
    return config_or_env(config, "apiKey", "OLLAMA_API_KEY")


def ollama_headers(config: Mapping[str, Any], api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class OllamaChat(ChatProvider):
    """``/api/chat`` without streaming."""

    path = "api/chat"

    def sampling(self) -> dict[str, Any]:
        settings = super().sampling()
        for key in ("num_predict", "num_ctx", "repeat_penalty"):
            if self.config.get(key) is not None:
                settings[key] = self.config[key]
        return settings

    def extra_identity(self) -> Mapping[str, Any]:
        return {key: self.config[key] for key in ("format", "think") if self.config.get(key) is not None}

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        settings = self.sampling()
        options = {_OPTION_NAMES[k]: v for k, v in settings.items() if k in _OPTION_NAMES}
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": False}
        if options:
            body["options"] = options
        if tools.get("tools"):  # Ollama takes OpenAI-format tools (and has no tool_choice)
            body["tools"] = tools["tools"]
        response_format = settings.get("response_format")
        if isinstance(response_format, Mapping):
            if response_format.get("type") == "json_object":
                body["format"] = "json"
            elif response_format.get("type") == "json_schema":
                body["format"] = dict(response_format.get("json_schema") or {}).get("schema", {})
        if self.config.get("format") is not None:
            body["format"] = self.config["format"]
        if self.config.get("think") is not None:
            body["think"] = self.config["think"]
        return body

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        payload = reply.json
        if isinstance(payload, Mapping) and payload.get("error"):
            raise ValueError(str(payload["error"]))
        message = payload["message"]
        prompt_tokens = int(payload.get("prompt_eval_count") or 0)
        completion_tokens = int(payload.get("eval_count") or 0)
        return ChatReply(
            output=message_output(message),
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
            metadata={"finish_reason": payload.get("done_reason")},
        )


def message_output(message: Mapping[str, Any]) -> Any:
    """promptfoo's output of an ``/api/chat`` message: its tool calls in OpenAI's shape (arguments as
    a JSON string), with its text as ``{content, tool_calls}`` when it has some; else its text."""
    calls = [
        {"function": {"name": call["function"]["name"], "arguments": _arguments_json(call["function"])}}
        for call in message.get("tool_calls") or []
        if isinstance(call, Mapping)
        and isinstance(call.get("function"), Mapping)
        and isinstance(call["function"].get("name"), str)
    ]
    content = message.get("content") or ""
    if not calls:
        return content
    return {"content": content, "tool_calls": calls} if content.strip() else calls


def _arguments_json(function: Mapping[str, Any]) -> str:
    arguments = function.get("arguments")
    return (
        arguments
        if isinstance(arguments, str)
        else json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    )


def make_chat(spec: ProviderSpec) -> OllamaChat:
    config = spec.config
    model = str(config.get("model") or spec.id.split(":", 2)[2])
    api_key = ollama_api_key(config)
    http = HttpClient.for_spec(
        spec,
        base_url=ollama_base_url(config),
        headers=ollama_headers(config, api_key),
        secrets=(api_key,) if api_key else (),
    )
    return OllamaChat(spec, model=model, http=http, pricing=Pricing.resolve(config, {}, model))


# -- embeddings: ollama:embeddings:<model> (alias ollama:embedding:) --------------------------------


class OllamaEmbedding(HttpEmbedder):
    """Ollama's native ``/api/embed`` (a list of inputs per request; ``truncate``, ``keep_alive``)."""

    path = "api/embed"
    family = "ollama"

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        for key in ("truncate", "keep_alive", "options"):
            if self.config.get(key) is not None:
                body[key] = self.config[key]
        if self.dimensions:
            body["dimensions"] = self.dimensions
        return body

    def parse_reply(self, payload: Any, count: int) -> tuple[Any, int]:
        if isinstance(payload, Mapping) and payload.get("error"):
            raise ValueError(str(payload["error"]))
        vectors = vectors_from_rows(payload["embeddings"], count, self.id)
        return vectors, int(payload.get("prompt_eval_count") or 0)


def make_embedding(spec: ProviderSpec) -> OllamaEmbedding:
    config = spec.config
    model = str(config.get("model") or spec.id.split(":", 2)[2])
    api_key = ollama_api_key(config)
    http = HttpClient.for_spec(
        spec,
        base_url=ollama_base_url(config),
        headers=ollama_headers(config, api_key),
        secrets=(api_key,) if api_key else (),
    )
    return OllamaEmbedding(spec, model=model, http=http, price_per_1k=cost_per_1k(config, {}, model))
