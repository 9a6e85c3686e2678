"""The shared HTTP layer against a real loopback server: retries, waits, timeouts, redaction."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from evalh.errors import ConfigError, ProviderHTTPError
from evalh.model import ProviderSpec
from evalh.providers.http import HttpClient, HttpReply, HttpSettings
from evalh.providers.http.replies import requested_wait_s
from tests.loopback import LoopbackServer, Reply, Request

SECRET = "sk-test-0123456789abcdef"


def client(server: LoopbackServer, **overrides: Any) -> HttpClient:
    settings: dict[str, Any] = {
        "provider_id": "openai:chat:test",
        "base_url": server.url + "/v1",
        "headers": {"Authorization": f"Bearer {SECRET}"},
        "secrets": (SECRET,),
        "retry_base_delay_s": 0.01,
        "timeout_s": 5.0,
    }
    settings.update(overrides)
    return HttpClient(**settings)


def run(http: HttpClient, call: Callable[[HttpClient], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        try:
            return await call(http)
        finally:
            await http.aclose()

    return asyncio.run(go())


def post(http: HttpClient, body: Any = None) -> HttpReply:
    reply: HttpReply = run(http, lambda h: h.post_json("chat/completions", body or {"x": 1}))
    return reply


def post_error(http: HttpClient) -> ProviderHTTPError:
    with pytest.raises(ProviderHTTPError) as caught:
        post(http)
    return caught.value


def test_success_returns_json_headers_and_sends_body(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", "/v1/chat/completions", lambda r: Reply.json({"echo": r.json}, headers={"X-A": "1"})
    )
    reply = post(client(loopback), {"hello": "world"})
    assert reply.status == 200
    assert reply.json == {"echo": {"hello": "world"}}
    assert reply.headers["x-a"] == "1"
    assert reply.attempts == 1
    assert reply.latency_ms > 0
    request = loopback.requests[0]
    assert request.header("Authorization") == f"Bearer {SECRET}"
    assert request.header("Content-Type") == "application/json"


def test_non_json_body_gives_text(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", lambda r: Reply(body=b"plain words"))
    reply = post(client(loopback))
    assert reply.json is None
    assert reply.text == "plain words"


def test_absolute_url_and_get(loopback: LoopbackServer) -> None:
    loopback.route("GET", "/api/tags", lambda r: Reply.json({"models": []}))
    http = client(loopback, base_url="http://unused.invalid")
    reply: HttpReply = run(http, lambda h: h.get_json(loopback.url + "/api/tags"))
    assert reply.json == {"models": []}


def test_429_with_retry_after_is_honoured(loopback: LoopbackServer, caplog: pytest.LogCaptureFixture) -> None:
    loopback.script(
        "POST",
        "/v1/chat/completions",
        [
            Reply.json({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "0.3"}),
            Reply.json({"ok": True}),
        ],
    )
    caplog.set_level(logging.INFO, logger="evalh")
    reply = post(client(loopback))
    assert reply.json == {"ok": True}
    assert reply.attempts == 2
    assert len(loopback.requests) == 2
    assert "attempt 1 failed (HTTP 429" in caplog.text and "retrying in 0.30 s" in caplog.text


def test_500s_back_off_then_succeed(loopback: LoopbackServer) -> None:
    loopback.script(
        "POST",
        "/v1/chat/completions",
        [
            Reply.json({"error": "boom"}, status=500),
            Reply.json({"error": "boom"}, status=503),
            Reply.json({"ok": 1}),
        ],
    )
    reply = post(client(loopback))
    assert reply.attempts == 3
    assert reply.json == {"ok": 1}


def test_500s_exhaust_retries_with_server_message_and_no_key(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST",
        "/v1/chat/completions",
        lambda r: Reply.json({"error": {"message": f"internal failure for key {SECRET}"}}, status=500),
    )
    error = post_error(client(loopback, max_retries=2))
    assert error.status == 500
    assert error.attempts == 3
    assert len(loopback.requests) == 3
    assert "internal failure for key [REDACTED]" in str(error)
    assert "after 3 attempts" in str(error)
    assert str(error).startswith("openai:chat:test: HTTP 500")
    assert SECRET not in str(error)


def test_4xx_fails_at_once_with_server_message(loopback: LoopbackServer) -> None:
    loopback.route(
        "POST",
        "/v1/chat/completions",
        lambda r: Reply.json({"error": {"message": f"Incorrect API key provided: {SECRET}"}}, status=401),
    )
    error = post_error(client(loopback))
    assert error.status == 401
    assert error.attempts == 1
    assert len(loopback.requests) == 1
    assert "Incorrect API key provided: [REDACTED]" in str(error)
    assert SECRET not in str(error)


def test_4xx_after_a_retried_500_counts_attempts(loopback: LoopbackServer) -> None:
    loopback.script(
        "POST",
        "/v1/chat/completions",
        [Reply.json({}, status=502), Reply.json({"detail": "model not found"}, status=404)],
    )
    error = post_error(client(loopback))
    assert (error.status, error.attempts) == (404, 2)
    assert "model not found" in str(error)


def test_timeout_is_retried_then_reported(loopback: LoopbackServer) -> None:
    release, answered = threading.Event(), []

    def held(request: Request) -> Reply:
        release.wait(10)
        answered.append(request)
        return Reply.json({"ok": 1})

    loopback.route("POST", "/v1/chat/completions", held)
    error = post_error(client(loopback, timeout_s=0.2, max_retries=1))
    assert answered == []  # both attempts gave up while the server still held them
    release.set()
    assert "timed out after 0.2 s" in str(error)
    assert error.attempts == 2
    assert error.status is None


def test_per_call_timeout_overrides_client_default(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", lambda r: Reply.json({"ok": 1}, delay_s=0.5))
    http = client(loopback, timeout_s=0.1, max_retries=0)
    reply: HttpReply = run(http, lambda h: h.post_json("chat/completions", {}, timeout_s=3.0))
    assert reply.json == {"ok": 1}


def test_connection_refused_is_retried_and_reported() -> None:
    http = HttpClient(provider_id="p", base_url="http://127.0.0.1:9", max_retries=1, retry_base_delay_s=0.01)
    with pytest.raises(ProviderHTTPError) as caught:
        run(http, lambda h: h.post_json("x", {}))
    assert caught.value.attempts == 2
    assert "POST http://127.0.0.1:9/x failed" in str(caught.value)


def test_total_wait_cap_stops_a_long_retry_after(
    loopback: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    loopback.route(
        "POST", "/v1/chat/completions", lambda r: Reply.json({}, status=429, headers={"Retry-After": "30"})
    )
    caplog.set_level(logging.INFO, logger="evalh")
    error = post_error(client(loopback, max_total_wait_s=1.0))
    assert error.status == 429
    assert error.attempts == 1
    assert "retrying" not in caplog.text  # no wait was even started


def test_requested_wait_from_headers() -> None:
    assert requested_wait_s(httpx.Headers({"Retry-After": "7"})) == 7.0
    assert requested_wait_s(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    future = email.utils.formatdate(time.time() + 20, usegmt=True)
    wait = requested_wait_s(httpx.Headers({"Retry-After": future}))
    assert wait is not None and 18.0 <= wait <= 21.0
    headers = httpx.Headers({"x-ratelimit-reset-requests": "1m30s", "x-ratelimit-reset-tokens": "20ms"})
    assert requested_wait_s(headers) == 90.0
    epoch = httpx.Headers({"X-RateLimit-Reset": str(int(time.time()) + 10)})
    wait = requested_wait_s(epoch)
    assert wait is not None and 9.0 <= wait <= 11.5
    assert requested_wait_s(httpx.Headers({"Content-Type": "x"})) is None


def test_rate_limit_reset_header_drives_the_wait(
    loopback: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    loopback.script(
        "POST",
        "/v1/chat/completions",
        [Reply.json({}, status=429, headers={"x-ratelimit-reset-requests": "250ms"}), Reply.json({"ok": 2})],
    )
    caplog.set_level(logging.INFO, logger="evalh")
    reply = post(client(loopback))
    assert "retrying in 0.25 s" in caplog.text
    assert reply.attempts == 2


def test_settings_from_config() -> None:
    settings = HttpSettings.from_config({"timeoutMs": 1500, "maxRetries": 1, "maxConcurrency": 2})
    assert (settings.timeout_s, settings.max_retries) == (1.5, 1)
    assert HttpSettings.from_config({"timeout": 3}).timeout_s == 3.0
    assert HttpSettings.from_config({}).max_retries == 4


def test_many_concurrent_requests_spread_over_small_pools(loopback: LoopbackServer) -> None:
    # Every request waits at the barrier until all 20 are in flight: one after another would break it.
    together = threading.Barrier(20, timeout=20)

    def answer(request: Request) -> Reply:
        together.wait()
        return Reply.json({"i": request.json["i"]})

    loopback.route("POST", "/v1/chat/completions", answer)
    http = client(loopback)  # retries: a loaded machine may reset a connection before the server accepts it
    shards: list[int] = []

    async def many(h: HttpClient) -> list[HttpReply]:
        replies = await asyncio.gather(*(h.post_json("chat/completions", {"i": i}) for i in range(20)))
        shards.append(len(h._shards))
        return list(replies)

    replies = run(http, many)
    assert [reply.json["i"] for reply in replies] == list(range(20))
    assert shards == [3]  # 20 in flight at once: pools of at most 8 connections
    assert not together.broken


def test_settings_reject_a_non_numeric_value() -> None:
    with pytest.raises(ConfigError, match=r"providers\[0\].config.timeout: config.timeout must be"):
        HttpSettings.from_config({"timeout": "soon"}, where="providers[0]")
    with pytest.raises(ConfigError, match="maxRetries"):
        HttpSettings.from_config({"maxRetries": -1})


def test_a_key_in_the_url_or_cut_by_the_message_length_never_shows(loopback: LoopbackServer) -> None:
    # The server's text is cut to 500 characters after redaction: a cut never leaves half a key.
    padding = "x" * 490
    loopback.route("POST", "/v1/chat/completions", lambda r: Reply.json({"error": padding + SECRET}, 400))
    host = loopback.url.removeprefix("http://")
    http = client(loopback, base_url=f"http://user:{SECRET}@{host}/v1")
    with pytest.raises(ProviderHTTPError) as caught:
        run(http, lambda h: h.post_json(f"chat/completions?key={SECRET}", {"x": 1}))
    message = str(caught.value)
    assert SECRET[:6] not in message and "user" not in message and "key=" not in message
    assert f"HTTP 400 from POST {loopback.url}/v1/chat/completions: {padding}[REDACTED]" in message
    loopback.route("POST", "/v1/slow", lambda r: Reply.json({}, delay_s=0.5))
    http = client(loopback, timeout_s=0.1, max_retries=0)
    with pytest.raises(ProviderHTTPError, match=r"/v1/slow timed out") as caught:
        run(http, lambda h: h.post_json(f"slow?token={SECRET}", {"x": 1}))
    assert SECRET[:6] not in str(caught.value)


def test_for_spec_reads_settings_headers_and_secrets_from_the_config(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/echo", lambda r: Reply.json({"error": r.header("X-Api-Key")}, status=403))
    config = {"timeout": 2, "maxRetries": 1, "headers": {"X-Api-Key": "proxy-key-42", "X-Team": "evals"}}
    spec = ProviderSpec(id="openai:chat:m", config=config, path="providers[1]")
    http = HttpClient.for_spec(spec, base_url=loopback.url + "/v1", headers={"X-Team": "x", "X-B": "b"})
    assert (http.timeout_s, http.max_retries, http.provider_id) == (2.0, 1, "openai:chat:m")
    assert http.headers == {"X-Team": "evals", "X-B": "b", "X-Api-Key": "proxy-key-42"}
    with pytest.raises(ProviderHTTPError) as caught:
        run(http, lambda h: h.post_json("echo", {}))
    assert loopback.requests[-1].header("X-Api-Key") == "proxy-key-42"
    assert "proxy-key-42" not in str(caught.value) and "[REDACTED]" in str(caught.value)
    bad = ProviderSpec(id="openai:embedding:m", config={"timeoutMs": "soon"}, path="providers[2]")
    with pytest.raises(ConfigError, match=r"^providers\[2\]\.config\.timeoutMs: "):
        HttpClient.for_spec(bad, base_url=loopback.url)


_PROXY_NAMES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def _no_proxy_client(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> HttpClient:
    """A client of ``loopback`` (which answers /v1/embeddings) in an environment without proxies."""
    for name in _PROXY_NAMES:
        monkeypatch.delenv(name, raising=False)
    loopback.route("POST", "/v1/embeddings", lambda request: Reply.json({"ok": True}))
    return client(loopback, max_retries=0)


def _trusted_cas(shard: httpx.AsyncClient) -> int:
    context = shard._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    return int(context.cert_store_stats()["x509_ca"])


def test_a_plain_http_provider_loads_no_ca_bundle(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = _no_proxy_client(loopback, monkeypatch)
    seen: list[int] = []

    async def call(h: HttpClient) -> HttpReply:
        reply = await h.post_json("embeddings", {"input": "x"})
        seen.extend(_trusted_cas(shard) for shard in h._shards)
        return reply

    assert run(http, call).json == {"ok": True}
    assert http._ssl_context is None  # the CA bundle was never read
    assert seen == [0]  # a TLS connection through this pool would be refused, never unverified


def test_a_tls_request_uses_the_verified_context(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = _no_proxy_client(loopback, monkeypatch)
    https_url = loopback.url.replace("http://", "https://") + "/v1/embeddings"
    seen: list[int] = []

    async def calls(h: HttpClient) -> None:
        await h.post_json("embeddings", {"input": "x"})  # a plain pool first: it must not be reused
        with pytest.raises(ProviderHTTPError):  # the loopback speaks no TLS
            await h.post_json(https_url, {"input": "x"})
        seen.extend(_trusted_cas(shard) for shard in h._shards)

    run(http, calls)
    assert http._ssl_context is not None
    assert len(seen) == 2 and seen[0] == 0 and seen[1] > 0


def test_a_proxied_plain_request_uses_the_verified_context(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = _no_proxy_client(loopback, monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", loopback.url)  # a proxy may speak TLS: its pool trusts the CA bundle
    seen: list[int] = []

    async def call(h: HttpClient) -> None:
        with contextlib.suppress(ProviderHTTPError):  # whatever the loopback makes of a proxy request
            await h.post_json("embeddings", {"input": "x"})
        seen.extend(_trusted_cas(shard) for shard in h._shards)

    run(http, call)
    assert len(seen) == 1 and seen[0] > 0
