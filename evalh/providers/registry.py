"""Provider ids -> lazy factories. Nothing here imports a provider module until one is built.

Each entry names an id (exact) or an id prefix (ending in ``:``), the ``module:function`` that builds it
from a :class:`~evalh.model.ProviderSpec`, and the capabilities it offers. ``evalh list providers`` and
``evalh validate`` read this table, so it must tell the truth about capabilities.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from difflib import get_close_matches
from functools import lru_cache

from evalh.errors import ConfigError, Where
from evalh.model import ProviderSpec
from evalh.providers.base import Provider
from evalh.providers.entries import PATH_PATTERN, ProviderEntry
from evalh.providers.families import Refusal, refusal_of
from evalh.providers.family_entries import PROMPTFOO_FAMILY_ENTRIES
from evalh.providers.identity import caches_answers
from evalh.providers.keys import (
    MissingKey,
    missing_anthropic_key,
    missing_aws_credentials,
    missing_azure_key,
    missing_google_key,
    missing_hf_token,
    missing_openai_key,
    missing_vertex_key,
)
from evalh.runtimes.callables import lookup
from evalh.runtimes.javascript_source import JS_FILE_SUFFIXES

__all__ = [
    "PROVIDERS",
    "ProviderEntry",
    "build_provider",
    "capabilities_of",
    "find_entry",
    "is_javascript_provider",
    "is_web_http",
    "may_cache",
    "missing_key",
    "unserved",
    "unserved_error",
]

_WEB_HTTP = "evalh.providers.webhttp:make_http"  # the generic http provider (http, https, a URL id)
_JAVASCRIPT = "evalh.providers.javascript:make_javascript"
PROVIDERS: tuple[ProviderEntry, ...] = (
    ProviderEntry(
        "echo",
        "evalh.providers.scripts:make_echo",
        ("text",),
        "returns the rendered prompt as the output",
        "echo",
    ),
    ProviderEntry(
        "exec:",
        "evalh.providers.scripts:make_exec",
        ("text",),
        "runs a command (no shell); argv[1] is the prompt, then options JSON, then context JSON "
        "(the last argument); stdout is the output",
        "exec:python3 my_app.py",
    ),
    ProviderEntry(
        "python:",
        "evalh.providers.scripts:make_python",
        ("text", "embedding"),
        "calls call_api / call_embedding_api (or the named function) in your Python file",
        "python:provider.py:call_api",
    ),
    ProviderEntry(
        "file://",
        "evalh.providers.scripts:make_python",
        ("text", "embedding"),
        "a Python provider file, as promptfoo's file://provider.py",
        "file://provider.py",
    ),
    # JavaScript providers: promptfoo's custom provider class in a file, run in the embedded engine
    ProviderEntry(
        "file://",
        _JAVASCRIPT,
        ("text", "embedding"),
        "a JavaScript provider file (.js .cjs; .mjs .ts .mts .cts as ES modules / TypeScript): a class with "
        "callApi (and callEmbeddingApi), run in the embedded engine without network",
        "file://provider.js",
        suffixes=JS_FILE_SUFFIXES,
    ),
    ProviderEntry(
        PATH_PATTERN,
        _JAVASCRIPT,
        ("text", "embedding"),
        "a JavaScript provider file named by its path, as promptfoo's ./provider.js",
        "./provider.js",
        suffixes=JS_FILE_SUFFIXES,
    ),
    ProviderEntry(
        "local",
        "evalh.providers.local:make_local",
        ("embedding", "tokens"),
        "the bundled all-MiniLM-L6-v2 int8 ONNX model (offline, the default embedder)",
        "local",
    ),
    ProviderEntry(
        "local:",
        "evalh.providers.local:make_local",
        ("embedding", "tokens"),
        "another sentence-transformers ONNX model (config: modelPath, tokenizerPath)",
        "local:my-model",
    ),
    ProviderEntry(
        "fake",
        "evalh.providers.fake:make_fake",
        ("embedding",),
        "deterministic hashed bag-of-words vectors, for tests and demos",
        "fake",
    ),
    ProviderEntry(
        "fake:",
        "evalh.providers.fake:make_fake",
        ("embedding",),
        "fake embeddings with a dimension, e.g. fake:64",
        "fake:64",
    ),
    ProviderEntry(
        "openai:embedding:",
        "evalh.providers.openai:make_embedding",
        ("embedding",),
        "any OpenAI-compatible /v1/embeddings endpoint",
        "openai:embedding:text-embedding-3-small",
        key_check=missing_openai_key,
    ),
    ProviderEntry(
        "openai:embeddings:",
        "evalh.providers.openai:make_embedding",
        ("embedding",),
        "alias of openai:embedding:",
        "openai:embeddings:text-embedding-3-small",
        key_check=missing_openai_key,
    ),
    ProviderEntry(
        "openai:chat:",
        "evalh.providers.openai:make_chat",
        ("text",),
        "any OpenAI-compatible /v1/chat/completions endpoint",
        "openai:chat:gpt-4o-mini",
        key_check=missing_openai_key,
        caching="default",
    ),
    ProviderEntry(
        "openai:",
        "evalh.providers.openai:make_chat",
        ("text",),
        "short for openai:chat:<model>",
        "openai:gpt-4o-mini",
        key_check=missing_openai_key,
        caching="default",
    ),
    ProviderEntry(
        "azureopenai:embedding:",
        "evalh.providers.azure:make_embedding",
        ("embedding",),
        "an Azure OpenAI embedding deployment (config.apiHost)",
        "azureopenai:embedding:my-ada",
        key_check=missing_azure_key,
    ),
    ProviderEntry(
        "azureopenai:embeddings:",
        "evalh.providers.azure:make_embedding",
        ("embedding",),
        "alias of azureopenai:embedding:",
        "azureopenai:embeddings:my-ada",
        key_check=missing_azure_key,
    ),
    ProviderEntry(
        "azureopenai:chat:",
        "evalh.providers.azure:make_chat",
        ("text",),
        "an Azure OpenAI chat deployment (config.apiHost)",
        "azureopenai:chat:my-gpt4o",
        key_check=missing_azure_key,
        caching="default",
    ),
    ProviderEntry(
        "anthropic:messages:",
        "evalh.providers.anthropic:make_messages",
        ("text",),
        "Anthropic's Messages API",
        "anthropic:messages:claude-sonnet-4-5",
        key_check=missing_anthropic_key,
        caching="default",
    ),
    *PROMPTFOO_FAMILY_ENTRIES,
    ProviderEntry(
        "ollama:embeddings:",
        "evalh.providers.ollama:make_embedding",
        ("embedding",),
        "Ollama's native /api/embed",
        "ollama:embeddings:nomic-embed-text",
    ),
    ProviderEntry(
        "ollama:embedding:",
        "evalh.providers.ollama:make_embedding",
        ("embedding",),
        "alias of ollama:embeddings:",
        "ollama:embedding:nomic-embed-text",
    ),
    ProviderEntry(
        "ollama:chat:",
        "evalh.providers.ollama:make_chat",
        ("text",),
        "Ollama's native /api/chat",
        "ollama:chat:llama3.2",
        caching="default",
    ),
    ProviderEntry(
        "huggingface:feature-extraction:",
        "evalh.providers.huggingface:make_feature_extraction",
        ("embedding",),
        "Hugging Face Inference API feature extraction (HF_TOKEN)",
        "huggingface:feature-extraction:sentence-transformers/all-MiniLM-L6-v2",
        key_check=missing_hf_token,
    ),
    ProviderEntry(
        "huggingface:sentence-similarity:",
        "evalh.providers.huggingface:make_sentence_similarity",
        ("similarity",),
        "Hugging Face Inference API sentence similarity (cosine only)",
        "huggingface:sentence-similarity:sentence-transformers/all-MiniLM-L6-v2",
        key_check=missing_hf_token,
    ),
    ProviderEntry(
        "hf:feature-extraction:",
        "evalh.providers.huggingface:make_feature_extraction",
        ("embedding",),
        "alias of huggingface:feature-extraction:",
        "hf:feature-extraction:BAAI/bge-small-en-v1.5",
        key_check=missing_hf_token,
    ),
    ProviderEntry(
        "hf:sentence-similarity:",
        "evalh.providers.huggingface:make_sentence_similarity",
        ("similarity",),
        "alias of huggingface:sentence-similarity:",
        "hf:sentence-similarity:sentence-transformers/all-MiniLM-L6-v2",
        key_check=missing_hf_token,
    ),
    # Google Gemini (AI Studio, Vertex AI express mode) and AWS Bedrock: providers/google.py, bedrock.py
    ProviderEntry(
        "google:embedding:",
        "evalh.providers.google:make_embedding",
        ("embedding",),
        "Gemini embeddings (batchEmbedContents; GOOGLE_API_KEY or GEMINI_API_KEY)",
        "google:embedding:gemini-embedding-001",
        key_check=missing_google_key,
    ),
    ProviderEntry(
        "google:embeddings:",
        "evalh.providers.google:make_embedding",
        ("embedding",),
        "alias of google:embedding:",
        "google:embeddings:gemini-embedding-001",
        key_check=missing_google_key,
    ),
    ProviderEntry(
        "google:",
        "evalh.providers.google:make_chat",
        ("text",),
        "Gemini through Google AI Studio's generateContent (GOOGLE_API_KEY or GEMINI_API_KEY)",
        "google:gemini-2.5-flash",
        key_check=missing_google_key,
        caching="default",
    ),
    ProviderEntry(
        "palm:",
        "evalh.providers.google:make_chat",
        ("text",),
        "alias of google: (promptfoo's old name)",
        "palm:gemini-2.5-flash",
        key_check=missing_google_key,
        caching="default",
    ),
    ProviderEntry(
        "vertex:",
        "evalh.providers.google:make_vertex",
        ("text",),
        "Gemini on Vertex AI in express mode (an API key: VERTEX_API_KEY or GOOGLE_API_KEY; no ADC)",
        "vertex:gemini-2.5-flash",
        key_check=missing_vertex_key,
        caching="default",
    ),
    ProviderEntry(
        "bedrock:embeddings:",
        "evalh.providers.bedrock:make_embedding",
        ("embedding",),
        "AWS Bedrock embeddings (Titan, Cohere) through InvokeModel, SigV4-signed (evalh[bedrock])",
        "bedrock:embeddings:amazon.titan-embed-text-v2:0",
        key_check=missing_aws_credentials,
    ),
    ProviderEntry(
        "bedrock:embedding:",
        "evalh.providers.bedrock:make_embedding",
        ("embedding",),
        "alias of bedrock:embeddings:",
        "bedrock:embedding:amazon.titan-embed-text-v2:0",
        key_check=missing_aws_credentials,
    ),
    ProviderEntry(
        "bedrock:",
        "evalh.providers.bedrock:make_converse",
        ("text",),
        "AWS Bedrock's Converse API for any text model (bedrock:converse:<id> too); SigV4 (evalh[bedrock]) "
        "or a Bedrock API key",
        "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        key_check=missing_aws_credentials,
        caching="default",
    ),
    ProviderEntry(
        "promptfoo:simulated-user",
        "evalh.providers.simulated_user:make_simulated_user",
        ("text",),
        "a model plays the user against the provider under test for up to maxTurns turns; on a test's "
        "or defaultTest's provider: (config: instructions, maxTurns, initialMessages, userProvider)",
        "promptfoo:simulated-user",
    ),
    ProviderEntry(
        "http",
        _WEB_HTTP,
        ("text",),
        "your own HTTP endpoint (config: url, method, headers, body with {{prompt}}, responsePath)",
        "http",
        caching="opt-in",
    ),
    ProviderEntry("https", _WEB_HTTP, ("text",), "alias of http", "https", caching="opt-in"),
    ProviderEntry(
        "http://",
        _WEB_HTTP,
        ("text",),
        "your own HTTP endpoint at this URL",
        "http://localhost:8000/chat",
        caching="opt-in",
    ),
    ProviderEntry(
        "https://",
        _WEB_HTTP,
        ("text",),
        "your own HTTPS endpoint at this URL",
        "https://example.com/chat",
        caching="opt-in",
    ),
)


# A Python callable passed to evalh.evaluate: its id is the callable's name, known during its run only.
CALLABLE_ENTRY = ProviderEntry(
    "<a Python callable>",
    "evalh.providers.scripts:make_callable",
    ("text",),
    "a Python function passed to evalh.evaluate in a mapping config (providers: [my_function])",
    "providers: [my_function]",
)


def find_entry(provider_id: str) -> ProviderEntry | None:
    """The entry for an id: a callable passed to evalh.evaluate, else the most specific entry (exact ids
    and longer prefixes win)."""
    if lookup(provider_id) is not None:
        return CALLABLE_ENTRY
    return _find_static(provider_id)


@lru_cache(maxsize=1024)
def _find_static(provider_id: str) -> ProviderEntry | None:
    exact = [entry for entry in PROVIDERS if entry.pattern == provider_id and not entry.pattern.endswith(":")]
    if exact:
        return exact[0]
    # an id that stops where a more specific family begins ("openai:embedding", "openai:embedding:")
    # lacks its model: it is unknown, not a chat model named "embedding"
    if any(e.pattern.endswith(":") and e.pattern in (provider_id, provider_id + ":") for e in PROVIDERS):
        return None
    candidates = [entry for entry in PROVIDERS if entry.matches(provider_id)]
    if not candidates:
        return None
    best = max(candidates, key=lambda entry: entry.specificity)
    refused = refusal_of(provider_id)
    # a refused sub-form is more specific than its family's entry: groq:responses:<model> is not a
    # Groq chat model named "responses:<model>"
    if refused is not None and best.is_prefix and len(refused.prefix) > len(best.pattern):
        return None
    return best


def unserved(provider_id: str) -> Refusal | None:
    """Why evalh does not serve an id promptfoo documents (and what to use instead); None when evalh
    serves it or promptfoo does not know it either."""
    return refusal_of(provider_id) if find_entry(provider_id) is None else None


def unserved_error(refusal: Refusal, provider_id: str, where: Where | None) -> ConfigError:
    """The located error for an id evalh does not serve."""
    return ConfigError(
        f"evalh cannot serve provider {provider_id!r}: {refusal.why}",
        where=where,
        hint=f"Instead, use {refusal.instead} (`evalh list providers` shows what evalh serves)",
    )


def may_cache(spec: ProviderSpec) -> bool:
    """Whether a provider under test may answer from the completion cache, told from its id and config
    alone (as its built ``cacheable`` would say): never for scripts and echo; with ``config.cache: true``
    only for the http provider; for the API families unless ``config.cache`` is false or they sample
    (a temperature above 0) without ``cache: true``."""
    entry = find_entry(spec.id)
    caching = entry.caching if entry is not None else "never"
    return caching != "never" and caches_answers(spec.config, by_default=caching == "default")


def is_web_http(provider_id: str) -> bool:
    """The id names the generic ``http`` provider (``http``, ``https`` or a URL), whose config
    templates (url, body, queryParams, headers) are rendered for each call."""
    entry = find_entry(provider_id)
    return entry is not None and entry.target == _WEB_HTTP


def is_javascript_provider(provider_id: str) -> bool:
    """The id names a JavaScript provider file (``file://x.js``, ``./x.ts``), whose module is checked at
    load (found, no refused ``require``, no syntax error)."""
    entry = find_entry(provider_id)
    return entry is not None and entry.target == _JAVASCRIPT


@lru_cache(maxsize=256)  # PROVIDERS is fixed; the embedding assertions ask on every row
def capabilities_of(provider_id: str) -> tuple[str, ...]:
    entry = find_entry(provider_id)
    return entry.capabilities if entry else ()


def build_provider(spec: ProviderSpec) -> Provider:
    """Import the provider's module and build it. Raises ConfigError for an unknown id."""
    entry = find_entry(spec.id)
    refused = unserved(spec.id) if entry is None else None
    if refused is not None:
        raise unserved_error(refused, spec.id, spec.path or None)
    if entry is None:
        known = [e.example for e in PROVIDERS]
        close = get_close_matches(spec.id, known, n=1)
        hint = (
            f"Did you mean {close[0]!r}?" if close else "Run `evalh list providers` for the ids evalh knows."
        )
        raise ConfigError(f"unknown provider id {spec.id!r}", where=spec.path or None, hint=hint)
    module_name, _, function_name = entry.target.partition(":")
    factory: Callable[[ProviderSpec], Provider] = getattr(importlib.import_module(module_name), function_name)
    return factory(spec)


def missing_key(spec: ProviderSpec) -> MissingKey | None:
    """The API key ``spec`` needs and cannot find (in its config, ``apiKeyEnvar`` or the environment as
    it is now), by its family's rule; None when it has one or needs none (local, echo, exec:, python,
    ollama, http, an unknown id)."""
    entry = find_entry(spec.id)
    return entry.key_check(spec) if entry is not None and entry.key_check is not None else None
