"""evalh.providers.keys: each family's rule for when a provider lacks its API key, asked through the
registry as `evalh run` asks it before the first call."""

from __future__ import annotations

from typing import Any

import pytest

from evalh.model import ProviderSpec
from evalh.providers.registry import missing_key
from tests.loopback import LoopbackServer
from tests.providers.chat_helpers import complete_once

_ENVARS = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_API_HOST", "ANTHROPIC_API_KEY",
    "AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "HF_TOKEN", "HF_API_TOKEN",
    "HF_API_BASE_URL", "MY_KEY",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENVARS:
        monkeypatch.delenv(name, raising=False)


def _missing(provider_id: str, **config: Any) -> tuple[str, ...] | None:
    found = missing_key(ProviderSpec(id=provider_id, config=config))
    return None if found is None else found.envars


def test_each_family_names_its_variables() -> None:
    assert _missing("openai:gpt-4o-mini") == ("OPENAI_API_KEY",)
    assert _missing("openai:embedding:text-embedding-3-small", apiKeyEnvar="MY_KEY") == ("MY_KEY",)
    assert _missing("anthropic:messages:claude-x", apiBaseUrl="http://127.0.0.1:9") == ("ANTHROPIC_API_KEY",)
    assert _missing("azureopenai:chat:dep", apiHost="x.openai.azure.com") == (
        "AZURE_API_KEY",
        "AZURE_OPENAI_API_KEY",
    )
    assert _missing("hf:feature-extraction:some/model") == ("HF_TOKEN", "HF_API_TOKEN")


def test_what_needs_no_key_or_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    for provider_id in (
        "echo",
        "local",
        "fake",
        "exec:echo hi",
        "ollama:chat:llama3.2",
        "http://127.0.0.1/x",
    ):
        assert _missing(provider_id) is None
    assert _missing("openai:chat:m", apiBaseUrl="http://127.0.0.1:8000/v1") is None  # a local server
    assert _missing("hf:feature-extraction:m", apiEndpoint="http://127.0.0.1:8080/embed") is None
    assert _missing("azureopenai:chat:dep", azureAdToken="token") is None  # Entra ID instead of a key
    assert _missing("anthropic:messages:claude-x", apiKey="sk-in-config") is None
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    assert _missing("anthropic:messages:claude-x", apiKeyEnvar="MY_KEY") is None


def test_an_unset_api_key_envar_is_missing_for_any_server(loopback: LoopbackServer) -> None:
    # apiKeyEnvar says the server wants a key: an unset variable is not sent as no key at all
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKeyEnvar": "MY_KEY"}
    assert _missing("openai:chat:m", **config) == ("MY_KEY",)
    _, response = complete_once("openai:chat:m", config)
    assert response.error is not None and "no API key: set MY_KEY (or config.apiKey)" in response.error
    assert loopback.requests == []
