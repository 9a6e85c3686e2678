"""The one provider identity: pool/concurrency/usage key, keyed hashes of secrets, the cache's key file."""

from __future__ import annotations

import stat
from pathlib import Path

from evalh.model import ProviderSpec, Usage
from evalh.providers.identity import (
    HASH_KEY_FILE,
    Secret,
    UsageBook,
    cache_identity,
    load_hash_key,
    provider_key,
)
from evalh.providers.registry import build_provider

KEY = "sk-identity-test-123456"


def test_the_label_and_path_do_not_change_the_key_but_the_config_does() -> None:
    spec = ProviderSpec(id="fake", config={"dimensions": 8})
    assert provider_key(spec) == provider_key(
        ProviderSpec(id="fake", label="x", config={"dimensions": 8}, path="p")
    )
    assert provider_key(spec) != provider_key(ProviderSpec(id="fake", config={"dimensions": 9}))


def test_a_spec_keeps_its_key_and_never_gets_another_specs() -> None:
    # provider_key remembers the key per spec object: more specs than it keeps, made and dropped one
    # after the other (so an id may be reused), must each get the key of their own config
    for round_ in range(2):
        for number in range(600):
            spec = ProviderSpec(id="fake", config={"dimensions": number})
            twin = ProviderSpec(id="fake", config={"dimensions": number})
            assert provider_key(spec) == provider_key(twin), (round_, number)
            assert provider_key(spec) == provider_key(spec)
            if number:
                assert provider_key(spec) != provider_key(ProviderSpec(id="fake", config={"dimensions": 0}))


def test_secrets_enter_the_cache_identity_as_a_keyed_hash_only(tmp_path: Path) -> None:
    spec = ProviderSpec(id="openai:chat:m", config={"apiKey": KEY, "apiBaseUrl": "http://h/v1"})
    provider = build_provider(spec)
    first = cache_identity(provider, spec, b"a" * 32)
    assert KEY not in first and "hmac-sha256" in first
    assert first != cache_identity(provider, spec, b"b" * 32)  # the key matters: no offline guessing
    other = ProviderSpec(id="openai:chat:m", config={"apiKey": KEY + "x", "apiBaseUrl": "http://h/v1"})
    assert first != cache_identity(build_provider(other), other, b"a" * 32)  # two keys, two identities
    assert repr(Secret(KEY)) == str(Secret(KEY)) == "[REDACTED]"


def test_a_provider_without_its_own_identity_hides_secret_config_values() -> None:
    spec = ProviderSpec(id="echo", config={"token": KEY, "mode": "plain"})
    text = cache_identity(object(), spec, b"k" * 32)
    assert KEY not in text and '"mode": "plain"' in text


def test_the_hash_key_is_made_once_and_readable_by_its_owner_only(tmp_path: Path) -> None:
    key = load_hash_key(tmp_path / "cache")
    assert len(key) == 32 and load_hash_key(tmp_path / "cache") == key
    mode = stat.S_IMODE((tmp_path / "cache" / HASH_KEY_FILE).stat().st_mode)
    assert mode == 0o600
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert len(load_hash_key(blocked)) == 32  # unusable: a key for this process only


def test_usage_is_per_provider_and_named_by_label_or_id() -> None:
    book = UsageBook()
    a = ProviderSpec(id="openai:chat:m", config={"headers": {"X-Tenant": "a"}})
    b = ProviderSpec(id="openai:chat:m", config={"headers": {"X-Tenant": "b"}})
    labelled = ProviderSpec(id="openai:chat:m", label="judge", config={})
    for spec in (a, b, a, labelled):
        book.add(spec, Usage(requests=1))
    assert {name: usage.requests for name, usage in book.by_name().items()} == {
        "openai:chat:m": 2,
        "openai:chat:m #2": 1,
        "judge": 1,
    }
