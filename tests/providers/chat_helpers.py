"""Helpers shared by the chat provider tests: build a provider, call it once, close it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.model import ProviderResponse, ProviderSpec
from evalh.providers.base import CallContext
from evalh.providers.registry import build_provider

__all__ = ["FAST", "SECRET", "complete_once"]

SECRET = "sk-chat-test-9f8e7d6c5b4a"
FAST = {"retryBaseDelayS": 0.01}


def complete_once(
    provider_id: str,
    config: Mapping[str, Any],
    prompt: str | Sequence[Mapping[str, Any]] = "Hello",
    context: CallContext | None = None,
) -> tuple[Any, ProviderResponse]:
    """Build the provider through the registry, answer ``prompt``, close it."""
    provider = build_provider(ProviderSpec(id=provider_id, config={**FAST, **config}))

    async def go() -> ProviderResponse:
        try:
            response: ProviderResponse = await provider.complete(prompt, context or CallContext())
            return response
        finally:
            await provider.aclose()

    return provider, asyncio.run(go())
