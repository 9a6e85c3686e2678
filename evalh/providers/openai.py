"""OpenAI and every OpenAI-compatible server (vLLM, Ollama's /v1, LM Studio, llama.cpp server, LiteLLM),
and the OpenAI-compatible families promptfoo names (``groq:``, ``mistral:``, ...: providers/families.py).

``openai:chat:<model>`` / ``openai:<model>`` POST ``{apiBaseUrl}/chat/completions``. The base URL comes
from ``config.apiBaseUrl`` (or ``apiHost``), ``OPENAI_BASE_URL`` / ``OPENAI_API_BASE_URL`` /
``OPENAI_API_HOST``, else ``https://api.openai.com/v1``; the key from ``config.apiKey``,
``config.apiKeyEnvar`` or ``OPENAI_API_KEY`` (evalh.providers.keys: optional for servers other than
api.openai.com, unless ``apiKeyEnvar`` names the variable that holds it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from evalh.errors import ConfigError
from evalh.model import ProviderSpec, Usage
from evalh.providers.chat import ChatProvider, ChatReply, Pricing
from evalh.providers.embedhttp import HttpEmbedder, cost_per_1k, row_of, vectors_from_rows
from evalh.providers.families import Family, family_model, family_of
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.keys import (
    DEFAULT_OPENAI_BASE_URL,
    MissingKey,
    config_or_env,
    family_api_key,
    family_base_url,
    missing_family_key,
    missing_openai_key,
    openai_api_key,
    openai_base_url,
)

__all__ = [
    "OpenAIChat",
    "OpenAIEmbedding",
    "build_openai_chat",
    "make_chat",
    "make_embedding",
    "make_family_chat",
    "make_family_embedding",
    "openai_headers",
]

# Dollars per million (input, output) tokens; `config.inputCost` / `outputCost` override.
OPENAI_PRICES: Mapping[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}


def openai_headers(config: Mapping[str, Any], api_key: str | None) -> dict[str, str]:
    """Authorization and organization (``config.headers`` are added by the client)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    organization = config_or_env(config, "organization", "OPENAI_ORGANIZATION")
    if organization:
        headers["OpenAI-Organization"] = organization
    return headers


class OpenAIChat(ChatProvider):
    """``/chat/completions`` of OpenAI or any compatible server."""

    path = "chat/completions"

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.sampling(), **tools}
        body.update(dict(self.config.get("passthrough") or {}))
        return body

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        return parse_openai_chat(reply.json)


def parse_openai_chat(payload: Any) -> ChatReply:
    """The first choice's output (see :func:`message_output`), usage and finish reason."""
    choice = payload["choices"][0]
    message = choice.get("message") or {}
    metadata: dict[str, Any] = {"finish_reason": choice.get("finish_reason")}
    if message.get("refusal"):
        metadata["is_refusal"] = True
    output = message_output(message)
    usage = payload.get("usage") or {}
    return ChatReply(
        output=output,
        usage=Usage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            total_tokens=int(usage.get("total_tokens") or 0),
        ),
        metadata=metadata,
    )


def message_output(message: Mapping[str, Any]) -> Any:
    """What promptfoo's chat provider returns for a message: its refusal; the whole message when it
    has both text and tool (or function) calls; the calls alone (``tool_calls`` list or the legacy
    ``function_call`` object) when it has no text; else its text."""
    if message.get("refusal"):
        return message["refusal"]
    content = message.get("content")
    calls = message.get("function_call") or message.get("tool_calls")
    if content and calls:
        return dict(message)
    if calls and content in (None, ""):
        return calls
    return "" if content is None else content


def chat_model_name(provider_id: str) -> str:
    """``openai:chat:gpt-4o`` and ``openai:gpt-4o`` -> ``gpt-4o``."""
    rest = provider_id.split(":", 1)[1] if ":" in provider_id else provider_id
    return rest[len("chat:") :] if rest.startswith("chat:") else rest


def make_chat(spec: ProviderSpec) -> OpenAIChat:
    config = spec.config
    return _chat(spec, openai_base_url(config), openai_api_key(config), missing_openai_key(spec))


def make_family_chat(spec: ProviderSpec) -> OpenAIChat:
    """``groq:<model>``, ``mistral:chat:<model>``, ...: a family of :mod:`evalh.providers.families`
    at its own base URL with its own key."""
    family = _family(spec)
    config = spec.config
    return _chat(
        spec, family_base_url(family, config), family_api_key(family, config), missing_family_key(spec)
    )


def _family(spec: ProviderSpec) -> Family:
    family = family_of(spec.id)
    if family is None:  # the registry routes only family ids here
        raise ConfigError(f"{spec.id!r} names no OpenAI-compatible family", where=spec.path or None)
    return family


def _chat(spec: ProviderSpec, base_url: str, api_key: str | None, missing: MissingKey | None) -> OpenAIChat:
    model = str(spec.config.get("model") or chat_model_name(spec.id))
    return build_openai_chat(OpenAIChat, spec, model, base_url, api_key, missing)


_Chat = TypeVar("_Chat", bound=ChatProvider)


def build_openai_chat(
    kind: type[_Chat],
    spec: ProviderSpec,
    model: str,
    base_url: str,
    api_key: str | None,
    missing: MissingKey | None,
) -> _Chat:
    """A provider of ``kind`` speaking an OpenAI API at ``base_url`` with ``api_key``: OpenAI's headers,
    and OpenAI's price table on api.openai.com only."""
    config = spec.config
    http = HttpClient.for_spec(
        spec,
        base_url=base_url,
        headers=openai_headers(config, api_key),
        secrets=(api_key,) if api_key else (),
    )
    return kind(
        spec,
        model=model,
        http=http,
        # The price table is OpenAI's; a self-hosted server is free unless the config sets costs.
        pricing=Pricing.resolve(config, OPENAI_PRICES if base_url == DEFAULT_OPENAI_BASE_URL else {}, model),
        missing_key=missing,
    )


# -- embeddings: openai:embedding:<model> (alias openai:embeddings:) ---------------------------------

DEFAULT_OPENAI_EMBEDDING_MODEL = "text-embedding-3-large"

# Dollars per 1,000 tokens on api.openai.com; `config.costPer1kTokens` overrides.
OPENAI_EMBEDDING_PRICES: Mapping[str, float] = {
    "text-embedding-3-small": 0.00002,
    "text-embedding-3-large": 0.00013,
    "text-embedding-ada-002": 0.0001,
}


def parse_openai_embeddings(payload: Any, count: int, where: str) -> tuple[Any, int]:
    """The vectors of an OpenAI-style ``/embeddings`` reply in input order, and its prompt tokens.

    Each item's embedding may be a list of floats or a base64 string: a server that ignores the
    request's ``encoding_format`` sends floats."""
    data = sorted(payload["data"], key=lambda item: int(item.get("index", 0)))
    vectors = vectors_from_rows([row_of(item["embedding"], where) for item in data], count, where)
    usage = payload.get("usage") or {}
    return vectors, int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0)


class OpenAIEmbedding(HttpEmbedder):
    """``/embeddings`` of OpenAI or any compatible server (vLLM, TEI, Ollama's /v1, LM Studio)."""

    path = "embeddings"
    family = "openai"

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        # base64 float32 is read with one numpy call, where JSON floats cost a parse each (7x more
        # CPU for 384 dimensions); OpenAI's own Python client asks for it too. A server that ignores
        # it sends floats, which parse_openai_embeddings reads as well.
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "base64"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        return body

    def parse_reply(self, payload: Any, count: int) -> tuple[Any, int]:
        return parse_openai_embeddings(payload, count, self.id)


def make_embedding(spec: ProviderSpec) -> OpenAIEmbedding:
    """``openai:embedding:<model>``: batches of ``config.batchSize`` (64) texts per request."""
    config = spec.config
    model = str(config.get("model") or spec.id.split(":", 2)[2] or DEFAULT_OPENAI_EMBEDDING_MODEL)
    return _embedding(spec, model, openai_base_url(config), openai_api_key(config), missing_openai_key(spec))


def make_family_embedding(spec: ProviderSpec) -> OpenAIEmbedding:
    """``mistral:embedding:<model>``, ``togetherai:embeddings:<model>``, ...: the family's /embeddings."""
    family = _family(spec)
    config = spec.config
    model = str(
        config.get("model") or family_model(spec.id, embedding=True) or family.default_embedding_model
    )
    base_url, api_key = family_base_url(family, config), family_api_key(family, config)
    return _embedding(spec, model, base_url, api_key, missing_family_key(spec))


def _embedding(
    spec: ProviderSpec, model: str, base_url: str, api_key: str | None, missing: MissingKey | None
) -> OpenAIEmbedding:
    config = spec.config
    http = HttpClient.for_spec(
        spec,
        base_url=base_url,
        headers=openai_headers(config, api_key),
        secrets=(api_key,) if api_key else (),
    )
    table = OPENAI_EMBEDDING_PRICES if base_url == DEFAULT_OPENAI_BASE_URL else {}
    return OpenAIEmbedding(
        spec,
        model=model,
        http=http,
        price_per_1k=cost_per_1k(config, table, model),
        missing_key=missing,
    )
