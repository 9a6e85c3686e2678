"""Azure OpenAI deployments.

``azureopenai:chat:<deployment>`` POSTs
``https://{apiHost}/openai/deployments/{deployment}/chat/completions?api-version={apiVersion}`` with the
``api-key`` header. ``config.apiHost`` or ``AZURE_API_HOST`` / ``AZURE_OPENAI_API_HOST`` names the
resource (``config.apiBaseUrl`` replaces ``https://{apiHost}`` entirely); the key is ``config.apiKey``,
``AZURE_API_KEY`` or ``AZURE_OPENAI_API_KEY``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.chat import ChatProvider, ChatReply, Pricing
from evalh.providers.embedhttp import HttpEmbedder, cost_per_1k
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.keys import MissingKey, azure_ad_token, azure_api_key, config_or_env, missing_azure_key
from evalh.providers.openai import parse_openai_chat, parse_openai_embeddings

__all__ = [
    "DEFAULT_AZURE_API_VERSION",
    "AzureChat",
    "AzureEmbedding",
    "azure_base_url",
    "azure_headers",
    "make_chat",
    "make_embedding",
]

DEFAULT_AZURE_API_VERSION = "2024-10-21"


def azure_base_url(spec: ProviderSpec) -> str:
    """``https://{apiHost}`` or ``config.apiBaseUrl``; a ConfigError when neither is set."""
    config = spec.config
    base = config_or_env(config, "apiBaseUrl", "AZURE_OPENAI_BASE_URL")
    if base:
        return base.rstrip("/")
    host = config_or_env(config, "apiHost", "AZURE_API_HOST", "AZURE_OPENAI_API_HOST")
    if host:
        return (host if "://" in host else f"https://{host}").rstrip("/")
    raise ConfigError(
        f"{spec.id} needs the Azure resource host",
        where=f"{spec.path}.config.apiHost" if spec.path else None,
        hint="Set config.apiHost (e.g. my-resource.openai.azure.com) or AZURE_OPENAI_API_HOST.",
    )


def azure_headers(config: Mapping[str, Any], api_key: str | None) -> dict[str, str]:
    """``api-key`` (or a bearer token from ``config.azureAdToken`` / ``AZURE_OPENAI_AD_TOKEN``)."""
    headers: dict[str, str] = {}
    token = azure_ad_token(config)
    if api_key:
        headers["api-key"] = api_key
    elif token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def azure_secrets(config: Mapping[str, Any], api_key: str | None) -> tuple[str, ...]:
    token = azure_ad_token(config)
    return tuple(s for s in (api_key, token) if s)


class AzureChat(ChatProvider):
    """A chat deployment: the OpenAI protocol with the deployment in the path."""

    def __init__(self, spec: ProviderSpec, *, deployment: str, api_version: str, **kwargs: Any) -> None:
        super().__init__(spec, model=deployment, **kwargs)
        self.path = f"openai/deployments/{deployment}/chat/completions?api-version={api_version}"
        self.api_version = api_version

    def extra_identity(self) -> Mapping[str, Any]:
        return {"api_version": self.api_version}

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": messages, **self.sampling(), **tools}
        body.update(dict(self.config.get("passthrough") or {}))
        return body

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        return parse_openai_chat(reply.json)


@dataclass(frozen=True)
class _AzureConnection:
    """What a chat and an embedding deployment share: the deployment, API version, client and key."""

    deployment: str
    api_version: str
    http: HttpClient
    missing_key: MissingKey | None


def _connect(spec: ProviderSpec) -> _AzureConnection:
    config = spec.config
    api_key = azure_api_key(config)
    secrets = azure_secrets(config, api_key)
    http = HttpClient.for_spec(
        spec, base_url=azure_base_url(spec), headers=azure_headers(config, api_key), secrets=secrets
    )
    return _AzureConnection(
        deployment=str(config.get("deployment") or spec.id.split(":", 2)[2]),
        api_version=str(config.get("apiVersion") or DEFAULT_AZURE_API_VERSION),
        http=http,
        missing_key=missing_azure_key(spec),
    )


def make_chat(spec: ProviderSpec) -> AzureChat:
    azure = _connect(spec)
    return AzureChat(
        spec,
        deployment=azure.deployment,
        api_version=azure.api_version,
        http=azure.http,
        pricing=Pricing.resolve(spec.config, {}, azure.deployment),
        missing_key=azure.missing_key,
    )


# -- embeddings: azureopenai:embedding:<deployment> (alias azureopenai:embeddings:) ------------------


class AzureEmbedding(HttpEmbedder):
    """An embedding deployment: OpenAI's ``/embeddings`` protocol with the deployment in the path."""

    family = "azureopenai"

    def __init__(self, spec: ProviderSpec, *, deployment: str, api_version: str, **kwargs: Any) -> None:
        super().__init__(spec, model=deployment, **kwargs)
        self.path = f"openai/deployments/{deployment}/embeddings?api-version={api_version}"
        self.api_version = api_version

    def extra_identity(self) -> Mapping[str, Any]:
        return {"api_version": self.api_version}

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"input": texts}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        return body

    def parse_reply(self, payload: Any, count: int) -> tuple[Any, int]:
        return parse_openai_embeddings(payload, count, self.id)


def make_embedding(spec: ProviderSpec) -> AzureEmbedding:
    azure = _connect(spec)
    return AzureEmbedding(
        spec,
        deployment=azure.deployment,
        api_version=azure.api_version,
        http=azure.http,
        price_per_1k=cost_per_1k(spec.config, {}, azure.deployment),
        missing_key=azure.missing_key,
    )
