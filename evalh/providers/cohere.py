"""Cohere: ``cohere:<model>`` (alias ``cohere:chat:<model>``) and ``cohere:embedding:<model>``.

Chat POSTs Cohere's v1 ``/chat`` as promptfoo 0.123 does: ``{message, model, ...}`` with promptfoo's
defaults (``temperature`` 0.3, ``p`` 0.75, ``k`` 0, ``prompt_truncation`` OFF) under the config's Cohere
settings; the reply's ``text`` is the output (``showSearchQueries`` / ``showDocuments`` append those),
``token_count`` (or ``meta.billed_units``) the usage. A chat prompt (a JSON list of messages) becomes
``preamble`` (its system messages), ``chat_history`` and the last user ``message``; a prompt that is a
JSON object is merged into the body, as promptfoo does. Embeddings POST ``/embed`` with
``input_type: classification`` and ``truncate`` (``NONE`` unless the config says), a batch of texts per
request.

Base URL: ``config.apiBaseUrl``, else promptfoo's (``https://api.cohere.ai/v1`` for chat,
``https://api.cohere.com/v1`` for embeddings); key: ``config.apiKey``, ``apiKeyEnvar`` or
``COHERE_API_KEY`` (evalh.providers.keys). Only Cohere's own settings are sent: promptfoo sends the
whole config, API key included, in the body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.common.environment import getenv
from evalh.model import ProviderSpec, Usage
from evalh.providers.chat import ChatProvider, ChatReply
from evalh.providers.embedhttp import HttpEmbedder, cost_per_1k, row_of, vectors_from_rows
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.identity import caches_answers
from evalh.providers.keys import cohere_api_key, missing_cohere_key

__all__ = ["CohereChat", "CohereEmbedding", "make_chat", "make_embedding"]

DEFAULT_COHERE_CHAT_URL = "https://api.cohere.ai/v1"
DEFAULT_COHERE_EMBED_URL = "https://api.cohere.com/v1"

# promptfoo's defaults, sent unless the config sets them
CHAT_DEFAULTS: Mapping[str, Any] = {
    "connectors": [],
    "prompt_truncation": "OFF",
    "search_queries_only": False,
    "documents": [],
    "temperature": 0.3,
    "k": 0,
    "p": 0.75,
    "frequency_penalty": 0,
    "presence_penalty": 0,
}
# Cohere's v1 /chat settings a config may set (sent as written; the rest of the config is evalh's)
CHAT_SETTINGS = (
    *CHAT_DEFAULTS,
    "preamble",
    "chat_history",
    "conversation_id",
    "citation_quality",
    "max_tokens",
    "max_input_tokens",
    "seed",
    "stop_sequences",
    "tools",
    "tool_results",
    "force_single_step",
    "response_format",
    "safety_mode",
)
_ROLES = {"user": "USER", "assistant": "CHATBOT", "system": "SYSTEM", "tool": "TOOL"}


def cohere_headers(api_key: str | None) -> dict[str, str]:
    headers = {"X-Client-Name": getenv("COHERE_CLIENT_NAME") or "evalh"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


class CohereChat(ChatProvider):
    """Cohere's v1 ``/chat``."""

    path = "chat"

    def settings(self) -> dict[str, Any]:
        """promptfoo's defaults under the config's Cohere settings."""
        chosen = {key: self.config[key] for key in CHAT_SETTINGS if self.config.get(key) is not None}
        return {**CHAT_DEFAULTS, **chosen}

    @property
    def cacheable(self) -> bool:
        # promptfoo's default temperature (0.3) samples: cached only with cache: true, as any sampler
        return caches_answers({**self.config, "temperature": self.settings()["temperature"]}, by_default=True)

    def extra_identity(self) -> Mapping[str, Any]:
        return {"cohere": self.settings()}

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {**self.settings(), **_conversation(messages)}
        body["model"] = self.model
        return body

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        data = reply.json
        if data.get("message") and "text" not in data:  # promptfoo: a reply with a message is an error
            raise ValueError(f"Cohere answered: {data['message']}")
        output = data["text"]
        if not isinstance(output, str):  # not str(): a null text is not the answer "None"
            raise ValueError(f"Cohere's text is {json.dumps(output)[:100]}, not a string")
        if self.config.get("showSearchQueries") and data.get("search_queries"):
            output += "\n\nSearch Queries:\n" + "\n".join(str(q.get("text")) for q in data["search_queries"])
        if self.config.get("showDocuments") and data.get("documents"):
            output += "\n\nDocuments:\n" + "\n".join(json.dumps(doc) for doc in data["documents"])
        return ChatReply(
            output=output, usage=_usage(data), metadata={"finish_reason": data.get("finish_reason")}
        )


def _conversation(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Chat messages as Cohere v1 fields: the last user message, the earlier turns, the system text;
    one user message whose text is a JSON object is that object (promptfoo merges it into the body)."""
    if len(messages) == 1 and messages[0].get("role") == "user":
        text = messages[0].get("content")
        merged = _json_object(text) if isinstance(text, str) else None
        return merged if merged is not None else {"message": text}
    system = [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
    turns = [m for m in messages if m.get("role") != "system"]
    last = turns[-1] if turns and turns[-1].get("role") == "user" else None
    history = [
        {"role": _ROLES.get(str(m.get("role")), "USER"), "message": m.get("content", "")}
        for m in (turns[:-1] if last is not None else turns)
    ]
    fields: dict[str, Any] = {"message": last.get("content", "") if last is not None else ""}
    if history:
        fields["chat_history"] = history
    if system:
        fields["preamble"] = "\n".join(system)
    return fields


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _usage(data: Mapping[str, Any]) -> Usage:
    counts = data.get("token_count") or {}
    billed = (data.get("meta") or {}).get("billed_units") or {}
    prompt = int(counts.get("prompt_tokens") or billed.get("input_tokens") or 0)
    completion = int(counts.get("response_tokens") or billed.get("output_tokens") or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=int(counts.get("total_tokens") or prompt + completion),
    )


def make_chat(spec: ProviderSpec) -> CohereChat:
    config = spec.config
    model = str(config.get("model") or spec.id.removeprefix("cohere:").removeprefix("chat:"))
    api_key = cohere_api_key(config)
    base_url = str(config.get("apiBaseUrl") or DEFAULT_COHERE_CHAT_URL)
    http = HttpClient.for_spec(
        spec, base_url=base_url, headers=cohere_headers(api_key), secrets=(api_key,) if api_key else ()
    )
    return CohereChat(spec, model=model, http=http, missing_key=missing_cohere_key(spec))


class CohereEmbedding(HttpEmbedder):
    """Cohere's v1 ``/embed``."""

    path = "embed"
    family = "cohere"

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        truncate = str(self.config.get("truncate") or "NONE")
        return {"model": self.model, "texts": texts, "input_type": "classification", "truncate": truncate}

    def extra_identity(self) -> Mapping[str, Any]:
        return {"truncate": str(self.config.get("truncate") or "NONE")}

    def parse_reply(self, payload: Any, count: int) -> tuple[Any, int]:
        embeddings = payload["embeddings"]
        if isinstance(embeddings, Mapping):  # embedding_types asked for: {"float": [...]}
            embeddings = embeddings["float"]
        rows: Sequence[Any] = [row_of(row, self.id) for row in embeddings]
        billed = (payload.get("meta") or {}).get("billed_units") or {}
        return vectors_from_rows(rows, count, self.id), int(billed.get("input_tokens") or 0)


def make_embedding(spec: ProviderSpec) -> CohereEmbedding:
    config = spec.config
    model = str(config.get("model") or spec.id.split(":", 2)[2])
    api_key = cohere_api_key(config)
    base_url = str(config.get("apiBaseUrl") or DEFAULT_COHERE_EMBED_URL)
    http = HttpClient.for_spec(
        spec, base_url=base_url, headers=cohere_headers(api_key), secrets=(api_key,) if api_key else ()
    )
    return CohereEmbedding(
        spec,
        model=model,
        http=http,
        price_per_1k=cost_per_1k(config, {}, model),
        missing_key=missing_cohere_key(spec),
    )
