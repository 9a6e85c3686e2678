"""The provider id table: matching, capabilities and unknown ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.base import CacheableCompletions, supports
from evalh.providers.registry import PROVIDERS, ProviderEntry, build_provider, capabilities_of, find_entry


@pytest.mark.parametrize(
    ("provider_id", "pattern"),
    [
        ("echo", "echo"),
        ("openai:gpt-4o-mini", "openai:"),
        ("openai:chat:gpt-4o-mini", "openai:chat:"),
        ("openai:embedding:text-embedding-3-small", "openai:embedding:"),
        ("openai:embeddings:m", "openai:embeddings:"),
        ("local", "local"),
        ("local:my-model", "local:"),
        ("http://localhost:8000/chat", "http://"),
        ("file://provider.py", "file://"),
        ("hf:sentence-similarity:m", "hf:sentence-similarity:"),
    ],
)
def test_the_most_specific_entry_wins(provider_id: str, pattern: str) -> None:
    entry = find_entry(provider_id)
    assert entry is not None and entry.pattern == pattern


@pytest.mark.parametrize(
    ("provider_id", "target"),
    [
        ("file://provider.py", "scripts:make_python"),
        ("file://provider.py:call", "scripts:make_python"),
        ("file://provider.js", "javascript:make_javascript"),
        ("file://lib/provider.CJS", "javascript:make_javascript"),
        ("file://provider.ts", "javascript:make_javascript"),
        ("file://provider.mjs:Named", "javascript:make_javascript"),
        ("./provider.js", "javascript:make_javascript"),
        ("../providers/provider.mts", "javascript:make_javascript"),
        ("provider.cts", "javascript:make_javascript"),
        ("openai:chat:model.js", "openai:make_chat"),  # a family's model name is not a file
        ("http://localhost/provider.js", "webhttp:make_http"),
    ],
)
def test_file_providers_are_routed_by_suffix_as_promptfoo_does(provider_id: str, target: str) -> None:
    entry = find_entry(provider_id)
    assert entry is not None and entry.target == f"evalh.providers.{target}"


@pytest.mark.parametrize("provider_id", ["provider.json", "./provider", "file://provider.js.bak"])
def test_a_path_without_a_javascript_suffix_is_no_javascript_provider(provider_id: str) -> None:
    entry = find_entry(provider_id)
    assert entry is None or "javascript" not in entry.target


@pytest.mark.parametrize(
    "provider_id", ["openai:embedding", "openai:embedding:", "ollama:chat:", "openai:", "nope"]
)
def test_ids_without_their_model_are_unknown(provider_id: str) -> None:
    assert find_entry(provider_id) is None
    assert capabilities_of(provider_id) == ()


def test_an_unknown_id_is_a_config_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"unknown provider id 'opnai:gpt-4o'.*Did you mean") as raised:
        build_provider(ProviderSpec(id="opnai:gpt-4o", path="providers[0]"))
    assert raised.value.exit_code == 2 and raised.value.where == "providers[0]"


def test_every_entry_names_real_capabilities_and_an_example_it_matches() -> None:
    for entry in PROVIDERS:
        assert set(entry.capabilities) <= {"text", "embedding", "similarity", "tokens"}
        assert entry.matches(entry.example) or entry.example == entry.pattern, entry


_CAPABILITIES = ("text", "embedding", "similarity", "tokens")


def _config_for(entry_id: str) -> dict[str, object]:
    if entry_id.startswith(("http", "https")):
        return {"url": "http://127.0.0.1:9/chat"}
    if entry_id.startswith(("azureopenai:", "azure:")):
        return {"apiHost": "example.openai.azure.com"}
    return {}


@pytest.mark.parametrize(
    "entry", [e for e in PROVIDERS if not e.example.startswith("local:")], ids=lambda e: e.example
)
def test_each_built_provider_has_exactly_the_protocols_its_entry_declares(
    entry: ProviderEntry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runner checks capabilities with the protocols of providers/base.py (never by probing
    # attributes), so what the registry says and what a built provider implements must agree.
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "AZURE_OPENAI_API_KEY"):
        monkeypatch.setenv(name, "k-test")
    (tmp_path / "provider.py").write_text("def call_api(prompt, options, context):\n    return prompt\n")
    (tmp_path / "provider.js").write_text("module.exports = class { callApi(p) { return p; } };\n")
    spec = ProviderSpec(id=entry.example, config=_config_for(entry.example), base_dir=str(tmp_path))
    provider = build_provider(spec)
    assert {c for c in _CAPABILITIES if supports(provider, c)} == set(entry.capabilities)
    if "text" in entry.capabilities and entry.example.startswith(("openai", "azure", "anthropic", "ollama")):
        assert isinstance(provider, CacheableCompletions)
