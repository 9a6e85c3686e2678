"""Redirects: followed within one origin, refused across origins so credentials stay with their server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pytest

from evalh.model import ProviderSpec
from evalh.providers.registry import build_provider
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET

CHAT = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}


@pytest.fixture
def other() -> Iterator[LoopbackServer]:
    """A second server on another port: another origin."""
    with contextlib.closing(LoopbackServer()) as server:
        yield server


def complete(provider_id: str, config: dict[str, object]) -> object:
    spec = ProviderSpec(id=provider_id, config={"maxRetries": 0, **config})
    provider = build_provider(spec)

    async def go() -> object:
        try:
            return await provider.complete("Q", None)
        finally:
            await provider.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("provider_id", "path", "config"),
    [
        ("openai:chat:m", "/v1/chat/completions", {"headers": {"X-Env-Auth": "custom-auth-1"}}),
        ("azureopenai:chat:d", "/openai/deployments/d/chat/completions", {}),
        ("anthropic:messages:m", "/v1/messages", {}),
    ],
)
def test_a_cross_origin_redirect_is_refused_and_the_other_server_gets_nothing(
    loopback: LoopbackServer, other: LoopbackServer, provider_id: str, path: str, config: dict[str, object]
) -> None:
    loopback.route("POST", path, lambda r: Reply(status=307, headers={"Location": other.url + "/steal"}))
    other.route("POST", "/steal", lambda r: Reply.json(CHAT))
    base = loopback.url + ("/v1" if provider_id.startswith("openai") else "")
    response = complete(provider_id, {"apiBaseUrl": base, "apiKey": SECRET, **config})
    assert other.requests == []  # neither the key header nor anything else reached the other origin
    error = getattr(response, "error", None)
    assert error is not None and "redirected (HTTP 307) to another origin" in error
    assert other.url.removeprefix("http://") in error and "final URL" in error
    assert SECRET not in error


def test_a_same_origin_redirect_is_followed_with_its_headers(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", "/v1/chat/completions", lambda r: Reply(status=307, headers={"Location": "/v2/chat"})
    )
    loopback.route("POST", "/v2/chat", lambda r: Reply.json(CHAT))
    response = complete("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET})
    assert getattr(response, "output", None) == "hi"
    assert [r.path for r in loopback.requests] == ["/v1/chat/completions", "/v2/chat"]
    assert loopback.requests[1].header("Authorization") == f"Bearer {SECRET}"


def test_a_redirect_loop_stops(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST",
        "/v1/chat/completions",
        lambda r: Reply(status=307, headers={"Location": "/v1/chat/completions"}),
    )
    response = complete("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET})
    error = getattr(response, "error", None)
    assert error is not None and "redirected more than 10 times" in error
    assert len(loopback.requests) == 11
