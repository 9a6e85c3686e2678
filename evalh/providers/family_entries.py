"""Registry rows for promptfoo's named families: the OpenAI-compatible APIs (:mod:`evalh.providers.families`),
Anthropic's and Azure's other spellings, Cohere, Replicate and OpenAI's Responses API."""

from __future__ import annotations

from collections.abc import Callable

from evalh.model import ProviderSpec
from evalh.providers.entries import ProviderEntry
from evalh.providers.families import FAMILIES, Family
from evalh.providers.keys import (
    MissingKey,
    missing_anthropic_key,
    missing_azure_key,
    missing_cohere_key,
    missing_family_key,
    missing_openai_key,
    missing_replicate_key,
)

__all__ = ["PROMPTFOO_FAMILY_ENTRIES"]


def _family_entries(family: Family) -> tuple[ProviderEntry, ...]:
    """``<prefix>:<model>`` (and ``<prefix>:chat:<model>``) for chat, ``<prefix>:embedding(s):<model>``
    where the family has an embeddings endpoint, for each spelling promptfoo accepts."""
    key = "no key (a server you run)" if not family.needs_key else " or ".join(family.key_envars)
    entries = []
    for prefix in family.prefixes:
        described = f"{family.name}'s OpenAI-compatible chat API ({family.base_url}; {key})"
        entries.append(
            ProviderEntry(
                f"{prefix}:",
                "evalh.providers.openai:make_family_chat",
                ("text",),
                described if prefix == family.prefix else f"alias of {family.prefix}:",
                f"{prefix}:<model>",
                key_check=missing_family_key,
                caching="default",
            )
        )
        if family.embeddings:
            target = "evalh.providers.openai:make_family_embedding"
            described = f"{family.name}'s /embeddings"
            entries.extend(_embedding_forms(prefix, target, described, "<model>", missing_family_key))
        if family.default_embedding_model:  # promptfoo's mistral:embedding, its default model
            described = f"{family.name}'s /embeddings with {family.default_embedding_model}"
            entries.extend(
                ProviderEntry(
                    f"{prefix}:{form}",
                    target,
                    ("embedding",),
                    described,
                    f"{prefix}:{form}",
                    key_check=missing_family_key,
                )
                for form in ("embedding", "embeddings")
            )
    return tuple(entries)


def _embedding_forms(
    prefix: str,
    target: str,
    description: str,
    model: str,
    key_check: Callable[[ProviderSpec], MissingKey | None],
) -> tuple[ProviderEntry, ...]:
    """``<prefix>:embedding:`` and ``<prefix>:embeddings:``: promptfoo spells it both ways."""
    return tuple(
        ProviderEntry(
            f"{prefix}:{form}:",
            target,
            ("embedding",),
            description,
            f"{prefix}:{form}:{model}",
            key_check=key_check,
        )
        for form in ("embedding", "embeddings")
    )


PROMPTFOO_FAMILY_ENTRIES: tuple[ProviderEntry, ...] = (
    *(entry for family in FAMILIES for entry in _family_entries(family)),
    ProviderEntry(
        "openai:responses:",
        "evalh.providers.openai_responses:make_responses",
        ("text",),
        "OpenAI's Responses API (/responses; OPENAI_API_KEY)",
        "openai:responses:gpt-4.1-mini",
        key_check=missing_openai_key,
        caching="default",
    ),
    ProviderEntry(
        "anthropic:",
        "evalh.providers.anthropic:make_messages",
        ("text",),
        "short for anthropic:messages:<model>, as promptfoo's anthropic:claude-...",
        "anthropic:claude-sonnet-4-5",
        key_check=missing_anthropic_key,
        caching="default",
    ),
    ProviderEntry(
        "azure:chat:",
        "evalh.providers.azure:make_chat",
        ("text",),
        "alias of azureopenai:chat:",
        "azure:chat:my-gpt4o",
        key_check=missing_azure_key,
        caching="default",
    ),
    *_embedding_forms(
        "azure",
        "evalh.providers.azure:make_embedding",
        "alias of azureopenai:embedding:",
        "my-ada",
        missing_azure_key,
    ),
    ProviderEntry(
        "cohere:",
        "evalh.providers.cohere:make_chat",
        ("text",),
        "Cohere's chat API (v1 /chat, as promptfoo; COHERE_API_KEY)",
        "cohere:command-r-plus",
        key_check=missing_cohere_key,
        caching="default",
    ),
    ProviderEntry(
        "cohere:chat:",
        "evalh.providers.cohere:make_chat",
        ("text",),
        "alias of cohere:<model>",
        "cohere:chat:command-r",
        key_check=missing_cohere_key,
        caching="default",
    ),
    *_embedding_forms(
        "cohere",
        "evalh.providers.cohere:make_embedding",
        "Cohere's /embed (COHERE_API_KEY)",
        "embed-english-v3.0",
        missing_cohere_key,
    ),
    ProviderEntry(
        "replicate:",
        "evalh.providers.replicate:make_replicate",
        ("text",),
        "a Replicate model through its predictions API (REPLICATE_API_TOKEN); :version pins one",
        "replicate:meta/meta-llama-3-8b-instruct",
        key_check=missing_replicate_key,
        caching="default",
    ),
)
