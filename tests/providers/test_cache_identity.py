"""Every provider's cache identity: no key in any form, and every setting that changes the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalh.model import ProviderSpec
from evalh.providers.identity import cache_identity
from evalh.providers.registry import build_provider

KEY = "sk-identity-5f4e3d2c1b0a"
HASH_KEY = b"k" * 32
CONFIG = {
    "apiKey": KEY,
    "azureAdToken": KEY,
    "apiHost": "resource.example",
    "apiBaseUrl": f"https://user:{KEY}@api.example/v1",
    "headers": {"Authorization": f"Bearer {KEY}", "X-Api-Key": KEY},
}
HTTP_IDS = [
    "openai:chat:m",
    "openai:embedding:m",
    "azureopenai:chat:d",
    "azureopenai:embedding:d",
    "anthropic:messages:m",
    "ollama:chat:m",
    "ollama:embeddings:m",
    "huggingface:feature-extraction:m",
    "huggingface:sentence-similarity:m",
]


def identity(provider_id: str, config: dict[str, Any], base_dir: str = "") -> str:
    spec = ProviderSpec(id=provider_id, config=config, base_dir=base_dir)
    return cache_identity(build_provider(spec), spec, HASH_KEY)


@pytest.mark.parametrize("provider_id", HTTP_IDS)
def test_no_key_in_the_identity_of_an_http_provider(
    provider_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "OLLAMA_API_KEY"):
        monkeypatch.setenv(name, KEY)
    text = identity(provider_id, CONFIG)
    assert KEY not in text and "user" not in text
    assert "api.example" in text  # the endpoint is part of it


def test_no_key_in_the_identity_of_the_http_provider_and_its_url_query_counts() -> None:
    config = {"headers": {"Authorization": f"Bearer {KEY}"}, "cache": True}
    with_key = identity(f"https://user:{KEY}@app.example/ask?key={KEY}", config)
    assert KEY not in with_key and "user" not in with_key
    first = identity("https://app.example/ask?model=a", config)
    assert first != identity("https://app.example/ask?model=b", config)


def test_no_key_in_the_identity_of_local_providers(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def call_api(prompt, options, context):\n    return prompt\n")
    for provider_id, base_dir in (("python:app.py", str(tmp_path)), ("local", ""), ("fake", "")):
        assert KEY not in identity(provider_id, {}, base_dir)


@pytest.mark.parametrize(
    ("provider_id", "base", "changed"),
    [
        ("openai:chat:m", {}, {"passthrough": {"logit_bias": {"50256": -100}}}),
        ("azureopenai:chat:d", {}, {"passthrough": {"n": 2}}),
        ("ollama:chat:m", {}, {"format": "json"}),
        ("ollama:chat:m", {}, {"think": True}),
    ],
)
def test_settings_sent_to_the_model_change_the_identity(
    provider_id: str, base: dict[str, Any], changed: dict[str, Any]
) -> None:
    plain = {"apiKey": KEY, "apiHost": "resource.example", **base}
    assert identity(provider_id, plain) != identity(provider_id, {**plain, **changed})
