"""azureopenai:chat against a loopback server speaking Azure's deployment paths."""

from __future__ import annotations

import pytest

from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.registry import build_provider
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET, complete_once

PATH = "/openai/deployments/my-gpt/chat/completions"


def test_deployment_path_api_key_header_and_output(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST",
        PATH,
        lambda r: Reply.json(
            {
                "choices": [{"message": {"content": "Hi there"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2},
            }
        ),
    )
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET, "temperature": 0, "apiVersion": "2025-01-01"}
    _, response = complete_once("azureopenai:chat:my-gpt", config)
    assert response.error is None
    assert response.output == "Hi there"
    assert response.usage.total_tokens == 5
    request = loopback.requests[0]
    assert request.path == PATH + "?api-version=2025-01-01"
    assert request.header("api-key") == SECRET
    assert request.json == {"messages": [{"role": "user", "content": "Hello"}], "temperature": 0}


def test_key_from_environment_and_redacted_error(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", SECRET)
    loopback.route(
        "POST", PATH, lambda r: Reply.json({"error": {"message": f"bad key {SECRET}"}}, status=403)
    )
    _, response = complete_once("azureopenai:chat:my-gpt", {"apiBaseUrl": loopback.url})
    assert response.error is not None and "HTTP 403" in response.error
    assert SECRET not in response.error and "bad key [REDACTED]" in response.error
    assert loopback.requests[0].header("api-key") == SECRET


def test_missing_host_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_API_HOST", "AZURE_OPENAI_API_HOST", "AZURE_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="apiHost"):
        build_provider(ProviderSpec(id="azureopenai:chat:my-gpt", path="providers[0]"))


def test_missing_key_sends_nothing(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    _, response = complete_once("azureopenai:chat:my-gpt", {"apiHost": loopback.url})
    assert response.error is not None and "AZURE_OPENAI_API_KEY" in response.error
    assert loopback.requests == []
