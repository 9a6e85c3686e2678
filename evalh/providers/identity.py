"""The one provider identity of a run: which built provider a spec shares (pool, concurrency, usage)
and what the completion and embedding caches key on.

* :func:`provider_key` is the in-memory key of a spec: its id, config and base directory (the label and
  the config path only say how it is shown). Specs with one key share one built provider, one
  concurrency limit and one usage entry (:class:`UsageBook`).
* :func:`cache_identity` is the canonical JSON of what shapes a built provider's requests: its
  ``cache_identity()`` (id, model, the full URL with deployment and API version, every header,
  organization, sampling settings, body template...) or, for a provider without one, its id and config.
  Secrets in it (:class:`Secret`: API keys, secret-looking headers, URL passwords, secret query
  values, secret-named config and body fields) enter only as HMAC-SHA256 under a random key kept
  beside the cache (:func:`load_hash_key`), so a copied cache file does not let anyone test guesses of
  a key offline; two keys still give two identities.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets as random_source
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from evalh.model import ProviderSpec, Usage
from evalh.providers.base import CacheIdentified
from evalh.secrets import MARKER, is_secret_key

__all__ = [
    "Secret",
    "UsageBook",
    "cache_identity",
    "caches_answers",
    "hide_secrets",
    "load_hash_key",
    "provider_key",
    "request_identity",
]

HASH_KEY_FILE = "identity.key"


class Secret:
    """A secret inside an identity: shown as the marker, hashed with a key by :func:`cache_identity`."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return MARKER

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and hmac.compare_digest(self.value, other.value)

    def __hash__(self) -> int:
        return hash((Secret, self.value))


# provider_key per spec object: a run asks for the key of its few specs on every row (pool, gate,
# usage, embeddings), and canonical JSON + sha256 each time was 0.4 s of a 5,000-row run. Keyed by the
# object's id, holding the spec so the id cannot be reused; a spec is frozen and its config is not
# changed after load. Bounded: specs made per call (a prompt's config merged in) only pass through.
_KNOWN_KEYS: dict[int, tuple[ProviderSpec, str]] = {}
_KNOWN_KEYS_MAX = 256


def provider_key(spec: ProviderSpec) -> str:
    """The in-memory identity of a spec: pool, concurrency limit and usage are per key."""
    known = _KNOWN_KEYS.get(id(spec))
    if known is not None and known[0] is spec:
        return known[1]
    key = _spec_key(spec)
    if len(_KNOWN_KEYS) >= _KNOWN_KEYS_MAX:
        _KNOWN_KEYS.clear()
    _KNOWN_KEYS[id(spec)] = (spec, key)
    return key


def _spec_key(spec: ProviderSpec) -> str:
    canonical = json.dumps(
        {"id": spec.id, "config": spec.config, "base_dir": spec.base_dir}, sort_keys=True, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class UsageBook:
    """Usage per provider key, named by the spec's label or id when reported (``name #2`` when two
    different providers share a name)."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._usage: dict[str, Usage] = {}

    def add(self, spec: ProviderSpec, usage: Usage) -> None:
        key = provider_key(spec)
        self._names.setdefault(key, spec.display)
        earlier = self._usage.get(key)  # no Usage() built for every call only to add it
        self._usage[key] = usage if earlier is None else earlier + usage

    def by_name(self) -> dict[str, Usage]:
        named: dict[str, Usage] = {}
        for key, usage in self._usage.items():
            name, number = self._names[key], 1
            while (name if number == 1 else f"{name} #{number}") in named:
                number += 1
            named[name if number == 1 else f"{name} #{number}"] = usage
        return named


def hide_secrets(value: Any) -> Any:
    """A copy of a JSON-like value with each secret-named entry's value as a :class:`Secret`."""
    if isinstance(value, Mapping):
        return {
            str(key): Secret(_canonical_json(item)) if is_secret_key(key) else hide_secrets(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [hide_secrets(item) for item in value]
    return value


def request_identity(url: str, headers: Mapping[str, Any]) -> dict[str, Any]:
    """The request-shaping part of an HTTP provider: the full URL (its password and secret query
    values as :class:`Secret`) and every header by lower-cased name (secret-looking ones as Secret)."""
    parts = urlsplit(url)
    query = [
        (name, Secret(value) if is_secret_key(name) else value) for name, value in parse_qsl(parts.query)
    ]
    public = [(name, value) for name, value in query if not isinstance(value, Secret)]
    host = parts.netloc.rsplit("@", 1)[-1]
    identity: dict[str, Any] = {
        "url": f"{parts.scheme}://{host}{parts.path}" + (f"?{urlencode(public)}" if public else ""),
        "headers": {
            str(name).lower(): Secret(str(value)) if is_secret_key(name) else str(value)
            for name, value in sorted(headers.items(), key=lambda item: str(item[0]).lower())
        },
    }
    secret_query = {name: value for name, value in query if isinstance(value, Secret)}
    if secret_query:
        identity["secret_query"] = secret_query
    if "@" in parts.netloc:
        identity["url_credentials"] = Secret(parts.netloc.rsplit("@", 1)[0])
    return identity


def caches_answers(config: Mapping[str, Any], *, by_default: bool) -> bool:
    """Whether a provider's answers may be cached: as ``config.cache`` says when it is set; else, for a
    family cached ``by_default`` (the API families), unless it samples (a temperature above 0)."""
    explicit = config.get("cache")
    if explicit is not None:
        return bool(explicit)
    if not by_default:
        return False
    try:
        return float(config.get("temperature") or 0) <= 0
    except (TypeError, ValueError):  # not a number: the provider's request reports it
        return True


def cache_identity(
    provider: object, spec: ProviderSpec, hash_key: bytes, request: Mapping[str, Any] | None = None
) -> str:
    """The canonical identity of a built provider for cache keys, each Secret as a keyed hash; with
    ``request``, one call's request as rendered too."""
    fields = (
        dict(provider.cache_identity())
        if isinstance(provider, CacheIdentified)
        else {"provider": spec.id, "config": hide_secrets(spec.config)}
    )
    if request:
        fields["request"] = request
    return _canonical_json(_hashed(fields, hash_key))


def _hashed(value: Any, hash_key: bytes) -> Any:
    if isinstance(value, Secret):
        digest = hmac.new(hash_key, value.value.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return {"hmac-sha256": digest.hexdigest()}
    if isinstance(value, Mapping):
        return {str(key): _hashed(item, hash_key) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_hashed(item, hash_key) for item in value]
    return value


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def load_hash_key(directory: Path | None) -> bytes:
    """The random key of the cache in ``directory`` (created on first use, readable by its owner only).
    Without a usable directory: a key for this process only (its cache entries match no other run)."""
    if directory is None:
        return random_source.token_bytes(32)
    path = directory / HASH_KEY_FILE
    try:
        return _read_or_create(path)
    except OSError:
        return random_source.token_bytes(32)


def _read_or_create(path: Path) -> bytes:
    try:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = random_source.token_bytes(32)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(key)
    try:
        os.link(temporary, path)  # the first process to create it wins; the others read its key
    except FileExistsError:
        return path.read_bytes()
    finally:
        temporary.unlink(missing_ok=True)
    return key
